//! The JSONL event stream, schema version 1: the whole wire contract, in this file (the header
//! and the [`Event`] enum) and its parts: `message.rs` (the conversation's messages, which
//! several events carry), `status.rs` (the status lines), `outcome.rs` (how a run ends and its
//! totals), `serving.rs`, `dynamo.rs` and `output.rs`.
//!
//! Every line worker prints on stdout is one of the types below, serialized as one JSON object
//! followed by `\n`. The first line is a [`SessionHeader`]; every later line is an [`Event`]
//! wrapped by the [`Emitter`] with `sessionId` and `timestamp` (RFC 3339, UTC, milliseconds).
//!
//! Names and shapes follow the stream agentic-pi consumers already parse (Pi's agent events),
//! with three deliberate differences: `message_update` carries only the delta (never the
//! cumulative message, so output stays linear in content), `tool_execution_end` carries
//! `durationMs`, and the run always ends with `usage_snapshot`.
//!
//! Compatibility rule: fields are only ever added. A change that removes or retypes a field
//! bumps [`EVENT_SCHEMA_VERSION`], which the header announces as `eventSchema`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

mod control;
mod dynamo;
mod emitter;
mod mcp;
mod message;
mod outcome;
mod output;
mod schema;
mod serving;
mod status;
mod subagents;

pub use control::{
    ApprovalBy, ApprovalRequested, ApprovalResolved, ControlAbort, ControlAck, Heartbeat,
    HookDecision, HookResult,
};
pub use dynamo::{SessionFinal, ToolEventsTarget, TraceStatus, TraceSummary};
pub use emitter::{CollectorSink, Emitter, EventSink, StdoutSink, now_millis, now_rfc3339};
pub use mcp::{McpServerState, McpServerStatus, McpStatus};
pub use message::*;
pub use outcome::*;
pub use output::{OutputError, OutputKind};
pub use schema::json_schema;
pub use serving::{Serving, ServingTotals};
pub use status::*;
pub use subagents::{SubagentEnd, SubagentStart, SubagentUsage};

/// Announced in the header as `eventSchema`.
pub const EVENT_SCHEMA_VERSION: u32 = 1;
/// The header's `version`: the session-file format generation shared with Pi.
pub const SESSION_FORMAT_VERSION: u32 = 3;
/// The `api` value of assistant messages from chat-completions servers (Anthropic's are
/// `anthropic-messages`).
pub const ASSISTANT_API: &str = "openai-completions";

/// The first line of every stream. It has no `sessionId` envelope of its own: `id` is it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader<'a> {
    /// Always `session`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session-file format generation, shared with Pi (currently 3); the event schema version
    /// is `eventSchema`, not this.
    pub version: u32,
    /// The session id (`--session-id`, else a new UUIDv7); every later line carries it as
    /// `sessionId`.
    pub id: &'a str,
    /// When the run started: RFC 3339, UTC, milliseconds.
    pub timestamp: &'a str,
    /// The working directory of the run (`--cwd`), where tools start.
    pub cwd: &'a str,
    /// The program that wrote the stream.
    pub producer: Producer,
    /// The event schema version of the lines that follow (1); it changes only when a field is
    /// removed or retyped.
    pub event_schema: u32,
    /// The session file this run appends to (absent with `--no-session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<&'a str>,
    /// Set when the run continues an earlier session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<&'a ResumedFrom>,
}

/// The session a run continues.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumedFrom {
    /// Its file.
    pub path: String,
    /// Messages loaded from it.
    pub entries: usize,
    /// Tool calls the earlier run left without a result, answered as interrupted (not run
    /// again).
    pub interrupted: usize,
}

impl<'a> SessionHeader<'a> {
    /// The header of a run of session `id` started at `timestamp` in `cwd`; `sessionFile` and
    /// `resumedFrom` start unset.
    pub fn new(id: &'a str, timestamp: &'a str, cwd: &'a str) -> Self {
        SessionHeader {
            kind: "session",
            version: SESSION_FORMAT_VERSION,
            id,
            timestamp,
            cwd,
            producer: Producer::current(),
            event_schema: EVENT_SCHEMA_VERSION,
            session_file: None,
            resumed_from: None,
        }
    }
}

/// The program that wrote the stream (`session.producer`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Producer {
    /// Always `worker`.
    pub name: &'static str,
    /// The worker release that wrote the stream (`0.1.0`).
    pub version: &'static str,
}

