//! A tool call's id, carried typed from the assistant message that made the call to its
//! result, the session file and the trace records.

use std::fmt;

use serde::Serialize;

/// A tool call's id: what the model named it (`call_…`, `toolu_…`), or one worker made up when
/// it gave none. The tool result answers it by this id, so it is carried typed from the
/// message that made the call to the result, the session file and the trace records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ToolCallId(String);

/// On the wire a tool call id is a plain string, written in place (the published schema has
/// no definition of its own for it).
impl schemars::JsonSchema for ToolCallId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

impl ToolCallId {
    /// The id the model (or worker) gave the call.
    pub fn new(id: impl Into<String>) -> Self {
        ToolCallId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ToolCallId {
    fn from(id: &str) -> Self {
        ToolCallId(id.to_string())
    }
}

impl From<String> for ToolCallId {
    fn from(id: String) -> Self {
        ToolCallId(id)
    }
}

impl fmt::Display for ToolCallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests;
