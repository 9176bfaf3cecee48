//! What rides along with a run without the loop knowing what it does: the Dynamo trace bridge,
//! GitHub tools, web and file search, skills, telemetry.
//!
//! An extension can print status lines after the header, offer tools, shape model requests,
//! change the environment of processes the run starts, watch model exchanges and tool calls,
//! and finish (flush, within its own bounded time) with lines printed before
//! `usage_snapshot`. Every hook has a do-nothing default.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use futures_util::future::BoxFuture;

use crate::events::{
    AssistantMessage, Emitter, ExtensionStatus, FatalError, OutputError, RunStopReason, Serving,
    SkillsStatus, ToolCall, ToolResult, TraceStatus, TraceSummary, UsageStats,
};
use crate::llm::{RequestDecorator, Transport, WireUsage};
use crate::sync::LockExt;
use crate::tools::Tool;

/// A line an extension adds to the stream.
#[derive(Debug, Clone)]
pub enum StatusLine {
    /// An `extension_status` line.
    Extension(ExtensionStatus),
    /// A `skills_status` line.
    Skills(SkillsStatus),
    /// A `trace_status` line (the Dynamo trace bridge).
    TraceStatus(TraceStatus),
    /// A `trace_summary` line (the Dynamo trace bridge, at the end).
    TraceSummary(TraceSummary),
    /// An output the extension writes failed: printed as `output_error` with the others,
    /// and the run exits 4.
    OutputError(OutputError),
    /// Not a line: a warning for stderr (via `RunResult::warnings`).
    Warning(String),
}

/// One model request that got a successful response, as measured by the loop.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The request's `x-request-id` header; `None` when it was sent without one.
    pub x_request_id: Option<String>,
    /// The server's response id (`chatcmpl-...`), when it sent one.
    pub response_id: Option<String>,
    /// The model id the response named, else the one requested.
    pub model: String,
    /// When the request was sent, in milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// When the request was sent, on the monotonic clock.
    pub started: Instant,
    /// Milliseconds from sending the request to the first streamed content; `None` when none
    /// came.
    pub ttft_ms: Option<f64>,
    /// Milliseconds from sending the request to the end of its response.
    pub total_ms: f64,
    /// The token usage the server reported, as sent; `None` when it sent none.
    pub usage: Option<WireUsage>,
    /// What the server reported about serving it (worker, timing, cached tokens).
    pub serving: Option<Serving>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy)]
pub struct ToolEnding<'a> {
    /// The result the model is given, secrets already redacted.
    pub result: &'a ToolResult,
    /// Whether the result is an error (`isError: true`).
    pub is_error: bool,
    /// Stopped by an abort or the run's timeout.
    pub aborted: bool,
    /// Stopped by the tool's own timeout (bash).
    pub timed_out: bool,
}

/// What the run is about, once the model is known.
#[derive(Clone, Copy)]
pub struct RunInfo<'a> {
    /// The run's session id.
    pub session_id: &'a str,
    /// The provider part of `--model` (`dynamo`, `openai`, a `--providers` name).
    pub provider: &'a str,
    /// The model id sent to the server.
    pub model: &'a str,
    /// The user's prompt, as read from stdin or the command line.
    pub prompt: &'a str,
    /// The model server connection (for an extension's own request to it).
    pub transport: &'a Arc<dyn Transport>,
}

/// How the run ended.
#[derive(Debug, Clone, Copy)]
pub struct RunOutcome<'a> {
    /// Why the run stopped.
    pub stop_reason: RunStopReason,
    /// The fatal error that ended the run; `None` when it ended without one.
    pub fatal: Option<&'a FatalError>,
    /// The run's totals, as `usage_snapshot.stats` reports them.
    pub stats: &'a UsageStats,
}

/// Whether a tool call may run, as an extension decides before it starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Run it with these arguments (the call's own, or ones a hook replaced them with; the
    /// loop checks replaced ones against the tool's schema again).
    Run(serde_json::Value),
    /// Do not run it; the reason is the tool error the model reads.
    Refuse(String),
}

/// A record of the run's control (an answer to a controller, an approval, a hook's decision)
/// that the run keeps beside its conversation: in the session file, as an OTEL span event and
/// in the trace file. An extension that writes such records hands them over with
/// [`Extension::take_notes`]; the loop redacts them and gives them to every extension
/// ([`Extension::noted`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunNote {
    /// The record's `type`, as on stdout (`control_ack`, `approval_resolved`, ...).
    pub kind: String,
    /// When it was written, in Unix milliseconds.
    pub at_unix_ms: u64,
    /// The record's fields, as on stdout.
    pub data: serde_json::Value,
}

