//! The Dynamo trace bridge: one Dynamo trace shows both halves of an agent task.
//!
//! - Channel A ([`decorate`]): every model request to the `dynamo` provider carries the
//!   agent identity ([`identity`]), in the body (Dynamo 1.2.x), in headers (1.3+), or both
//!   until the server shows which it speaks ([`protocol`]).
//! - Channel B ([`relay`]): every tool call becomes a start and a terminal record sent to
//!   Dynamo's ZeroMQ ingest ([`records`]), best effort, never slowing the run.
//! - `--trace-file` ([`trace_file`]): the same records, plus a `request_end` per model request
//!   measured by worker, written locally in Dynamo's trace format; [`perfetto`] turns such a
//!   trace (or Dynamo's own) into a Chrome/Perfetto timeline.
//!
//! - Serving ([`hints`]): per-request scheduling hints, the request for Dynamo's serving
//!   report, and the end-of-session marker ([`session_final`]).
//! - Joins: every tool record carries the `x-request-id` of the request that asked for the
//!   call and of the request that carried its result back ([`ToolJoins`]); a subagent started
//!   by a tool call gets the asking request's id as `DYN_AGENT_PARENT_REQUEST_ID`.
//!
//! Settings come from `DYN_AGENT_*` variables (see [`DynamoSettings::from_env`]) and flags.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;

pub mod decorate;
pub mod hints;
pub mod identity;
mod outbound;
pub mod perfetto;
pub mod protocol;
pub mod records;
pub mod relay;
pub mod session_final;
pub mod trace_file;

use crate::config::Env;
use crate::events::RunStopReason;
use crate::events::{
    OutputError, OutputKind, ToolCall, ToolEventsTarget, TraceStatus, TraceSummary, now_millis,
};
use crate::extension::{
    Exchange, Extension, Finish, RunInfo, RunOutcome, StatusLine, ToolEnding, ToolJoins,
};
use crate::ids::SessionId;
use crate::llm::{RequestDecorator, Transport};
use crate::secrets::Secrets;
use crate::sync::LockExt;
use decorate::{BridgeDecorator, IdentityDecorator};
use hints::{HintSettings, Hints};
use identity::AgentIdentity;
use protocol::{ProtocolState, Resolved, TraceProtocol};
use records::{
    AgentTraceRecord, EventType, RequestMetrics, RequestTraceIngress, ToolEvent, ToolStatus,
};
use relay::Relay;
use trace_file::TraceFile;

/// The topic frame of every tool event when neither `DYN_AGENT_TOOL_EVENTS_ZMQ_TOPIC` nor
/// one of its aliases is set.
pub const DEFAULT_TOPIC: &str = "agent-tool-events";
/// How many tool records the queue holds when `DYN_AGENT_TOOL_EVENTS_QUEUE_CAPACITY` is not
/// set or not a positive integer.
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;
/// How long queued tool events may take to leave at the end of a run.
pub const RELAY_LINGER: Duration = Duration::from_millis(250);

const ENDPOINT_VARS: [&str; 3] = [
    "DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT",
    "DYN_AGENT_TRACE_TOOL_ZMQ_ENDPOINT",
    "DYN_AGENT_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT",
];
const TOPIC_VARS: [&str; 3] = [
    "DYN_AGENT_TOOL_EVENTS_ZMQ_TOPIC",
    "DYN_AGENT_TRACE_TOOL_ZMQ_TOPIC",
    "DYN_AGENT_TRACE_TOOL_EVENTS_ZMQ_TOPIC",
];
const CAPACITY_VAR: &str = "DYN_AGENT_TOOL_EVENTS_QUEUE_CAPACITY";
/// Set for the processes a tool call starts: the request that asked for the call.
pub const PARENT_REQUEST_VAR: &str = "DYN_AGENT_PARENT_REQUEST_ID";

/// Where Channel B sends tool events.
#[derive(Debug, Clone)]
pub struct ToolEventSettings {
    /// The ZeroMQ endpoint Dynamo binds and the PUSH socket connects to
    /// (`tcp://127.0.0.1:20390`, `ipc://…`), trimmed.
    pub endpoint: String,
    /// The first frame of every message (`DYN_AGENT_TOOL_EVENTS_ZMQ_TOPIC`, default
    /// `agent-tool-events`).
    pub topic: String,
    /// Records the queue holds before it drops (always at least 1).
    pub capacity: usize,
}

