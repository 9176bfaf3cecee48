//! What can go wrong talking to the model server, and which failures are worth a retry.

use std::time::Duration;

use super::transport::TransportError;
use crate::events::FatalErrorKind;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    Transport(#[from] TransportError),
    #[error("HTTP {status}{}: {message}", reason(*.status))]
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("no data from the model server for {} s", .0.as_secs_f64())]
    Idle(Duration),
    #[error("the response stream ended before the response was complete")]
    Truncated,
    /// The connection failed while the body was streaming: a stream failure like
    /// [`LlmError::Truncated`], whatever the transport said.
    #[error("the response stream was cut: {0}")]
    Cut(TransportError),
    #[error("malformed stream chunk ({error}): {excerpt}")]
    Malformed { error: String, excerpt: String },
    #[error("the model server reported an error in the stream: {0}")]
    InStream(String),
    /// A successful status with a body that held no server-sent event at all.
    #[error(
        "the model server answered {status} with {content_type}, not an event stream: {excerpt}"
    )]
    NotSse {
        status: u16,
        content_type: String,
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

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

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