/// A child run, as an extension that rides into it sees it.
#[derive(Debug, Clone, Copy)]
pub struct ChildOf<'a> {
    /// The child's session id.
    pub session_id: &'a str,
    /// How deep it is (a child of the top run is 1).
    pub depth: u32,
    /// The call of the parent's that started it (a `task` call).
    pub call_id: &'a str,
}

/// What [`Extension::finish`] returns: the future of the lines it prints at the end.
pub type Finish<'a> = BoxFuture<'a, Vec<StatusLine>>;

/// Something that rides along with a run: status lines, tools, request decoration, child
/// environment, and hooks on the run's progress. Every method has a do-nothing default.
pub trait Extension: Send + Sync {
    /// Lines printed right after the header.
    fn status(&self) -> Vec<StatusLine> {
        Vec::new()
    }

    /// A section for the end of the system prompt (the skills it may use, ...).
    fn system_prompt(&self) -> Option<String> {
        None
    }

    /// Tools offered to the model (still subject to `--tools`).
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    /// Adjusts each model request (body and headers) before it is sent; `None` leaves requests
    /// as they are.
    fn decorator(&self) -> Option<Arc<dyn RequestDecorator>> {
        None
    }

    /// Environment changes for processes the run starts: `Some` sets, `None` removes.
    fn child_env(&self) -> Vec<(String, Option<String>)> {
        Vec::new()
    }

    /// Environment changes for the processes one tool call starts, on top of
    /// [`Extension::child_env`].
    fn call_env(&self, _call: &ToolCall) -> Vec<(String, Option<String>)> {
        Vec::new()
    }

    /// Called inside the async runtime right after the header, before anything else.
    fn start(&self) {}

    /// Work to do before the first model request (connecting to a server, minting a
    /// token), run concurrently with the rest of startup: model discovery and every other
    /// extension's `prepare`. The first request waits for all of them; a run stopped
    /// meanwhile drops them. A failure is the extension's to report (a status line, a tool
    /// error later), never the run's.
    fn prepare(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The context the run's tool calls start from, given once it exists (before
    /// [`Extension::prepare`]): an extension that starts processes of its own (MCP servers)
    /// starts them as the run's commands start (its sandbox, its leftovers, reaped with it).
    fn tool_context(&self, _ctx: &crate::tools::ToolContext) {}

    /// Something the run cannot go on without is gone (a required MCP server that is not
    /// ready): the reason. Read after [`Extension::prepare`] (the run then ends before its
    /// first request, exit 2) and at every safe point (the run fails, exit 1).
    fn broken(&self) -> Option<String> {
        None
    }

    /// Tools that came, changed or went since the last call (an MCP server ready late, one
    /// that changed its list or died): the extension's whole set of such tools, replacing the
    /// set it gave before, already narrowed to what the run allows; `None` when nothing
    /// changed. Awaited before every model request. These come on top of
    /// [`Extension::tools`], which are fixed when the run starts.
    fn changed_tools(&self) -> BoxFuture<'_, Option<Vec<Arc<dyn Tool>>>> {
        Box::pin(std::future::ready(None))
    }