/// The bridge's configuration for one run, from the `DYN_AGENT_*` variables and flags.
#[derive(Debug, Clone)]
pub struct DynamoSettings {
    /// `--dynamo-trace-protocol`: how the identity travels on requests and which shape tool
    /// records take.
    pub protocol: TraceProtocol,
    /// The agent identity every request and record carries.
    pub identity: AgentIdentity,
    /// The subagent bridge rewrote the identity.
    pub bridged: bool,
    /// Channel A applies (the model provider is Dynamo).
    pub decorate_requests: bool,
    /// Where tool events go; `None` when no endpoint variable holds a valid ZeroMQ endpoint.
    pub tool_events: Option<ToolEventSettings>,
    /// `--trace-file`: where the run's own trace is written; `None` writes none.
    pub trace_file: Option<PathBuf>,
    /// The parent's request whose tool call started this run (`DYN_AGENT_PARENT_REQUEST_ID`).
    pub parent_request_id: Option<String>,
    /// The serving hints' flags; [`DynamoSettings::from_env`] leaves them off and the caller
    /// fills them from the command line.
    pub hints: HintSettings,
    /// `--session-final`.
    pub session_final: bool,
}

impl DynamoSettings {
    /// Reads the bridge's environment. Problems that should not stop a run (a bad queue
    /// capacity) come back as warnings.
    pub fn from_env(
        env: &dyn Env,
        run_session_id: &SessionId,
        protocol: TraceProtocol,
        decorate_requests: bool,
        trace_file: Option<PathBuf>,
    ) -> (DynamoSettings, Vec<String>) {
        let mut warnings = Vec::new();
        let (identity, bridged) = AgentIdentity::resolve(env, run_session_id);
        let first = |names: &[&str]| names.iter().find_map(|name| env.get(name));
        let endpoint = first(&ENDPOINT_VARS).map(|e| e.trim().to_string()).filter(|endpoint| {
            let valid = relay::parse_endpoint(endpoint).is_ok();
            if !valid {
                warnings.push(format!(
                    "tool events disabled: '{endpoint}' is not a ZeroMQ endpoint (e.g. tcp://127.0.0.1:20390)"
                ));
            }
            valid
        });
        let tool_events = endpoint.map(|endpoint| {
            let capacity = match env.get(CAPACITY_VAR) {
                None => DEFAULT_QUEUE_CAPACITY,
                Some(raw) => raw.trim().parse::<usize>().ok().filter(|n| *n > 0).unwrap_or_else(|| {
                    warnings.push(format!(
                        "{CAPACITY_VAR}={raw} is not a positive integer; using {DEFAULT_QUEUE_CAPACITY}"
                    ));
                    DEFAULT_QUEUE_CAPACITY
                }),
            };
            ToolEventSettings {
                endpoint,
                topic: first(&TOPIC_VARS).unwrap_or_else(|| DEFAULT_TOPIC.to_string()),
                capacity,
            }
        });
        let settings = DynamoSettings {
            protocol,
            identity,
            bridged,
            decorate_requests,
            tool_events,
            trace_file,
            parent_request_id: env.get(PARENT_REQUEST_VAR),
            hints: HintSettings::default(),
            session_final: false,
        };
        (settings, warnings)
    }

    /// Whether the bridge has anything to do in this run.
    pub fn is_active(&self) -> bool {
        self.decorate_requests || self.tool_events.is_some() || self.trace_file.is_some()
    }
}

/// A finished tool call's record, waiting for the request that carries its result back.
struct HeldRecord {
    event_type: EventType,
    time: u64,
    tool: ToolEvent,
}

/// The bridge as a run extension.
pub struct DynamoBridge {
    settings: DynamoSettings,
    protocol: Arc<ProtocolState>,
    decorator: Option<Arc<BridgeDecorator>>,
    joins: ToolJoins<HeldRecord>,
    /// The model connection and model, for the end-of-session marker.
    model_server: OnceLock<(Arc<dyn Transport>, String)>,
    /// Shared with the bridges of child runs, which write through it.
    relay: Arc<OnceLock<Relay>>,
    relay_error: Arc<Mutex<Option<String>>>,
    /// Shared with the bridges of child runs.
    trace: Option<Arc<TraceFile>>,
    /// A child run's bridge: the relay and the trace file are its parent's to open and close.
    child: bool,
    /// Every record is redacted with these before it leaves (trace file and tee).
    secrets: Secrets,
    /// Start times of running tool calls: monotonic (for durations) and wall clock.
    started: Mutex<HashMap<String, (Instant, u64)>>,
}

