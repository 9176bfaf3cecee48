//! What can go wrong talking to the model server, and which failures are worth a retry.

use std::time::Duration;

use super::transport::TransportError;
use crate::events::FatalErrorKind;

/// Why a model request failed; [`LlmError::is_retryable`] says whether another try may help.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// No response: the request could not be sent or got no answer, or the replay fixture has none
    /// left.
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// The server answered with an error status, or Anthropic's stream reported an overload (529)
    /// or an API error (500).
    #[error("HTTP {status}{}: {message}", reason(*.status))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The server's own message from a JSON error body, else an excerpt of the body.
        message: String,
        /// The server's `Retry-After`, if it sent one; it replaces the scheduled wait before a
        /// retry (up to a ceiling).
        retry_after: Option<Duration>,
    },
    /// The model server sent nothing for this long (the idle timeout), before answering or
    /// mid-stream.
    #[error("no data from the model server for {} s", .0.as_secs_f64())]
    Idle(Duration),
    /// The stream ended without `[DONE]` or a finish reason.
    #[error("the response stream ended before the response was complete")]
    Truncated,
    /// The connection failed while the body was streaming: a stream failure like
    /// [`LlmError::Truncated`], whatever the transport said.
    #[error("the response stream was cut: {0}")]
    Cut(TransportError),
    /// An event that could not be read: data that is not a valid chunk, an event over the size
    /// limit, or broken SSE framing.
    #[error("malformed stream chunk ({error}): {excerpt}")]
    Malformed {
        /// What the parser said.
        error: String,
        /// The start of the event's data (up to 200 bytes); empty when the framing itself failed.
        excerpt: String,
    },
    /// The server reported an error inside the stream (an `error` event, or a chunk's `error`
    /// field); the text is its message.
    #[error("the model server reported an error in the stream: {0}")]
    InStream(String),
    /// A successful status with a body that held no server-sent event at all.
    #[error(
        "the model server answered {status} with {content_type}, not an event stream: {excerpt}"
    )]
    NotSse {
        /// The HTTP status, a successful one.
        status: u16,
        /// The response's `Content-Type`, or `no content type` when it had none.
        content_type: String,
        /// The body's first bytes (up to 200), redacted.
        excerpt: String,
    },
}

impl LlmError {
    /// Transport failures, 408/429/5xx, stalls and cut streams may succeed on another try;
    /// other 4xx, malformed data and replay gaps will not.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Transport(TransportError::Replay(_)) => false,
            LlmError::Transport(_) => true,
            LlmError::Status { status, .. } => crate::http::transient_status(*status),
            LlmError::Idle(_) | LlmError::Truncated | LlmError::Cut(_) => true,
            LlmError::Malformed { .. } | LlmError::InStream(_) | LlmError::NotSse { .. } => false,
        }
    }

    /// The wait the server asked for (`Retry-After`) before another try; `None` when it asked for
    /// none.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The `fatal_error` kind this failure is reported as: `transport`, `http`, `stream` or
    /// `replay`.
    pub fn kind(&self) -> FatalErrorKind {
        match self {
            LlmError::Transport(TransportError::Replay(_)) => FatalErrorKind::Replay,
            LlmError::Transport(_) => FatalErrorKind::Transport,
            LlmError::Status { .. } => FatalErrorKind::Http,
            LlmError::Idle(_)
            | LlmError::Truncated
            | LlmError::Cut(_)
            | LlmError::Malformed { .. }
            | LlmError::InStream(_)
            | LlmError::NotSse { .. } => FatalErrorKind::Stream,
        }
    }

    /// Builds a status error from a response body, preferring the server's own message.
    pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let message = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|json| {
                json.pointer("/error/message")
                    .or_else(|| json.get("message"))
                    .or_else(|| json.get("error"))
                    .and_then(|m| m.as_str().map(str::to_string))
            })
            .unwrap_or_else(|| crate::text::excerpt(body, 500));
        let message = if message.trim().is_empty() {
            "(empty response body)".to_string()
        } else {
            message
        };
        LlmError::Status {
            status,
            message,
            retry_after,
        }
    }
}

/// ` Unauthorized` for 401: the status's standard reason phrase, if it has one.
fn reason(status: u16) -> String {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .map_or(String::new(), |phrase| format!(" {phrase}"))
}

#[cfg(test)]
mod tests;
