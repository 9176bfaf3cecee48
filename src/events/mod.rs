//! The JSONL event stream, schema version 1: the whole wire contract, in this file and
//! `message.rs` (the conversation's messages, which several events carry).
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

mod dynamo;
mod emitter;
mod message;
mod output;
mod schema;
mod serving;

pub use dynamo::{SessionFinal, ToolEventsTarget, TraceStatus, TraceSummary};
pub use emitter::{CollectorSink, Emitter, EventSink, StdoutSink, now_millis, now_rfc3339};
pub use message::*;
pub use output::{OutputError, OutputKind};
pub use schema::json_schema;
pub use serving::{Serving, ServingTotals};

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
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub version: u32,
    pub id: &'a str,
    pub timestamp: &'a str,
    pub cwd: &'a str,
    pub producer: Producer,
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

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Producer {
    pub name: &'static str,
    pub version: &'static str,
}

impl Producer {
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
    AgentStart,
    TurnStart {
        turn_index: u32,
    },
    MessageStart {
        message: &'a Message,
    },
    /// One streamed piece of the assistant message being generated.
    MessageUpdate {
        assistant_message_event: &'a AssistantMessageEvent<'a>,
    },
    MessageEnd {
        message: &'a Message,
    },
    ToolExecutionStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
    },
    /// Progress of a running tool. For `bash`, the text is the output produced since the
    /// previous update (not the whole output so far).
    ToolExecutionUpdate {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
        partial_result: &'a ToolResult,
    },
    ToolExecutionEnd {
        tool_call_id: &'a str,
        tool_name: &'a str,
        result: &'a ToolResult,
        is_error: bool,
        duration_ms: u64,
    },
    TurnEnd {
        turn_index: u32,
        message: &'a Message,
        tool_results: &'a [Message],
        /// How the server served this turn's request (absent when it reported nothing).
        #[serde(skip_serializing_if = "Option::is_none")]
        serving: Option<&'a Serving>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: &'a str,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        final_error: Option<&'a str>,
    },
    /// The turn limit (`--max-steps` / `--max-turns`) stopped a model that wanted to go on;
    /// agentic-pi's name for it, followed by `limit_reached`.
    MaxStepsReached {
        max_steps: u32,
        steps: u32,
    },
    /// The conversation is being compacted: `threshold` (the next request would not fit) or
    /// `overflow` (the server refused one for its length).
    CompactionStart {
        reason: &'a str,
        tokens_before: u64,
    },
    /// The older part of the conversation is now `summary` (a user message); the newest turn
    /// is kept as it was. Token counts are estimates.
    CompactionEnd {
        reason: &'a str,
        tokens_before: u64,
        tokens_after: u64,
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
        error: &'a FatalError,
    },
    AgentEnd {
        messages: &'a [Message],
        stop_reason: RunStopReason,
        /// Always `false`: a run retries inside itself (`auto_retry_start`) and ends once.
        will_retry: bool,
        /// The final answer as JSON, valid against `--output-schema`.
        #[serde(skip_serializing_if = "Option::is_none")]
        structured_output: Option<&'a Value>,
    },
    /// An output the run was asked to write (`--trace-file`, `--record`,
    /// `--output-last-message`, the session file) is incomplete: once per output, after
    /// `agent_end` and right before `usage_snapshot`; the exit code is 4.
    OutputError(&'a OutputError),
    /// Always the last line of a run that printed a header.
    UsageSnapshot {
        stats: &'a UsageStats,
    },
}

