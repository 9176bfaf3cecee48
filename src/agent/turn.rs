//! One turn's model request: send, stream, assemble, and retry what is worth retrying.
//!
//! Events for the assistant message start only once the response shows progress (content,
//! a tool call or a finish reason), so a request that fails before that is retried without
//! the stream ever showing a half message. A transient failure after progress (a dropped
//! connection, a stall) ends the partial message with `stopReason: "error"` and its
//! `errorMessage`, and is retried too: the partial message is left out of the conversation,
//! its tool calls never run, and a fresh message streams.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use super::streaming::StreamingMessage;
use crate::control::RunControl;
use crate::events::{AssistantMessage, Emitter, Event, StopReason, Usage, now_millis};
use crate::extension::{Exchange, Extension};
use crate::llm::{
    Assembled, Assembler, Liveness, LlmError, Request, RequestDecorator, RetryPolicy, SseItem,
    SseStream, Transport, excerpt,
};

/// The most of an error response body kept for the message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

pub struct TurnContext<'a> {
    pub emitter: &'a Emitter,
    pub transport: &'a dyn Transport,
    pub decorators: &'a [Arc<dyn RequestDecorator>],
    pub extensions: &'a [Arc<dyn Extension>],
    pub retry: &'a RetryPolicy,
    pub idle_timeout: Duration,
    pub control: &'a RunControl,
    pub provider: &'a str,
    pub model: &'a str,
    pub dialect: crate::llm::Dialect,
    pub price: Option<crate::llm::pricing::Price>,
}

pub enum TurnEnd {
    Completed,
    Failed(LlmError),
    Aborted,
}

pub struct TurnOutcome {
    pub message: AssistantMessage,
    pub end: TurnEnd,
    /// Requests sent, retries and protocol resends included.
    pub requests: u32,
}

enum Attempt {
    Done(AssistantMessage),
    Aborted(AssistantMessage),
    /// Failed after the message had started: it has been ended with the error.
    FailedAfterProgress(AssistantMessage, LlmError),
    /// Failed before anything was shown; `body` is the error response, if there was one.
    FailedEarly(LlmError, Option<(u16, String)>),
}

