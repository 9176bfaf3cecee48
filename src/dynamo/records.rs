//! Trace records in Dynamo's wire shapes.
//!
//! Tool events go to Dynamo's ZeroMQ ingest as msgpack maps with named keys (array encoding
//! would misalign fields once optional ones are skipped, and Dynamo drops such records), in
//! one of two shapes:
//! - `dynamo.agent.trace.v1` (Dynamo 1.2.x): the full record, `event_source: "harness"` and
//!   the whole `agent_context`;
//! - `dynamo.request.trace.v1` (Dynamo 1.3+): a flat ingress record with `session_id` (the
//!   trajectory) and `parent_session_id`; Dynamo fills in the rest.
//!
//! Terminal tool records are self-contained (start, end and duration), because Dynamo's trace
//! bus may drop the `tool_start`. The local trace file (`--trace-file`) uses the v1 record
//! for everything, including the `request_end` rows worker measures itself.

use serde::Serialize;

use super::identity::AgentIdentity;
use crate::secrets::Secrets;

pub const AGENT_SCHEMA: &str = "dynamo.agent.trace.v1";
pub const REQUEST_SCHEMA: &str = "dynamo.request.trace.v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    RequestEnd,
    ToolStart,
    ToolEnd,
    ToolError,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Running,
    Succeeded,
    Error,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEvent {
    pub tool_call_id: String,
    pub tool_class: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at_unix_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at_unix_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The `x-request-id` of the request whose response asked for the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_request_id: Option<String>,
    /// The `x-request-id` of the request that carried the result back (terminal records;
    /// absent when the run ended first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_request_id: Option<String>,
    /// For a subagent: the parent's request whose tool call started this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_request_id: Option<String>,
}

impl ToolEvent {
    /// The record as sent to Dynamo's ZeroMQ ingest. Dynamo 1.2.1 and 1.6.1 accept extra
    /// tool fields but leave them out of their trace rows (the e2e suite checks this), so
    /// the join keys stay in worker's own trace file and OTEL, and cost the wire nothing.
    pub fn for_ingest(&self) -> ToolEvent {
        ToolEvent {
            source_request_id: None,
            consumer_request_id: None,
            parent_request_id: None,
            ..self.clone()
        }
    }
}

/// A model request as worker measured it (the `request` of a `request_end` row).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestMetrics {
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_request_id: Option<String>,
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_received_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_time_ms: Option<f64>,
    /// For a subagent: the parent's request whose tool call started this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_request_id: Option<String>,
}

/// `dynamo.agent.trace.v1`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentTraceRecord<'a> {
    pub schema: &'static str,
    pub event_type: EventType,
    pub event_time_unix_ms: u64,
    pub event_source: &'static str,
    pub agent_context: &'a AgentIdentity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'a ToolEvent>,
}

/// `dynamo.request.trace.v1` tool-event ingress.
#[derive(Debug, Clone, Serialize)]
pub struct RequestTraceIngress<'a> {
    pub schema: &'static str,
    pub event_type: EventType,
    pub event_time_unix_ms: u64,
    pub session_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<&'a str>,
    pub tool: &'a ToolEvent,
}

impl<'a> AgentTraceRecord<'a> {
    pub fn tool(
        event_type: EventType,
        time: u64,
        identity: &'a AgentIdentity,
        tool: &'a ToolEvent,
    ) -> Self {
        AgentTraceRecord {
            schema: AGENT_SCHEMA,
            event_type,
            event_time_unix_ms: time,
            event_source: "harness",
            agent_context: identity,
            request: None,
            tool: Some(tool),
        }
    }
}

impl<'a> RequestTraceIngress<'a> {
    pub fn tool(
        event_type: EventType,
        time: u64,
        identity: &'a AgentIdentity,
        tool: &'a ToolEvent,
    ) -> Self {
        RequestTraceIngress {
            schema: REQUEST_SCHEMA,
            event_type,
            event_time_unix_ms: time,
            session_id: &identity.trajectory_id,
            parent_session_id: identity.parent_trajectory_id.as_deref(),
            tool,
        }
    }
}

/// Msgpack with field names (maps, not arrays), as Dynamo's decoder needs.
pub fn to_msgpack<T: Serialize>(record: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec_named(record)
}

/// `record` with every string redacted (a tool call id is the model's to choose), as a JSON
/// value: [`to_msgpack`] encodes it to the record's own bytes (field order, integer and float
/// encodings are kept).
pub fn redacted<T: Serialize>(record: &T, secrets: &Secrets) -> Option<serde_json::Value> {
    let mut value = serde_json::to_value(record).ok()?;
    secrets.redact_value(&mut value);
    Some(value)
}

/// The tool's family: its name up to the first `---` or `/` (`mcp/server.tool` → `mcp`).
pub fn tool_class(name: &str) -> String {
    let head = name.split("---").next().unwrap_or(name);
    let head = head.split('/').next().unwrap_or(head);
    if head.is_empty() {
        "unknown".to_string()
    } else {
        head.to_string()
    }
}

#[cfg(test)]
mod tests;