/// Startup status of an optional subsystem.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionStatus {
    pub extension: String,
    pub status: ExtensionState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Extension-specific fields (`profile`, `toolCount`, `auth`, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// `sandbox_status`: where tools run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    /// `none`: on the host, as worker's user.
    pub backend: &'static str,
    pub status: SandboxState,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxState {
    pub backend: &'static str,
    /// Where tools start.
    pub cwd: String,
    /// What network commands have: `host` (no restriction) or `none`.
    pub network: &'static str,
    /// `linux`: preflight and setup time, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_ms: Option<f64>,
    /// `linux`: the variables commands get from worker (names only, never values), before
    /// the extensions' own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_keys: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_http_hosts: Option<Vec<String>>,
}

/// `skills_status`: the Agent Skills offered to the model (name and description in the
/// system prompt; the model reads a skill's file when it needs it).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsStatus {
    /// `default` (discovery only), `configured` (`--skill` given) or `disabled`
    /// (`--no-skills` and no `--skill`).
    pub status: SkillsState,
    /// How many skills were found and offered.
    pub discovered: u32,
    pub skills: Vec<SkillEntry>,
    /// The `--skill` paths that were loaded.
    pub mapped_paths: Vec<String>,
    pub no_skills: bool,
    /// Skills that could not be loaded (bad frontmatter, a missing `--skill` path), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<SkillProblem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillsState {
    Default,
    Configured,
    Disabled,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    pub name: String,
    /// The skill's SKILL.md.
    pub source: String,
    /// `false` when the frontmatter sets `disable-model-invocation: true`: it is not listed
    /// in the system prompt.
    pub model_invocable: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillProblem {
    pub path: String,
    pub message: String,
}

/// `input_truncated`: what was left out of an input, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputTruncated {
    pub input: TruncatedInput,
    pub path: String,
    pub reason: TruncationReason,
    /// Bytes used, from the start of the file.
    pub kept_bytes: u64,
    /// Bytes left out after them.
    pub dropped_bytes: u64,
    /// The cap that cut it (absent for a torn line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_bytes: Option<u64>,
    /// The same, as one line.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncatedInput {
    /// An `AGENTS.md` / `CLAUDE.md`.
    ContextFile,
    /// The session file being resumed.
    Session,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncationReason {
    /// The file is larger than the cap for one context file.
    FileCap,
    /// The context files together reached their total cap (the nearest ones are kept).
    TotalCap,
    /// The last line has no newline: the run writing it died mid-write. Resuming starts
    /// from the last whole entry; the cut bytes are removed from the file before it is
    /// appended to.
    TornLastLine,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionState {
    Configured,
    Skipped,
}

// ---------------------------------------------------------------------------------------------
// The end of a run.
// ---------------------------------------------------------------------------------------------

/// Why the run ended (`agent_end.stopReason`); it decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStopReason {
    /// The model finished: exit 0.
    Stop,
    /// The model hit its output-token limit: exit 1.
    Length,
    /// The model or its API failed: exit 1.
    Error,
    /// A signal or a closed stdout stopped the run: exit 130 / 143 / 141.
    Aborted,
    /// `--max-turns` stopped the run: exit 3.
    MaxTurns,
    /// `--timeout` stopped the run: exit 3.
    Timeout,
    /// `--max-tool-calls`, `--max-total-tokens` or `--max-cost` stopped the run: exit 3.
    Budget,
}

/// `budget_warning`: a budget is 80% used.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetWarning {
    pub budget: LimitKind,
    pub used: f64,
    pub limit: f64,
    /// The note the model gets.
    pub message: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitReached {
    pub limit: LimitKind,
    /// Model requests made so far.
    pub turns: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    pub elapsed_ms: u64,
    /// For a budget: how much was used, and the limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_limit: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    MaxTurns,
    Timeout,
    MaxToolCalls,
    MaxTotalTokens,
    MaxCost,
}

/// Serialized as `{kind, name, message}`: `name` is the kind as an error class name
/// (`HttpError`, ...), the field agentic-pi consumers read.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(with = "FatalErrorWire")]
pub struct FatalError {
    pub kind: FatalErrorKind,
    pub message: String,
}

/// The wire shape of [`FatalError`], for the published schema.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct FatalErrorWire {
    kind: FatalErrorKind,
    /// `HttpError`, `TransportError`, `StreamError`, `LengthError`, `ContentFilterError`,
    /// `ModelDiscoveryError`, `AuthError`, `ReplayError`, `InternalError`.
    name: String,
    message: String,
}

impl Serialize for FatalError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("FatalError", 3)?;
        out.serialize_field("kind", &self.kind)?;
        out.serialize_field("name", self.kind.error_name())?;
        out.serialize_field("message", &self.message)?;
        out.end()
    }
}

/// The class of a run failure, for orchestrators that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FatalErrorKind {
    /// The server answered with an error status (after retries, when retryable).
    Http,
    /// The connection failed or timed out (after retries).
    Transport,
    /// The response stream was cut, stalled or malformed.
    Stream,
    /// The model stopped at its output-token limit.
    Length,
    /// The provider's content filter stopped the response.
    ContentFilter,
    /// Model discovery (`GET /models`) failed.
    ModelDiscovery,
    /// The provider needs an API key and none was given.
    Auth,
    /// The replay fixture has no answer for this request.
    Replay,
    /// A local failure (e.g. `--record` could not write its file).
    Internal,
    /// The final answer did not match `--output-schema`, even after a corrective turn.
    OutputSchema,
    /// The conversation does not fit the model's context window, even compacted.
    ContextOverflow,
}

impl FatalErrorKind {
    /// The kind as an error class name, for `fatal_error.error.name`.
    pub fn error_name(self) -> &'static str {
        match self {
            FatalErrorKind::Http => "HttpError",
            FatalErrorKind::Transport => "TransportError",
            FatalErrorKind::Stream => "StreamError",
            FatalErrorKind::Length => "LengthError",
            FatalErrorKind::ContentFilter => "ContentFilterError",
            FatalErrorKind::ModelDiscovery => "ModelDiscoveryError",
            FatalErrorKind::Auth => "AuthError",
            FatalErrorKind::Replay => "ReplayError",
            FatalErrorKind::Internal => "InternalError",
            FatalErrorKind::OutputSchema => "OutputSchemaError",
            FatalErrorKind::ContextOverflow => "ContextOverflowError",
        }
    }
}

/// The run's totals (`usage_snapshot.stats`), counted over every model request, retried
/// ones included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageStats {
    pub user_messages: u32,
    pub assistant_messages: u32,
    pub tool_calls: u32,
    pub tool_results: u32,
    pub tokens: TokenTotals,
    pub cost: f64,
    /// Model requests answered (one per turn, more with retries).
    pub llm_requests: u32,
    pub turns: u32,
    pub duration_ms: u64,
    /// Serving totals, when any request had a serving report (see `turn_end.serving`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<ServingTotals>,
    /// Counters of the subsystems riding along (`webCalls`, `webFetchesBlocked`, ...).
    #[serde(flatten)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

impl UsageStats {
    pub fn add_usage(&mut self, usage: &Usage) {
        self.tokens.input += usage.input;
        self.tokens.output += usage.output;
        self.tokens.cache_read += usage.cache_read;
        self.tokens.cache_write += usage.cache_write;
        self.tokens.total += usage.input + usage.output + usage.cache_read + usage.cache_write;
        self.cost += usage.cost.total;
    }
}

#[cfg(test)]
mod tests;