pub async fn request_assistant(ctx: &TurnContext<'_>, body: &Value) -> TurnOutcome {
    let mut requests = 0;
    let mut retries = 0;
    let mut resent = false;
    loop {
        let request = prepare(ctx.decorators, body);
        requests += 1;
        let attempt = attempt(ctx, &request).await;
        // `shown`: a partial message that was streamed and ended with the error.
        let (error, rejected, shown) = match attempt {
            Attempt::Done(message) => {
                if retries > 0 {
                    ctx.emitter.emit(&Event::AutoRetryEnd {
                        success: true,
                        attempt: retries,
                        final_error: None,
                    });
                }
                return TurnOutcome {
                    message,
                    end: TurnEnd::Completed,
                    requests,
                };
            }
            Attempt::Aborted(message) => {
                return TurnOutcome {
                    message,
                    end: TurnEnd::Aborted,
                    requests,
                };
            }
            // Retried like any transient failure: the partial message has been ended with
            // `stopReason: "error"`, is left out of the conversation (its tool calls never
            // run), and the next attempt streams a fresh message.
            Attempt::FailedAfterProgress(message, error) => (error, None, Some(message)),
            Attempt::FailedEarly(error, rejected) => (error, rejected, None),
        };
        if let (Some((status, text)), false) = (&rejected, resent)
            && ctx
                .decorators
                .iter()
                .any(|d| d.resend_after_rejection(*status, text))
        {
            resent = true;
            continue;
        }
        if error.is_retryable() && retries < ctx.retry.max_retries && !ctx.control.is_aborted() {
            retries += 1;
            let delay = ctx.retry.delay(retries, error.retry_after());
            let message = error.to_string();
            ctx.emitter.emit(&Event::AutoRetryStart {
                attempt: retries,
                max_attempts: ctx.retry.max_retries,
                delay_ms: delay.as_millis() as u64,
                error_message: &message,
            });
            tokio::select! {
                _ = ctx.control.aborted() => {
                    let message = empty_message(ctx, StopReason::Aborted, None);
                    emit_whole(ctx.emitter, &message);
                    return TurnOutcome { message, end: TurnEnd::Aborted, requests };
                }
                _ = tokio::time::sleep(delay) => continue,
            }
        }
        if retries > 0 {
            let message = error.to_string();
            ctx.emitter.emit(&Event::AutoRetryEnd {
                success: false,
                attempt: retries,
                final_error: Some(&message),
            });
        }
        let end = if ctx.control.is_aborted() {
            TurnEnd::Aborted
        } else {
            TurnEnd::Failed(error.clone())
        };
        let message = match shown {
            // Already on the wire, ended with the error.
            Some(message) => message,
            None => {
                let stop = if matches!(end, TurnEnd::Aborted) {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                let message = empty_message(ctx, stop, Some(error.to_string()));
                emit_whole(ctx.emitter, &message);
                message
            }
        };
        return TurnOutcome {
            message,
            end,
            requests,
        };
    }
}

fn prepare(decorators: &[Arc<dyn RequestDecorator>], body: &Value) -> Request {
    let mut request = Request {
        body: body.clone(),
        headers: Vec::new(),
    };
    for decorator in decorators {
        decorator.decorate(&mut request.body, &mut request.headers);
    }
    if request.header("x-request-id").is_none() {
        request
            .headers
            .push(("x-request-id".to_string(), uuid::Uuid::new_v4().to_string()));
    }
    request
}

async fn attempt(ctx: &TurnContext<'_>, request: &Request) -> Attempt {
    let started = Instant::now();
    let started_unix_ms = now_millis();
    let sent = tokio::select! {
        biased;
        _ = ctx.control.aborted() => return abort_early(ctx),
        sent = tokio::time::timeout(ctx.idle_timeout, ctx.transport.send(request)) => sent,
    };
    let response = match sent {
        Err(_) => return Attempt::FailedEarly(LlmError::Idle(ctx.idle_timeout), None),
        Ok(Err(err)) => return Attempt::FailedEarly(LlmError::Transport(err), None),
        Ok(Ok(response)) => response,
    };
    if !(200..300).contains(&response.status) {
        let text = read_error_body(ctx, response.body).await;
        let error = LlmError::from_status(response.status, &text, response.retry_after);
        return Attempt::FailedEarly(error, Some((response.status, text)));
    }
    for decorator in ctx.decorators {
        decorator.accepted();
    }
    let mut ttft_ms = None;

    let liveness = Liveness::new();
    let content_type = response.content_type;
    let mut saw_event = false;
    let mut sse = SseStream::with_dialect(liveness.watch(response.body), ctx.dialect);
    let mut assembler = Assembler::new();
    let mut streaming =
        StreamingMessage::new(ctx.emitter, &empty_message(ctx, StopReason::Pending, None))
            .priced(ctx.price);
    let ended = loop {
        // Idle means no bytes at all for `idle_timeout`, counted from the last ones.
        let wait = ctx.idle_timeout.saturating_sub(liveness.quiet_for());
        let item = tokio::select! {
            biased;
            _ = ctx.control.aborted() => {
                let message = streaming.close(assembler, Some((StopReason::Aborted, None)), |_| {});
                return Attempt::Aborted(message);
            }
            item = tokio::time::timeout(wait, sse.next()) => item,
        };
        match item {
            // Bytes arrived (keep-alive comments): not idle, keep waiting.
            Err(_) if liveness.quiet_for() < ctx.idle_timeout => continue,
            Err(_) => break Ended::Failed(LlmError::Idle(ctx.idle_timeout)),
            // A server that sends its finish reason and closes without [DONE] still finished.
            Ok(None) if assembler.saw_finish() => break Ended::Done,
            // Bytes, but not one event: this was never an event stream.
            Ok(None) if !saw_event && liveness.began_as_something_else() => {
                break Ended::Failed(LlmError::NotSse {
                    status: response.status,
                    content_type: content_type
                        .clone()
                        .unwrap_or_else(|| "no content type".into()),
                    excerpt: excerpt(&liveness.head(), 200),
                });
            }
            Ok(None) => break Ended::Failed(LlmError::Truncated),
            Ok(Some(Err(err))) => break Ended::Failed(err),
            Ok(Some(Ok(SseItem::Done))) => break Ended::Done,
            Ok(Some(Ok(SseItem::Chunk(chunk)))) => {
                saw_event = true;
                assembler.push(*chunk, &mut |event| streaming.push(event));
                if ttft_ms.is_none() && assembler.has_progress() {
                    ttft_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
    };
    let report = |assembled: &Assembled| {
        let exchange = Exchange {
            x_request_id: request.header("x-request-id").map(str::to_string),
            response_id: assembled.response_id.clone(),
            model: assembled
                .model
                .clone()
                .unwrap_or_else(|| ctx.model.to_string()),
            started_unix_ms,
            started,
            ttft_ms,
            total_ms: started.elapsed().as_secs_f64() * 1000.0,
            usage: assembled.raw_usage.clone(),
        };
        for extension in ctx.extensions {
            extension.exchange_finished(&exchange);
        }
    };
    match ended {
        Ended::Done => Attempt::Done(streaming.close(assembler, None, report)),
        // Nothing was shown yet (no delta was emitted), so the request can be retried.
        Ended::Failed(error) if !assembler.has_progress() => Attempt::FailedEarly(error, None),
        Ended::Failed(error) => {
            let stop = Some((StopReason::Error, Some(error.to_string())));
            Attempt::FailedAfterProgress(streaming.close(assembler, stop, report), error)
        }
    }
}

enum Ended {
    Done,
    Failed(LlmError),
}

fn abort_early(ctx: &TurnContext<'_>) -> Attempt {
    let message = empty_message(ctx, StopReason::Aborted, None);
    emit_whole(ctx.emitter, &message);
    Attempt::Aborted(message)
}

fn empty_message(
    ctx: &TurnContext<'_>,
    stop_reason: StopReason,
    error_message: Option<String>,
) -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: ctx.dialect.api_name(),
        provider: ctx.provider.to_string(),
        model: ctx.model.to_string(),
        usage: Usage::default(),
        stop_reason,
        timestamp: now_millis(),
        response_id: None,
        error_message,
    }
}

/// `message_start` (pending) and `message_end` for a message that never streamed.
fn emit_whole(emitter: &Emitter, message: &AssistantMessage) {
    StreamingMessage::new(emitter, message).end(message.clone());
}

async fn read_error_body(ctx: &TurnContext<'_>, mut body: crate::llm::ByteStream) -> String {
    let mut bytes = Vec::new();
    loop {
        let next = tokio::select! {
            _ = ctx.control.aborted() => break,
            next = tokio::time::timeout(ctx.idle_timeout.min(Duration::from_secs(10)), body.next()) => next,
        };
        match next {
            Ok(Some(Ok(chunk))) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() >= ERROR_BODY_LIMIT {
                    break;
                }
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