impl DynamoBridge {
    /// Opens the trace file, if any (its error is the caller's to report).
    pub fn new(settings: DynamoSettings, secrets: Secrets) -> std::io::Result<DynamoBridge> {
        let trace = settings
            .trace_file
            .as_deref()
            .map(|path| TraceFile::create(path, secrets.clone()).map(Arc::new))
            .transpose()?;
        let protocol = Arc::new(ProtocolState::new(settings.protocol));
        let decorator = settings.decorate_requests.then(|| {
            Arc::new(BridgeDecorator {
                identity: IdentityDecorator::new(settings.identity.clone(), protocol.clone()),
                hints: Arc::new(Hints::new(settings.hints.clone())),
                sent: AtomicU64::new(0),
            })
        });
        Ok(DynamoBridge {
            settings,
            protocol,
            decorator,
            joins: ToolJoins::default(),
            model_server: OnceLock::new(),
            relay: Arc::new(OnceLock::new()),
            relay_error: Arc::new(Mutex::new(None)),
            trace,
            child: false,
            secrets,
            started: Mutex::new(HashMap::new()),
        })
    }

    /// The bridge of a child run: the child's own trajectory, its parent this run's, over
    /// this run's relay and trace file; its requests name the request whose response asked
    /// for the child (`parent_request_id`).
    fn child_bridge(&self, child: crate::extension::ChildOf<'_>) -> DynamoBridge {
        let mut settings = self.settings.clone();
        settings.identity = AgentIdentity {
            trajectory_id: child.session_id.to_string(),
            parent_trajectory_id: Some(self.settings.identity.trajectory_id.clone()),
            ..self.settings.identity.clone()
        };
        settings.session_final = false;
        settings.parent_request_id = self.joins.source();
        let decorator = settings.decorate_requests.then(|| {
            Arc::new(BridgeDecorator {
                identity: IdentityDecorator::new(settings.identity.clone(), self.protocol.clone()),
                hints: Arc::new(Hints::new(settings.hints.clone())),
                sent: AtomicU64::new(0),
            })
        });
        DynamoBridge {
            settings,
            protocol: self.protocol.clone(),
            decorator,
            joins: ToolJoins::default(),
            model_server: OnceLock::new(),
            relay: self.relay.clone(),
            relay_error: self.relay_error.clone(),
            trace: self.trace.clone(),
            child: true,
            secrets: self.secrets.clone(),
            started: Mutex::new(HashMap::new()),
        }
    }

    fn publish(&self, event_type: EventType, time: u64, tool: &ToolEvent) {
        let identity = &self.settings.identity;
        if let Some(trace) = &self.trace {
            trace.write(&AgentTraceRecord::tool(event_type, time, identity, tool));
        }
        let Some(relay) = self.relay.get() else {
            return;
        };
        let Some(resolved) = self.protocol.for_tool_records() else {
            return;
        };
        relay.publish_with(|| {
            let tool = &tool.for_ingest();
            match resolved {
                Resolved::Agent => records::redacted_msgpack(
                    &AgentTraceRecord::tool(event_type, time, identity, tool),
                    &self.secrets,
                ),
                Resolved::Request => records::redacted_msgpack(
                    &RequestTraceIngress::tool(event_type, time, identity, tool),
                    &self.secrets,
                ),
            }
        });
    }
}

impl Extension for DynamoBridge {
    fn status(&self) -> Vec<StatusLine> {
        let tool_events = self
            .settings
            .tool_events
            .as_ref()
            .map(|t| ToolEventsTarget {
                endpoint: t.endpoint.clone(),
                topic: t.topic.clone(),
                queue_capacity: t.capacity,
            });
        vec![StatusLine::TraceStatus(TraceStatus {
            protocol: self.settings.protocol.name(),
            agent_context: json!(self.settings.identity),
            subagent_bridge: self.settings.bridged,
            tool_events,
            trace_file: self.settings.trace_file.clone(),
            resolved_protocol: self.protocol.resolved().map(Resolved::name),
        })]
    }

    fn decorator(&self) -> Option<Arc<dyn RequestDecorator>> {
        self.decorator
            .clone()
            .map(|d| d as Arc<dyn RequestDecorator>)
    }