    /// The model is known and the loop is about to begin.
    fn run_started(&self, _info: RunInfo<'_>) {}

    /// A turn begins; `_turn` is its `turn_index`, from 0.
    fn turn_started(&self, _turn: u32) {}

    /// The turn's assistant message is complete (or failed); `requested_at` is when its first
    /// request was sent.
    fn assistant_finished(
        &self,
        _turn: u32,
        _message: &AssistantMessage,
        _requested_at: SystemTime,
    ) {
    }

    /// A turn ended (`turn_end` was printed); `_turn` is its `turn_index`.
    fn turn_ended(&self, _turn: u32) {}

    /// The server accepted a model request of the conversation (a 2xx status); `request_id`
    /// is its `x-request-id`. Compaction summaries are not reported.
    fn request_accepted(&self, _request_id: &str) {}

    /// A model request got a complete, successful response.
    fn exchange_finished(&self, _exchange: &Exchange) {}

    /// A tool call is about to run (`tool_execution_start` was printed).
    fn tool_started(&self, _call: &ToolCall) {}

    /// A tool call ended (`tool_execution_end` was printed).
    fn tool_ended(&self, _call: &ToolCall, _ending: ToolEnding<'_>) {}

    /// Counters for `usage_snapshot.stats`, read once at the end of the run.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The stream is open (right after the status lines): an extension that writes lines of
    /// its own while the run goes on (answers to a controller, heartbeats) keeps `stream`.
    fn attach(&self, _stream: &Emitter) {}

    /// This extension's part in a child run of this run (`None`: it has none). The child's
    /// instance writes where this one does (the same trace, the same relay) under the child's
    /// identity, linked to this run; closing what they share is this one's job.
    fn for_child(&self, _child: ChildOf<'_>) -> Option<Arc<dyn Extension>> {
        None
    }

    /// Who decides the approvals tools ask for themselves (`RunServices::approve`); the first
    /// extension that has one does. Without any, every such approval is refused.
    fn approver(&self) -> Option<Arc<dyn crate::tools::Approver>> {
        None
    }

    /// Messages for the model from outside the run (a controller's steering), taken at the safe
    /// point before the next model request; each becomes a user message.
    fn take_steering(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether steering waits to be taken: tool calls of the current message that have not
    /// started yet are skipped for it.
    fn steering_waiting(&self) -> bool {
        false
    }

    /// A message to go on with when the run would otherwise end (a controller's follow-up).
    fn take_follow_up(&self) -> Option<String> {
        None
    }

    /// Whether `call` may run, and with which arguments (`input`: the call's, or what an
    /// earlier extension replaced them with). Every extension must admit a call; the future
    /// is dropped if the run is stopped meanwhile.
    fn admit<'a>(
        &'a self,
        _call: &'a ToolCall,
        input: serde_json::Value,
    ) -> BoxFuture<'a, Admission> {
        Box::pin(async move { Admission::Run(input) })
    }

    /// A call's result is final (after `tool_execution_end`); for audit, it cannot change it.
    fn after_call<'a>(&'a self, _call: &'a ToolCall, _ending: ToolEnding<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Records written since the last call, oldest first; the loop takes them at its safe
    /// points, after each batch of tool calls and at the end.
    fn take_notes(&self) -> Vec<RunNote> {
        Vec::new()
    }

    /// A record another extension wrote (already redacted), to keep where this one keeps the
    /// run's records.
    fn noted(&self, _note: &RunNote) {}

    /// The loop is over: the run takes no more input. Called before the closing lines.
    fn run_ending(&self) {}

    /// Called once at the end, at the same time as every other extension's `finish` (the run
    /// waits for the longest); the lines are printed before `usage_snapshot`, in the
    /// extensions' order.
    fn finish(&self, _outcome: RunOutcome<'_>) -> Finish<'_> {
        Box::pin(async { Vec::new() })
    }
}

/// The join keys of tool records: the request whose response asked for a call (`source`), and
/// the next request the server accepted, which carried the call's result back (`consumer`).
///
/// Calls come only from the response of the latest accepted request, so that request is the
/// source of every call that starts. A finished call's record is held (`hold`) until the next
/// request is accepted (`consumed`), or the run ends (`drain`, no consumer).
pub struct ToolJoins<T> {
    state: std::sync::Mutex<JoinState<T>>,
}

struct JoinState<T> {
    source: Option<String>,
    held: Vec<T>,
}

impl<T> Default for ToolJoins<T> {
    fn default() -> Self {
        ToolJoins {
            state: std::sync::Mutex::new(JoinState {
                source: None,
                held: Vec::new(),
            }),
        }
    }
}

impl<T> ToolJoins<T> {
    /// The request the calls starting now came from.
    pub fn source(&self) -> Option<String> {
        self.state.lock_or_recover().source.clone()
    }

    /// A finished call waits for the request that carries its result back.
    pub fn hold(&self, record: T) {
        self.state.lock_or_recover().held.push(record);
    }

    /// A request was accepted: it carried every held result, and is the source of what
    /// comes next. Returns the held records, oldest first.
    pub fn consumed(&self, request_id: &str) -> Vec<T> {
        let mut state = self.state.lock_or_recover();
        state.source = Some(request_id.to_string());
        std::mem::take(&mut state.held)
    }

    /// The run is over: what no request carried back.
    pub fn drain(&self) -> Vec<T> {
        std::mem::take(&mut self.state.lock_or_recover().held)
    }
}

#[cfg(test)]
mod tests;
