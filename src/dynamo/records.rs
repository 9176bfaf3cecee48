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
use serde::ser::{SerializeStruct, Serializer};

use super::identity::AgentIdentity;
use crate::secrets::Secrets;

/// `schema` of the full record Dynamo 1.2.x ingests, and of every `--trace-file` row.
pub const AGENT_SCHEMA: &str = "dynamo.agent.trace.v1";
/// `schema` of the flat tool-event ingress record Dynamo 1.3+ ingests.
pub const REQUEST_SCHEMA: &str = "dynamo.request.trace.v1";

/// `event_type` on the wire: what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// A model request finished (written by worker only to its own trace file).
    RequestEnd,
    /// A tool call started (status `running`).
    ToolStart,
    /// A tool call succeeded.
    ToolEnd,
    /// A tool call returned an error, or was cancelled (`error_type` says how).
    ToolError,
    /// A record of the run's control: a controller's command answered, an approval, a
    /// hook's decision (written by worker only to its own trace file).
    Control,
}

/// `tool.status` on the wire: where the call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// On `tool_start`: the call is under way.
    Running,
    /// On `tool_end`: the call succeeded.
    Succeeded,
    /// On `tool_error`: the tool returned an error result (`error_type` `tool_error`).
    Error,
    /// On `tool_error`: the call was stopped (`error_type` `aborted` or `timeout`).
    Cancelled,
}

/// The `tool` object of a tool record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEvent {
    /// The model's id for the call.
    pub tool_call_id: String,
    /// The tool's family: its name up to the first `---` or `/` (`bash`, `mcp`).
    pub tool_class: String,
    /// When the call started, in Unix ms; on terminal records too, so they stand alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at_unix_ms: Option<u64>,
    /// When the call ended, in Unix ms; absent on `tool_start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at_unix_ms: Option<u64>,
    /// Where the call stands; set on every record worker writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// How long the call ran, in ms (monotonic clock, to the µs); absent on `tool_start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Size in bytes of the result text the model gets back; absent on `tool_start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// Why a `tool_error` happened: `tool_error` (an error result), `aborted` (an abort or the
    /// run's timeout) or `timeout` (the tool's own timeout); absent otherwise.
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
        // Field by field: cloning the whole record would copy the join keys only to drop them.
        ToolEvent {
            tool_call_id: self.tool_call_id.clone(),
            tool_class: self.tool_class.clone(),
            started_at_unix_ms: self.started_at_unix_ms,
            ended_at_unix_ms: self.ended_at_unix_ms,
            status: self.status,
            duration_ms: self.duration_ms,
            output_bytes: self.output_bytes,
            error_type: self.error_type.clone(),
            source_request_id: None,
            consumer_request_id: None,
            parent_request_id: None,
        }
    }
}

/// A model request as worker measured it (the `request` of a `request_end` row).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestMetrics {
    /// The server's response id without its `chatcmpl-` prefix; else the `x-request-id`; empty
    /// when neither is known.
    pub request_id: String,
    /// The `x-request-id` worker sent, which Dynamo records as `x_request_id`; absent when the
    /// request had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_request_id: Option<String>,
    /// The model id the response named, else the one requested.
    pub model: String,
    /// Prompt tokens the server reported, cached ones included; absent when it reported no
    /// usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens the server reported; absent when it reported no usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Prompt tokens served from the server's prefix cache (0 when the usage has no details);
    /// absent when it reported no usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// When worker sent the request, in Unix ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_received_ms: Option<u64>,
    /// Time to first token in ms: from sending to the first streamed progress; absent when
    /// none arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// From sending to the end of the response, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_time_ms: Option<f64>,
    /// For a subagent: the parent's request whose tool call started this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_request_id: Option<String>,
}

/// The fields every trace row starts with, in both schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RecordHead {
    /// The row's schema: [`AGENT_SCHEMA`] or [`REQUEST_SCHEMA`].
    pub schema: &'static str,
    /// What happened.
    pub event_type: EventType,
    /// When it happened, in Unix ms (for `request_end`: the request's start plus its total
    /// time, rounded down).
    pub event_time_unix_ms: u64,
}

impl RecordHead {
    /// How many fields [`RecordHead::serialize_into`] writes.
    const FIELDS: usize = 3;

    /// Writes the head's fields first in a record's map. A record writes them itself rather
    /// than through `#[serde(flatten)]`, which makes a map of unknown length: msgpack then
    /// encodes the record into a buffer of its own, to count its fields, and copies it.
    fn serialize_into<M: SerializeStruct>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_field("schema", self.schema)?;
        map.serialize_field("event_type", &self.event_type)?;
        map.serialize_field("event_time_unix_ms", &self.event_time_unix_ms)
    }
}

/// `dynamo.agent.trace.v1`.
#[derive(Debug, Clone)]
pub struct AgentTraceRecord<'a> {
    /// The schema ([`AGENT_SCHEMA`]), what happened and when.
    pub head: RecordHead,
    /// Who wrote the record: `harness` for every record worker writes.
    pub event_source: &'static str,
    /// The agent identity the record belongs to.
    pub agent_context: &'a AgentIdentity,
    /// The request as worker measured it; on `request_end` rows only.
    pub request: Option<RequestMetrics>,
    /// The tool call; on tool rows only.
    pub tool: Option<&'a ToolEvent>,
    /// The control record (its `type` and fields, as on stdout); on `control` rows only.
    pub control: Option<serde_json::Value>,
}