    fn child_env(&self) -> Vec<(String, Option<String>)> {
        let mut env = self.settings.identity.child_env();
        env.push((PARENT_REQUEST_VAR.into(), None));
        env
    }

    fn call_env(&self, _call: &ToolCall) -> Vec<(String, Option<String>)> {
        match self.joins.source() {
            Some(source) => vec![(PARENT_REQUEST_VAR.into(), Some(source))],
            None => Vec::new(),
        }
    }

    fn run_started(&self, info: RunInfo<'_>) {
        let _ = self
            .model_server
            .set((info.transport.clone(), info.model.to_string()));
    }

    fn request_accepted(&self, request_id: &str) {
        for mut held in self.joins.consumed(request_id) {
            held.tool.consumer_request_id = Some(request_id.to_string());
            self.publish(held.event_type, held.time, &held.tool);
        }
    }

    fn for_child(&self, child: crate::extension::ChildOf<'_>) -> Option<Arc<dyn Extension>> {
        self.settings
            .is_active()
            .then(|| Arc::new(self.child_bridge(child)) as Arc<dyn Extension>)
    }

    fn start(&self) {
        let Some(settings) = &self.settings.tool_events else {
            return;
        };
        if self.child {
            return;
        }
        match Relay::start(&settings.endpoint, &settings.topic, settings.capacity) {
            Ok(relay) => {
                let _ = self.relay.set(relay);
            }
            Err(err) => {
                *self.relay_error.lock_or_recover() = Some(err.to_string());
            }
        }
    }

