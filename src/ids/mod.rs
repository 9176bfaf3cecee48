//! Typed ids, checked once where they enter and carried typed from there.
//!
//! A run's session id comes from a flag, a resumed file or a new UUIDv7; it names the session
//! file, travels in Dynamo headers and OTEL attributes, and prefixes every request id, so
//! nothing downstream re-checks it. A model request's id is derived from it ([`RequestIds`]).

use std::fmt;

use serde::Serialize;

mod tool_call;

pub use tool_call::ToolCallId;

/// A session id: 1 to 128 of `A-Z a-z 0-9 - _ . :`, not starting with `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

/// A text that cannot be a session id; says what one may contain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a session id: 1 to 128 of A-Z a-z 0-9 - _ . :, not starting with .")]
pub struct InvalidSessionId(pub String);

impl SessionId {
    /// A fresh id: a UUIDv7, so ids sort by creation time.
    pub fn generate() -> SessionId {
        SessionId(uuid::Uuid::now_v7().to_string())
    }

    /// `text` as a session id, if it is one.
    pub fn parse(text: &str) -> Result<SessionId, InvalidSessionId> {
        let valid = !text.is_empty()
            && text.len() <= 128
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
            && !text.starts_with('.');
        if valid {
            Ok(SessionId(text.to_string()))
        } else {
            Err(InvalidSessionId(text.to_string()))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `x-request-id` of every model request, derived from the session, so a trace can be
/// joined without a lookup table:
///
/// `<session id>:r<E>:t<N>:a<A>` for turn `N` (from 0) of the run that found the session
/// file with `E` entries (0 for a new session), attempt `A` (from 1, retries and protocol
/// resends included); `s<K>` instead of `t<N>` for the run's `K`th compaction summary (from
/// 0). The entry count only grows, so a resumed session never repeats an id.
#[derive(Debug, Clone)]
pub struct RequestIds {
    run: String,
}

impl RequestIds {
    /// The ids of the run of `session` that found its file with `prior_entries` entries.
    pub fn new(session: &SessionId, prior_entries: usize) -> Self {
        RequestIds {
            run: format!("{session}:r{prior_entries}"),
        }
    }

    /// The request of turn `turn` (from 0).
    pub fn turn(&self, turn: u32) -> RequestId {
        RequestId(format!("{}:t{turn}", self.run))
    }

    /// The request of the run's `index`th compaction summary (from 0).
    pub fn summary(&self, index: u32) -> RequestId {
        RequestId(format!("{}:s{index}", self.run))
    }
}

/// One model request's id, without its attempt ([`RequestIds`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// The `x-request-id` of attempt `attempt` (from 1) of this request.
    pub fn attempt(&self, attempt: u32) -> String {
        format!("{}:a{attempt}", self.0)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests;
