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
use crate::events::{AssistantMessage, Emitter, Event, Serving, StopReason, Usage, now_millis};
use crate::extension::{Exchange, Extension};
use crate::http::RetryPolicy;
use crate::ids::RequestId;
use crate::llm::{
    Assembled, Assembler, Body, Liveness, LlmError, Request, RequestDecorator, Response, SseItem,
    SseStream, Transport,
};
use crate::secrets::Secrets;
use crate::text::excerpt;

/// The most of an error response body kept for the message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

pub(super) struct TurnContext<'a> {
    pub emitter: &'a Emitter,
    pub transport: &'a dyn Transport,
    pub decorators: &'a [Arc<dyn RequestDecorator>],
    pub extensions: &'a [Arc<dyn Extension>],
    pub retry: &'a RetryPolicy,
    pub idle_timeout: Duration,
    pub control: &'a RunControl,
    /// What the model server receives and answers passes these first (see [`prepare`]).
    pub secrets: &'a Secrets,
    pub provider: &'a str,
    pub model: &'a str,
    pub dialect: crate::llm::Dialect,
    pub price: Option<crate::llm::pricing::Price>,
    /// This request's id without the attempt.
    pub request_id: RequestId,
}

pub(super) enum TurnEnd {
    Completed,
    Failed(LlmError),
    Aborted,
}

pub(super) struct TurnOutcome {
    pub message: AssistantMessage,
    pub end: TurnEnd,
    /// Requests sent, retries and protocol resends included.
    pub requests: u32,
    /// How the server served the request that produced the message.
    pub serving: Option<Serving>,
}

enum Attempt {
    Done(AssistantMessage, Option<Serving>),
    Aborted(AssistantMessage),
    /// Failed after the message had started: it has been ended with the error.
    FailedAfterProgress(AssistantMessage, LlmError),
    /// Failed before anything was shown; `body` is the error response, if there was one.
    FailedEarly(LlmError, Option<(u16, String)>),
}

/// Protocol corrections one turn may make (each drops a field the server refused, which
/// stays dropped, so this bound is never reached in practice; it only rules out a loop).
const MAX_RESENDS: u32 = 8;

pub(super) async fn request_assistant(ctx: &TurnContext<'_>, mut body: Body) -> TurnOutcome {
    let mut requests = 0;
    let mut retries = 0;
    let mut resends = 0;
    loop {
        requests += 1;
        let mut request = prepare(ctx, &mut body, &ctx.request_id.attempt(requests));
        let attempt = attempt(ctx, &request).await;
        give_back(&mut body, &mut request);
        // `shown`: a partial message that was streamed and ended with the error.
        let (error, rejected, shown) = match attempt {
            Attempt::Done(message, serving) => {
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
                    serving,
                };
            }
            Attempt::Aborted(message) => {
                return TurnOutcome {
                    message,
                    end: TurnEnd::Aborted,
                    requests,
                    serving: None,
                };
            }
            // Retried like any transient failure: the partial message has been ended with
            // `stopReason: "error"`, is left out of the conversation (its tool calls never
            // run), and the next attempt streams a fresh message.
            Attempt::FailedAfterProgress(message, error) => (error, None, Some(message)),
            Attempt::FailedEarly(error, rejected) => (error, rejected, None),
        };
        if let Some((status, text)) = &rejected
            && resends < MAX_RESENDS
            && resend_after_rejection(ctx.decorators, *status, text)
        {
            resends += 1;
            continue;
        }
        let wait = ctx
            .retry
            .next_wait(retries, error.is_retryable(), error.retry_after());
        if let Some(delay) = wait.filter(|_| !ctx.control.is_aborted()) {
            retries += 1;
            let message = error.to_string();
            ctx.emitter.emit(&Event::AutoRetryStart {
                attempt: retries,
                max_attempts: ctx.retry.max_retries,
                delay_ms: delay.as_millis() as u64,
                error_message: &message,
            });
            tokio::select! {
                () = ctx.control.aborted() => {
                    let message = empty_message(ctx, StopReason::Aborted, None);
                    emit_whole(ctx.emitter, &message);
                    return TurnOutcome { message, end: TurnEnd::Aborted, requests, serving: None };
                }
                () = tokio::time::sleep(delay) => continue,
            }
        }
        return give_up(ctx, error, retries, shown, requests);
    }
}

/// The turn's outcome once its request will not be tried again: the retries' end reported,
/// and the failure (or the abort) as the turn's message, shown unless it already was.
fn give_up(
    ctx: &TurnContext<'_>,
    error: LlmError,
    retries: u32,
    shown: Option<AssistantMessage>,
    requests: u32,
) -> TurnOutcome {
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
    TurnOutcome {
        message,
        end,
        requests,
        serving: None,
    }
}

/// Whether any decorator corrected itself after a rejection. Every one hears of it (each may
/// drop its own refused field), so this does not stop at the first.
fn resend_after_rejection(
    decorators: &[Arc<dyn RequestDecorator>],
    status: u16,
    body: &str,
) -> bool {
    let mut resend = false;
    for decorator in decorators {
        resend |= decorator.resend_after_rejection(status, body);
    }
    resend
}

