//! The Dynamo trace bridge's lines: `trace_status` after the header, `trace_summary` at the
//! end.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `trace_status`: how the Dynamo trace bridge is set up for this run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceStatus {
    /// `auto`, `agent`, `request` or `off`, as configured.
    pub protocol: &'static str,
    /// The identity every request and tool event carries (Dynamo's `agent_context`).
    pub agent_context: Value,
    /// The identity was rewritten for a subagent.
    pub subagent_bridge: bool,
    pub tool_events: Option<ToolEventsTarget>,
    pub trace_file: Option<std::path::PathBuf>,
    /// `agent` or `request`, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_protocol: Option<&'static str>,
}

/// Where tool events go over ZeroMQ.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEventsTarget {
    pub endpoint: String,
    pub topic: String,
    pub queue_capacity: usize,
}

/// `trace_summary`: what the Dynamo trace bridge did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceSummary {
    /// `agent` or `request`; `null` when no request settled it.
    pub resolved_protocol: Option<&'static str>,
    pub llm_requests: u64,
    /// Tool events the kernel took: they reach the peer even though the process has exited.
    pub tool_events_sent: u64,
    /// Never handed to the socket: full queue, no peer, failed send.
    pub tool_events_dropped: u64,
    /// Handed to the socket library but not seen to leave the process before it ended.
    pub tool_events_unconfirmed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_events_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_file_error: Option<String>,
    /// Serving hints the server refused (HTTP 400 naming them), as body paths such as
    /// `nvext.agent_hints.osl`: each was dropped for the rest of the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints_refused: Vec<&'static str>,
    /// The end-of-session marker (`--session-final`), when one was due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_final: Option<SessionFinal>,
}

/// How the end-of-session marker went.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionFinal {
    /// Its `x-request-id`.
    pub request_id: String,
    /// The HTTP status the server answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it did not get an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