    fn exchange_finished(&self, exchange: &Exchange) {
        if let (Some(decorator), Some(usage)) = (&self.decorator, &exchange.usage) {
            decorator.hints.completed(usage.completion_tokens);
        }
        let Some(trace) = &self.trace else { return };
        let usage = exchange.usage.as_ref();
        let request_id = exchange
            .response_id
            .as_deref()
            .map(|id| id.strip_prefix("chatcmpl-").unwrap_or(id).to_string())
            .or_else(|| exchange.x_request_id.clone())
            .unwrap_or_default();
        let metrics = RequestMetrics {
            request_id,
            x_request_id: exchange.x_request_id.clone(),
            model: exchange.model.clone(),
            input_tokens: usage.map(|u| u.prompt_tokens),
            output_tokens: usage.map(|u| u.completion_tokens),
            cached_tokens: usage.map(crate::llm::WireUsage::cached),
            request_received_ms: Some(exchange.started_unix_ms),
            ttft_ms: exchange.ttft_ms,
            total_time_ms: Some(exchange.total_ms),
            parent_request_id: self.settings.parent_request_id.clone(),
        };
        // Both parts rounded down, so the end never lands after a tool call it caused.
        #[allow(
            clippy::cast_sign_loss,
            reason = "a measured duration is never negative"
        )]
        let ended_unix_ms = exchange.started_unix_ms + exchange.total_ms.floor() as u64;
        trace.write(&AgentTraceRecord {
            head: records::RecordHead {
                schema: records::AGENT_SCHEMA,
                event_type: EventType::RequestEnd,
                event_time_unix_ms: ended_unix_ms,
            },
            event_source: "harness",
            agent_context: &self.settings.identity,
            request: Some(metrics),
            tool: None,
            control: None,
        });
    }

    fn noted(&self, note: &crate::extension::RunNote) {
        let Some(trace) = &self.trace else { return };
        let mut record = serde_json::json!({"type": note.kind});
        if let (Some(into), serde_json::Value::Object(fields)) =
            (record.as_object_mut(), &note.data)
        {
            into.extend(fields.clone());
        }
        trace.write(&AgentTraceRecord {
            head: records::RecordHead {
                schema: records::AGENT_SCHEMA,
                event_type: EventType::Control,
                event_time_unix_ms: note.at_unix_ms,
            },
            event_source: "harness",
            agent_context: &self.settings.identity,
            request: None,
            tool: None,
            control: Some(record),
        });
    }

    fn tool_started(&self, call: &ToolCall) {
        let now = now_millis();
        self.started
            .lock_or_recover()
            .insert(call.id.to_string(), (Instant::now(), now));
        let event = ToolEvent {
            tool_call_id: call.id.to_string(),
            tool_class: records::tool_class(&call.name),
            started_at_unix_ms: Some(now),
            ended_at_unix_ms: None,
            status: Some(ToolStatus::Running),
            duration_ms: None,
            output_bytes: None,
            error_type: None,
            source_request_id: self.joins.source(),
            consumer_request_id: None,
            parent_request_id: self.settings.parent_request_id.clone(),
        };
        self.publish(EventType::ToolStart, now, &event);
    }

    fn tool_ended(&self, call: &ToolCall, ending: ToolEnding<'_>) {
        let now = now_millis();
        let start = self.started.lock_or_recover().remove(call.id.as_str());
        let (started_at, duration_ms) = match start {
            Some((instant, wall)) => (
                wall,
                (instant.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
            ),
            None => (now, 0.0),
        };
        let (event_type, status, error_type) = if ending.aborted || ending.timed_out {
            let kind = if ending.timed_out {
                "timeout"
            } else {
                "aborted"
            };
            (
                EventType::ToolError,
                ToolStatus::Cancelled,
                Some(kind.to_string()),
            )
        } else if ending.is_error {
            (
                EventType::ToolError,
                ToolStatus::Error,
                Some("tool_error".to_string()),
            )
        } else {
            (EventType::ToolEnd, ToolStatus::Succeeded, None)
        };
        let event = ToolEvent {
            tool_call_id: call.id.to_string(),
            tool_class: records::tool_class(&call.name),
            started_at_unix_ms: Some(started_at),
            ended_at_unix_ms: Some(now),
            status: Some(status),
            duration_ms: Some(duration_ms),
            output_bytes: Some(ending.result.text_len() as u64),
            error_type,
            source_request_id: self.joins.source(),
            consumer_request_id: None,
            parent_request_id: self.settings.parent_request_id.clone(),
        };
        // Published once the next request carries the result back (or the run ends).
        self.joins.hold(HeldRecord {
            event_type,
            time: now,
            tool: event,
        });
    }

    fn finish(&self, outcome: RunOutcome<'_>) -> Finish<'_> {
        let stop = outcome.stop_reason;
        Box::pin(async move {
            for held in self.joins.drain() {
                self.publish(held.event_type, held.time, &held.tool);
            }
            if self.child {
                return Vec::new();
            }
            let session_final = self.mark_session_final(stop).await;
            let hints_refused = self
                .decorator
                .as_ref()
                .map(|d| d.hints.refused())
                .unwrap_or_default();
            let mut lines: Vec<StatusLine> = hints_refused
                .iter()
                .map(|path| {
                    StatusLine::Warning(format!(
                        "Dynamo refused {path} (HTTP 400); this run's requests went on without it"
                    ))
                })
                .collect();
            let trace_error = self.trace.as_deref().and_then(TraceFile::error);
            let counts = match self.relay.get() {
                Some(relay) => Some(relay.close(RELAY_LINGER).await),
                None => None,
            };
            lines.push(StatusLine::TraceSummary(TraceSummary {
                resolved_protocol: self.protocol.resolved().map(Resolved::name),
                llm_requests: self
                    .decorator
                    .as_ref()
                    .map_or(0, |d| d.sent.load(Ordering::SeqCst)),
                tool_events_sent: counts.map_or(0, |c| c.sent),
                tool_events_dropped: counts.map_or(0, |c| c.dropped),
                tool_events_unconfirmed: counts.map_or(0, |c| c.unconfirmed),
                tool_events_error: self.relay_error.lock_or_recover().clone(),
                trace_file_error: trace_error.clone(),
                hints_refused,
                session_final,
            }));
            if let (Some(error), Some(path)) = (trace_error, &self.settings.trace_file) {
                lines.push(StatusLine::OutputError(OutputError::new(
                    OutputKind::TraceFile,
                    path,
                    error,
                )));
            }
            lines
        })
    }
}

impl DynamoBridge {
    /// Sends the end-of-session marker when asked for and due: the run reached the server
    /// and was not stopped by a signal (which must end the process at once).
    async fn mark_session_final(&self, stop: RunStopReason) -> Option<crate::events::SessionFinal> {
        if !self.settings.session_final || stop == RunStopReason::Aborted {
            return None;
        }
        let (transport, model) = self.model_server.get()?;
        let last = self.joins.source()?;
        let mut request =
            session_final::request(model, self.settings.hints.tenant.as_deref(), &last);
        if let Some(decorator) = &self.decorator {
            decorator
                .identity
                .decorate(&mut request.body, &mut request.headers);
        }
        Some(session_final::send(transport.clone(), request).await)
    }
}
