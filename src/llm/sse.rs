//! Server-sent events to chat chunks.
//!
//! `eventsource-stream` does the SSE framing (split lines, comments, multi-line data); this
//! turns each event's data into a [`ChatChunk`], recognizes `[DONE]`, and reports anything
//! else as an error rather than skipping it.
//!
//! The parser is handed whole events only ([`whole_events`]): given a large event in many
//! small reads it re-examines its buffer on every read, which is quadratic (8 MB in 64 KB
//! reads took 0.4 s, in 4 KB reads seconds). Finding event boundaries first is linear, and
//! it is also where one event's size is capped ([`MAX_EVENT_BYTES`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use eventsource_stream::{EventStream, Eventsource};
use futures_util::StreamExt;

use super::error::LlmError;
use super::transport::{ByteStream, TransportError};
use super::wire::ChatChunk;
use crate::sync::LockExt;
use crate::text::excerpt;
use bytes::Bytes;

/// When a response body last delivered bytes, and how it began. Keep-alive comments
/// (`: ping`) produce no event, yet a server sending them is not idle: the idle timeout asks
/// this, not the parser. The first bytes explain a body that turns out not to be SSE.
#[derive(Clone)]
pub struct Liveness {
    start: Instant,
    last_ms: Arc<AtomicU64>,
    head: Arc<std::sync::Mutex<Vec<u8>>>,
}

/// How much of a body's start is kept for error messages.
const HEAD_KEPT: usize = 200;

impl Liveness {
    /// A watch that starts now, with nothing seen yet.
    pub fn new() -> Self {
        Liveness {
            start: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
            head: Arc::default(),
        }
    }

    /// `body`, noting the time of every chunk.
    pub fn watch(&self, body: ByteStream) -> ByteStream {
        let seen = self.clone();
        Box::pin(body.inspect(move |chunk| {
            let now = seen.start.elapsed().as_millis() as u64;
            seen.last_ms.store(now, Ordering::Relaxed);
            if let Ok(bytes) = chunk {
                let mut head = seen.head.lock_or_recover();
                let room = HEAD_KEPT.saturating_sub(head.len()).min(bytes.len());
                head.extend_from_slice(&bytes[..room]);
            }
        }))
    }

    /// The first bytes of the body, as text.
    pub fn head(&self) -> String {
        String::from_utf8_lossy(&self.head.lock_or_recover()).into_owned()
    }

    /// The body had bytes, and they do not begin like server-sent events (a field or a
    /// comment line).
    pub fn began_as_something_else(&self) -> bool {
        let head = self.head();
        let Some(first) = head.lines().map(str::trim).find(|line| !line.is_empty()) else {
            return false;
        };
        !(first.starts_with(':')
            || ["data", "event", "id", "retry"]
                .iter()
                .any(|field| first.starts_with(field)))
    }