impl Producer {
    /// This build of worker.
    pub fn current() -> Self {
        Producer {
            name: "worker",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// Every line after the header. The `type` field is the variant name in snake_case; fields
/// are camelCase.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event<'a> {
    /// Where tools run; the first line after the header.
    SandboxStatus(&'a SandboxStatus),
    /// A subsystem's startup status (`extension` names it: `github`, `web-search`,
    /// `file-search`, `telemetry`, ...).
    ExtensionStatus(&'a ExtensionStatus),
    /// The Agent Skills found and offered to the model.
    SkillsStatus(&'a SkillsStatus),
    /// The Dynamo trace bridge's settings, right after the header.
    TraceStatus(&'a TraceStatus),
    /// The Dynamo trace bridge's counters, right before `usage_snapshot`.
    TraceSummary(&'a TraceSummary),
    /// The agent loop starts (after the status lines and model discovery); a run that prints it
    /// always prints `agent_end`.
    AgentStart,
    /// A turn begins: one model request (with its retries), then the tool calls it asks for.
    TurnStart {
        /// The turn's number in this run, from 0; its `turn_end` carries the same number.
        turn_index: u32,
    },
    /// A message begins. A user message or a tool result is already whole here (and again in
    /// `message_end`); an assistant message starts empty (`content: []`, `stopReason: pending`) and
    /// streams as `message_update` lines.
    MessageStart {
        /// The message, tagged by `role`.
        message: &'a Message,
    },
    /// One streamed piece of the assistant message being generated.
    MessageUpdate {
        /// The piece: the block it belongs to (`contentIndex`) and what arrived.
        assistant_message_event: &'a AssistantMessageEvent<'a>,
    },
    /// A message is complete, with all its content; an assistant message also has its `usage` and
    /// its final `stopReason` here.
    MessageEnd {
        /// The whole message, tagged by `role`.
        message: &'a Message,
    },
    /// A tool call starts running; calls start in the order the model made them.
    ToolExecutionStart {
        /// The call's `id`, as in the assistant message's `toolCall` block.
        tool_call_id: &'a str,
        /// The tool called (`bash`, `read`, ...).
        tool_name: &'a str,
        /// The call's arguments as parsed from the model's JSON (the raw text, as a string, when it
        /// was not valid JSON).
        args: &'a Value,
    },
    /// Progress of a running tool. For `bash`, the text is the output produced since the
    /// previous update (not the whole output so far).
    ToolExecutionUpdate {
        /// The call's `id`, as in the assistant message's `toolCall` block.
        tool_call_id: &'a str,
        /// The tool called.
        tool_name: &'a str,
        /// The call's arguments, as in `tool_execution_start`.
        args: &'a Value,
        /// The progress, shaped as a tool result.
        partial_result: &'a ToolResult,
    },
    /// A tool call finished; calls that run concurrently end in the order they finish.
    ToolExecutionEnd {
        /// The call's `id`, as in the assistant message's `toolCall` block.
        tool_call_id: &'a str,
        /// The tool called.
        tool_name: &'a str,
        /// What the tool returned: the text the model reads and optional `details`.
        result: &'a ToolResult,
        /// True when the call failed (an unknown tool, invalid arguments, the tool's own error, an
        /// abort); `result` says why.
        is_error: bool,
        /// Wall-clock time the call took, in milliseconds.
        duration_ms: u64,
    },
    /// A turn is over: its assistant message and the results of the tool calls it ran.
    TurnEnd {
        /// The number of the `turn_start` this ends.
        turn_index: u32,
        /// The turn's assistant message, as in its `message_end`.
        message: &'a Message,
        /// The `toolResult` messages of the calls this turn ran, in call order; empty when it ran
        /// none.
        tool_results: &'a [Message],
        /// How the server served this turn's request (absent when it reported nothing).
        #[serde(skip_serializing_if = "Option::is_none")]
        serving: Option<&'a Serving>,
    },
    /// A model request failed with a retryable error and will be sent again after `delayMs`.
    AutoRetryStart {
        /// Which retry this is, from 1.
        attempt: u32,
        /// The most retries one request may have (`--max-retries`).
        max_attempts: u32,
        /// The wait before the retry, in milliseconds: exponential backoff with jitter, or the
        /// server's `Retry-After` (capped).
        delay_ms: u64,
        /// The failure being retried, as one line.
        error_message: &'a str,
    },
    /// The retries of a model request are over: a retry got an answer, or worker gave up.
    AutoRetryEnd {
        /// True when a retry got an answer; false when the retries ran out, the error could not be
        /// retried or the run was stopped.
        success: bool,
        /// How many retries were made.
        attempt: u32,
        /// The error worker gave up on; absent when `success` is true.
        #[serde(skip_serializing_if = "Option::is_none")]
        final_error: Option<&'a str>,
    },
    /// The turn limit (`--max-steps` / `--max-turns`) stopped a model that wanted to go on;
    /// agentic-pi's name for it, followed by `limit_reached`.
    MaxStepsReached {
        /// The turn limit that was reached.
        max_steps: u32,
        /// Turns run, as `usage_snapshot.stats.turns` counts them.
        steps: u32,
    },
    /// The conversation is being compacted: `threshold` (the next request would not fit) or
    /// `overflow` (the server refused one for its length).
    CompactionStart {
        /// `threshold` or `overflow`.
        reason: &'a str,
        /// The estimated size of the conversation, system prompt included, in tokens.
        tokens_before: u64,
    },
    /// The older part of the conversation is now `summary` (a user message); the newest turn
    /// is kept as it was. Token counts are estimates.
    CompactionEnd {
        /// `threshold` or `overflow`, as in `compaction_start`.
        reason: &'a str,
        /// The estimated size before compaction, in tokens, as in `compaction_start`.
        tokens_before: u64,
        /// The estimated size after compaction, system prompt included, in tokens.
        tokens_after: u64,
        /// The summary the model wrote of the older part (the user message that replaces it starts
        /// with a fixed note before this text).
        summary: &'a str,
    },
    /// Part of an input was left out: a context file cut to its cap (before `agent_start`),
    /// or a resumed session's last line, cut mid-write by a crash (after `sandbox_status`).
    /// Its `message` is also a warning on stderr.
    InputTruncated(&'a InputTruncated),
    /// 80% of a budget is used: the next request carries `message` as a user message.
    BudgetWarning(&'a BudgetWarning),
    /// A configured limit stopped the run (exit code 3).
    LimitReached(&'a LimitReached),
    /// Why the run failed (exit code 1); always followed by `agent_end` (when `agent_start`
    /// was printed) and `usage_snapshot`.
    FatalError {
        /// The failure: its `kind`, its class `name` and a `message`.
        error: &'a FatalError,
    },
    /// The run is over: the whole conversation and why it stopped. Printed once `agent_start` was.
    AgentEnd {
        /// The whole conversation as it ends: a resumed session's messages first; after a
        /// compaction, the summary in place of the older part.
        messages: &'a [Message],
        /// Why the run ended; it decides the exit code.
        stop_reason: RunStopReason,
        /// Always `false`: a run retries inside itself (`auto_retry_start`) and ends once.
        will_retry: bool,
        /// The final answer as JSON, valid against `--output-schema`.
        #[serde(skip_serializing_if = "Option::is_none")]
        structured_output: Option<&'a Value>,
    },
    /// The answer to one line of `--control stdin`.
    ControlAck(&'a ControlAck),
    /// An `abort` command stopped the run; the terminal events follow.
    ControlAbort(&'a ControlAbort),
    /// A tool call waits for an approval (`--approve-tools`, or a hook that asked).
    ApprovalRequested(&'a ApprovalRequested),
    /// An approval was resolved: allowed or denied, and by whom.
    ApprovalResolved(&'a ApprovalResolved),
    /// A `--pre-tool-hook` program decided on a call.
    HookResult(&'a HookResult),
    /// Nothing else was written for `--heartbeat`.
    Heartbeat(&'a Heartbeat),
    /// The run's MCP servers, each ready or not, and why.
    McpStatus(&'a McpStatus),
    /// A `task` call started a child run.
    SubagentStart(&'a SubagentStart),
    /// A child run is over; its usage is counted in the run's totals.
    SubagentEnd(&'a SubagentEnd),
    /// An output the run was asked to write (`--trace-file`, `--record`,
    /// `--output-last-message`, the session file) is incomplete: once per output, after
    /// `agent_end` and right before `usage_snapshot`; the exit code is 4.
    OutputError(&'a OutputError),
    /// Always the last line of a run that printed a header.
    UsageSnapshot {
        /// The run's totals.
        stats: &'a UsageStats,
    },
}

#[cfg(test)]
mod tests;
