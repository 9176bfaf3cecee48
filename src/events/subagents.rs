//! The records of child runs (the `task` tool). Part of the wire contract of [`super`].
//!
//! The child's id is `childSessionId`: `sessionId` is every line's own, the run writing it.

use schemars::JsonSchema;
use serde::Serialize;

use super::{RunStopReason, TokenTotals};

/// `subagent_start`: a `task` call started a child run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStart {
    /// The `task` call that started it, as in `tool_execution_start`.
    pub tool_call_id: String,
    /// The child's own session id.
    pub child_session_id: String,
    /// The session id of the run that started it.
    pub parent_session_id: String,
    /// The agent definition it runs (absent: the general agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The task's short description, as the model gave it.
    pub description: String,
    /// How deep it is: a child of the top run is 1.
    pub depth: u32,
    /// Its session file (absent with `--no-session`); the file's header names the parent's
    /// session as `parentSession`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
}

/// One subagent's share of the run's totals (`usage_snapshot.stats.subagents`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentUsage {
    /// The child's session id.
    pub child_session_id: String,
    /// The agent definition it ran (absent: the general agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Its tokens.
    pub tokens: TokenTotals,
    /// Its cost, in US dollars.
    pub cost: f64,
    /// Its model requests.
    pub llm_requests: u32,
}

/// `subagent_end`: a child run is over.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentEnd {
    /// The `task` call that started it.
    pub tool_call_id: String,
    /// The child's session id.
    pub child_session_id: String,
    /// Why it ended, as its own `agent_end` says.
    pub stop_reason: RunStopReason,
    /// The tokens it used (counted in the run's totals too).
    pub usage: TokenTotals,
    /// What it cost, in US dollars (counted in the run's totals too).
    pub cost: f64,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}
