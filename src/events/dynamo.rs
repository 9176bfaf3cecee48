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
    /// Where tool events go over ZeroMQ; `null` when no endpoint is set.
    pub tool_events: Option<ToolEventsTarget>,
    /// The `--trace-file` path; `null` when none is set.
    pub trace_file: Option<std::path::PathBuf>,
    /// `agent` or `request`, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_protocol: Option<&'static str>,
}

/// Where tool events go over ZeroMQ.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEventsTarget {
    /// The ZeroMQ endpoint worker's PUSH socket connects to (`tcp://127.0.0.1:20390`).
    pub endpoint: String,
    /// The first frame of every message (default `agent-tool-events`).
    pub topic: String,
    /// How many records may wait to be sent; more are dropped and counted (default 10000).
    pub queue_capacity: usize,
}

/// `trace_summary`: what the Dynamo trace bridge did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceSummary {
    /// `agent` or `request`; `null` when no request settled it.
    pub resolved_protocol: Option<&'static str>,
    /// Model requests the bridge added its identity and hints to, each attempt counted (retries and
    /// resends included); 0 when it adds them to none.
    pub llm_requests: u64,
    /// Tool events the kernel took: they reach the peer even though the process has exited.
    pub tool_events_sent: u64,
    /// Never handed to the socket: full queue, no peer, failed send.
    pub tool_events_dropped: u64,
    /// Handed to the socket library but not seen to leave the process before it ended.
    pub tool_events_unconfirmed: u64,
    /// Why the tool-event sender could not start (an invalid ZeroMQ endpoint); absent when it
    /// started or none was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_events_error: Option<String>,
    /// The first write error of the `--trace-file`: the file is incomplete, and an `output_error`
    /// follows.
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