/// The request as sent: its id first, so decorators can read it. The body is redacted
/// last, whole: the one place every model request passes, so no credential reaches the model
/// server from a prompt, a context file, a tool result or an earlier answer. (The key itself
/// goes in the transport's auth header, which is not part of the body.)
///
/// The conversation is never copied: its cached wire form is shared (redacted when it was
/// made, see `llm::WireMessages`), or a whole body's is lent to the request (a long run's
/// conversation is most of the body, and decorators never touch it) and [`give_back`]
/// returns it for the next attempt.
fn prepare(ctx: &TurnContext<'_>, body: &mut Body, request_id: &str) -> Request {
    let lent = match body.spliced.messages {
        Some(_) => None,
        None => body.json.get_mut("messages").map(Value::take),
    };
    let mut request = Request {
        body: body.json.clone(),
        spliced: body.spliced.clone(),
        headers: vec![("x-request-id".to_string(), request_id.to_string())],
    };
    if let (Some(messages), Some(slot)) = (lent, request.body.get_mut("messages")) {
        *slot = messages;
    }
    for decorator in ctx.decorators {
        decorator.decorate(&mut request.body, &mut request.headers);
    }
    ctx.secrets.redact_value(&mut request.body);
    request
}

/// The conversation lent to `request` back into `body` (redacted by then, which changes
/// nothing when it is redacted again).
fn give_back(body: &mut Body, request: &mut Request) {
    if body.spliced.messages.is_some() {
        return;
    }
    if let (Some(slot), Some(messages)) = (
        body.json.get_mut("messages"),
        request.body.get_mut("messages"),
    ) {
        *slot = messages.take();
    }
}

/// Sends the request and reads its status: the response to stream, or how the attempt
/// ended before any of it.
async fn open(ctx: &TurnContext<'_>, request: &Request) -> Result<Response, Attempt> {
    let sent = tokio::select! {
        biased;
        () = ctx.control.aborted() => return Err(abort_early(ctx)),
        sent = tokio::time::timeout(ctx.idle_timeout, ctx.transport.send(request)) => sent,
    };
    let response = match sent {
        Err(_) => return Err(Attempt::FailedEarly(LlmError::Idle(ctx.idle_timeout), None)),
        Ok(Err(err)) => return Err(Attempt::FailedEarly(LlmError::Transport(err), None)),
        Ok(Ok(response)) => response,
    };
    if !(200..300).contains(&response.status) {
        // Redacted before it is cut to an excerpt, which could keep half a key.
        let text = ctx
            .secrets
            .redact(&read_error_body(ctx, response.body).await)
            .into_owned();
        let error = LlmError::from_status(response.status, &text, response.retry_after);
        return Err(Attempt::FailedEarly(error, Some((response.status, text))));
    }
    for decorator in ctx.decorators {
        decorator.accepted();
    }
    if let Some(id) = request.header("x-request-id") {
        for extension in ctx.extensions {
            extension.request_accepted(id);
        }
    }
    Ok(response)
}

async fn attempt(ctx: &TurnContext<'_>, request: &Request) -> Attempt {
    let started = Instant::now();
    let started_unix_ms = now_millis();
    let response = match open(ctx, request).await {
        Ok(response) => response,
        Err(ended) => return ended,
    };
    let mut ttft_ms = None;

    let liveness = Liveness::new();
    let content_type = response.content_type;
    let mut saw_event = false;
    let mut sse = SseStream::with_dialect(liveness.watch(response.body), ctx.dialect);
    let mut assembler = Assembler::new();
    let mut streaming =
        StreamingMessage::new(ctx.emitter, &empty_message(ctx, StopReason::Pending, None))
            .priced(ctx.price.clone());
    let ended = loop {
        // Idle means no bytes at all for `idle_timeout`, counted from the last ones.
        let wait = ctx.idle_timeout.saturating_sub(liveness.quiet_for());
        let item = tokio::select! {
            biased;
            () = ctx.control.aborted() => {
                let message = streaming.close(assembler, Some((StopReason::Aborted, None)), |_| {});
                return Attempt::Aborted(message);
            }
            item = tokio::time::timeout(wait, sse.next()) => item,
        };
        match item {
            // Bytes arrived (keep-alive comments): not idle, keep waiting.
            Err(_) if liveness.quiet_for() < ctx.idle_timeout => {}
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
                    excerpt: excerpt(&ctx.secrets.redact(&liveness.head()), 200),
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
    let timing = Timing {
        started,
        started_unix_ms,
        ttft_ms,
    };
    let mut serving = None;
    let report = |assembled: &Assembled| {
        serving = finished_exchange(ctx, request, assembled, &timing);
    };
    match ended {
        Ended::Done => {
            let message = streaming.close(assembler, None, report);
            Attempt::Done(message, serving)
        }
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

/// When an attempt started and its first token arrived.
struct Timing {
    started: Instant,
    started_unix_ms: u64,
    ttft_ms: Option<f64>,
}

/// Tells the extensions a response is complete (`exchange_finished`); returns what the
/// server reported of its serving.
fn finished_exchange(
    ctx: &TurnContext<'_>,
    request: &Request,
    assembled: &Assembled,
    timing: &Timing,
) -> Option<Serving> {
    let x_request_id = request.header("x-request-id");
    let serving = assembled
        .report
        .serving(assembled.raw_usage.as_ref(), x_request_id);
    let exchange = Exchange {
        x_request_id: x_request_id.map(str::to_string),
        response_id: assembled.response_id.clone(),
        model: assembled
            .model
            .clone()
            .unwrap_or_else(|| ctx.model.to_string()),
        started_unix_ms: timing.started_unix_ms,
        started: timing.started,
        ttft_ms: timing.ttft_ms,
        total_ms: timing.started.elapsed().as_secs_f64() * 1000.0,
        usage: assembled.raw_usage.clone(),
        serving: serving.clone(),
    };
    for extension in ctx.extensions {
        extension.exchange_finished(&exchange);
    }
    serving
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
            () = ctx.control.aborted() => break,
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