impl Serialize for AgentTraceRecord<'_> {
    /// The head's fields, then the rest in declaration order; an absent option is left out.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Taken apart whole, so that a field added to the record cannot be left out here.
        let AgentTraceRecord {
            head,
            event_source,
            agent_context,
            request,
            tool,
            control,
        } = self;
        let present = [request.is_some(), tool.is_some(), control.is_some()];
        let fields = RecordHead::FIELDS + 2 + present.iter().filter(|p| **p).count();
        let mut map = serializer.serialize_struct("AgentTraceRecord", fields)?;
        head.serialize_into(&mut map)?;
        map.serialize_field("event_source", event_source)?;
        map.serialize_field("agent_context", agent_context)?;
        if let Some(request) = request {
            map.serialize_field("request", request)?;
        }
        if let Some(tool) = tool {
            map.serialize_field("tool", tool)?;
        }
        if let Some(control) = control {
            map.serialize_field("control", control)?;
        }
        map.end()
    }
}

/// `dynamo.request.trace.v1` tool-event ingress.
#[derive(Debug, Clone)]
pub struct RequestTraceIngress<'a> {
    /// The schema ([`REQUEST_SCHEMA`]), what happened to the tool call and when.
    pub head: RecordHead,
    /// The agent's trajectory id (what Dynamo 1.3+ calls a session).
    pub session_id: &'a str,
    /// The parent trajectory id; absent for a root run.
    pub parent_session_id: Option<&'a str>,
    /// The tool call.
    pub tool: &'a ToolEvent,
}

impl Serialize for RequestTraceIngress<'_> {
    /// The head's fields, then the rest in declaration order; an absent parent is left out.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Taken apart whole, so that a field added to the record cannot be left out here.
        let RequestTraceIngress {
            head,
            session_id,
            parent_session_id,
            tool,
        } = self;
        let fields = RecordHead::FIELDS + 2 + usize::from(parent_session_id.is_some());
        let mut map = serializer.serialize_struct("RequestTraceIngress", fields)?;
        head.serialize_into(&mut map)?;
        map.serialize_field("session_id", session_id)?;
        if let Some(parent) = parent_session_id {
            map.serialize_field("parent_session_id", parent)?;
        }
        map.serialize_field("tool", tool)?;
        map.end()
    }
}

impl<'a> AgentTraceRecord<'a> {
    /// A tool record of `event_type` at `time` (Unix ms).
    pub fn tool(
        event_type: EventType,
        time: u64,
        identity: &'a AgentIdentity,
        tool: &'a ToolEvent,
    ) -> Self {
        AgentTraceRecord {
            head: RecordHead {
                schema: AGENT_SCHEMA,
                event_type,
                event_time_unix_ms: time,
            },
            event_source: "harness",
            agent_context: identity,
            request: None,
            control: None,
            tool: Some(tool),
        }
    }
}

impl<'a> RequestTraceIngress<'a> {
    /// A tool record of `event_type` at `time` (Unix ms), keyed by `identity`'s trajectory.
    pub fn tool(
        event_type: EventType,
        time: u64,
        identity: &'a AgentIdentity,
        tool: &'a ToolEvent,
    ) -> Self {
        RequestTraceIngress {
            head: RecordHead {
                schema: REQUEST_SCHEMA,
                event_type,
                event_time_unix_ms: time,
            },
            session_id: &identity.trajectory_id,
            parent_session_id: identity.parent_trajectory_id.as_deref(),
            tool,
        }
    }
}

/// Msgpack with field names (maps, not arrays), as Dynamo's decoder needs.
pub fn to_msgpack<T: Serialize>(record: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    // A tool record is about 600 bytes: grown from empty, the buffer would be moved at every
    // doubling on the way there.
    let mut bytes = Vec::with_capacity(RECORD_CAPACITY);
    rmp_serde::encode::write_named(&mut bytes, record)?;
    Ok(bytes)
}

/// What a record's buffer starts with room for: a tool record and then some.
const RECORD_CAPACITY: usize = 1024;

/// `record` with every string redacted (a tool call id is the model's to choose), as a JSON
/// value: [`to_msgpack`] encodes it to the record's own bytes (field order, integer and float
/// encodings are kept).
pub fn redacted<T: Serialize>(record: &T, secrets: &Secrets) -> Option<serde_json::Value> {
    let mut value = serde_json::to_value(record).ok()?;
    secrets.redact_value(&mut value);
    Some(value)
}

/// `record` as msgpack ([`to_msgpack`]) with every string redacted, as [`redacted`] would
/// make it. Most records hold no secret: their bytes, encoded directly, are checked for every
/// secret (a msgpack string is its UTF-8 bytes, verbatim), and only a record that holds one
/// goes the long way round through a JSON value.
pub fn redacted_msgpack<T: Serialize>(record: &T, secrets: &Secrets) -> Option<Vec<u8>> {
    let bytes = to_msgpack(record).ok()?;
    if !secrets.occur_in(&bytes) {
        return Some(bytes);
    }
    to_msgpack(&redacted(record, secrets)?).ok()
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