    /// How long since the last bytes (or since `new`).
    pub fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

impl Default for Liveness {
    fn default() -> Self {
        Self::new()
    }
}

/// One item of a model response stream.
pub enum SseItem {
    /// A chat-completions chunk (Anthropic's events arrive translated into these).
    Chunk(Box<ChatChunk>),
    /// The end of the response: `[DONE]`, or Anthropic's `message_stop`.
    Done,
}

/// A response body read as [`SseItem`]s, in either wire format.
pub struct SseStream {
    events: EventStream<ByteStream>,
    /// Set for Anthropic's stream, whose events are translated into chunks.
    anthropic: Option<super::anthropic::Translator>,
}

/// The largest single event accepted; a bigger one is a malformed stream, not a memory
/// hazard.
pub(super) const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// The body regrouped so that every chunk ends at an event boundary (a blank line), except
/// the last one. Each byte is searched once.
fn whole_events(body: ByteStream, max_event: usize) -> ByteStream {
    struct State {
        body: ByteStream,
        held: Vec<u8>,
        /// `held[..scanned]` holds no boundary.
        scanned: usize,
        done: bool,
    }
    let state = State {
        body,
        held: Vec::new(),
        scanned: 0,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(
        state,
        move |mut state| async move {
            loop {
                if state.done {
                    return None;
                }
                match state.body.next().await {
                    None => {
                        state.done = true;
                        if state.held.is_empty() {
                            return None;
                        }
                        let rest = Bytes::from(std::mem::take(&mut state.held));
                        return Some((Ok(rest), state));
                    }
                    Some(Err(err)) => {
                        state.done = true;
                        return Some((Err(err), state));
                    }
                    Some(Ok(chunk)) => {
                        // A boundary may straddle reads: look again at the last 3 bytes seen.
                        let from = state.scanned.saturating_sub(3);
                        state.held.extend_from_slice(&chunk);
                        match last_boundary(&state.held[from..]) {
                            Some(end) => {
                                let rest = state.held.split_off(from + end);
                                let events = std::mem::replace(&mut state.held, rest);
                                state.scanned = state.held.len();
                                return Some((Ok(Bytes::from(events)), state));
                            }
                            None if state.held.len() > max_event => {
                                state.done = true;
                                let error = TransportError::Io(format!(
                                    "{EVENT_TOO_LARGE} ({max_event} bytes)"
                                ));
                                return Some((Err(error), state));
                            }
                            None => state.scanned = state.held.len(),
                        }
                    }
                }
            }
        },
    ))
}

const EVENT_TOO_LARGE: &str = "a single server-sent event exceeds the size limit";

/// The end of the last blank line (`\n\n`, `\r\r` or `\r\n\r\n`) in `bytes`.
fn last_boundary(bytes: &[u8]) -> Option<usize> {
    [&b"\n\n"[..], b"\r\r", b"\r\n\r\n"]
        .iter()
        .filter_map(|pattern| memchr::memmem::rfind(bytes, pattern).map(|at| at + pattern.len()))
        .max()
}

impl SseStream {
    /// Reads `body` as a chat-completions stream.
    pub fn new(body: ByteStream) -> Self {
        Self::with_dialect(body, super::Dialect::ChatCompletions)
    }

    /// Reads `body` in `dialect`: Anthropic's events are translated into chat-completions chunks.
    pub fn with_dialect(body: ByteStream, dialect: super::Dialect) -> Self {
        SseStream {
            events: whole_events(body, MAX_EVENT_BYTES).eventsource(),
            anthropic: (dialect == super::Dialect::AnthropicMessages)
                .then(super::anthropic::Translator::default),
        }
    }

    /// The next item; `None` when the byte stream ended.
    pub async fn next(&mut self) -> Option<Result<SseItem, LlmError>> {
        loop {
            let event = match self.events.next().await? {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(err))
                    if err.to_string().starts_with(EVENT_TOO_LARGE) =>
                {
                    return Some(Err(LlmError::Malformed {
                        error: err.to_string(),
                        excerpt: String::new(),
                    }));
                }
                Err(eventsource_stream::EventStreamError::Transport(err)) => {
                    return Some(Err(LlmError::Cut(err)));
                }
                Err(err) => {
                    return Some(Err(LlmError::Malformed {
                        error: err.to_string(),
                        excerpt: String::new(),
                    }));
                }
            };
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if let Some(translator) = &mut self.anthropic {
                use super::anthropic::Translated;
                match translator.translate(data) {
                    Ok(Translated::Chunk(chunk)) => return Some(Ok(SseItem::Chunk(chunk))),
                    Ok(Translated::Done) => return Some(Ok(SseItem::Done)),
                    Ok(Translated::Nothing) => continue,
                    Err(err) => return Some(Err(err)),
                }
            }
            if data == "[DONE]" {
                return Some(Ok(SseItem::Done));
            }
            if event.event == "error" {
                return Some(Err(LlmError::InStream(excerpt(data, 500))));
            }
            return Some(match serde_json::from_str::<ChatChunk>(data) {
                Ok(chunk) => match &chunk.error {
                    Some(error) => {
                        let message = error
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map_or_else(|| error.to_string(), str::to_string);
                        Err(LlmError::InStream(message))
                    }
                    None => Ok(SseItem::Chunk(Box::new(chunk))),
                },
                Err(err) => Err(LlmError::Malformed {
                    error: err.to_string(),
                    excerpt: excerpt(data, 200),
                }),
            });
        }
    }
}

#[cfg(test)]
mod tests;
