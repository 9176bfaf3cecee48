//! A run's session id, checked once where it enters (a flag, a resumed file, a new UUIDv7)
//! and carried typed from there: it names the session file, travels in Dynamo headers and
//! OTEL attributes, and prefixes every request id, so nothing downstream re-checks it.

use std::fmt;

use serde::Serialize;

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
