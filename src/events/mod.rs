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

/// Startup status of an optional subsystem.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionStatus {
    /// The subsystem: `github`, `web-search`, `file-search` or `telemetry`.
    pub extension: String,
    /// Whether the subsystem is in use this run.
    pub status: ExtensionState,
    /// Why it was skipped, as a short code (`no-profile`, `no-credentials`, `disabled-by-flag`,
    /// `unavailable`, ...); absent when it is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A line for people: why it was skipped, or a note on how it is set up; absent when there is
    /// nothing to say.
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
    /// The sandbox as set up for this run.
    pub status: SandboxState,
}

/// `sandbox_status.status`: the sandbox's settings as in effect.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxState {
    /// The backend, as in `sandbox_status.backend`: `none` or `linux`.
    pub backend: &'static str,
    /// Where tools start.
    pub cwd: String,
    /// What network commands have: `host` (no restriction), `none`, or `proxy` (only the
    /// `--allow-host` hosts, through worker's egress proxy; `linux` backend).
    pub network: &'static str,
    /// `linux`: preflight and setup time, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_ms: Option<f64>,
    /// `linux`: the variables commands get from worker (names only, never values), before
    /// the extensions' own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_keys: Option<Vec<String>>,
    /// `linux` with `--allow-host`: the hosts commands may reach over HTTP and HTTPS through
    /// worker's egress proxy, as given.
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
    /// Each skill found, in the order found (the first one found wins a name).
    pub skills: Vec<SkillEntry>,
    /// The `--skill` paths that were loaded.
    pub mapped_paths: Vec<String>,
    /// True with `--no-skills`: only the `--skill` paths were searched.
    pub no_skills: bool,
    /// Skills that could not be loaded (bad frontmatter, a missing `--skill` path), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<SkillProblem>,
}

/// How skills were asked for (`skills_status.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillsState {
    /// Neither `--skill` nor `--no-skills`: the usual places were searched.
    Default,
    /// At least one `--skill` path exists and was loaded (the usual places were also searched
    /// unless `--no-skills`).
    Configured,
    /// `--no-skills` and no `--skill` path that exists: nothing was searched.
    Disabled,
}

/// One skill found (`skills_status.skills[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    /// The skill's name: its frontmatter's `name`, else the name of its directory.
    pub name: String,
    /// The skill's SKILL.md.
    pub source: String,
    /// `false` when the frontmatter sets `disable-model-invocation: true`: it is not listed
    /// in the system prompt.
    pub model_invocable: bool,
}

/// A skill that could not be loaded (`skills_status.problems[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillProblem {
    /// The skill file or `--skill` path at fault.
    pub path: String,
    /// What is wrong with it (`invalid frontmatter: no description`, ...).
    pub message: String,
}

/// `input_truncated`: what was left out of an input, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputTruncated {
    /// Which kind of input was cut.
    pub input: TruncatedInput,
    /// The file that was cut.
    pub path: String,
    /// Why it was cut.
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

/// The kind of input `input_truncated` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncatedInput {
    /// An `AGENTS.md` / `CLAUDE.md`.
    ContextFile,
    /// The session file being resumed.
    Session,
}

/// Why `input_truncated` left part of an input out.
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

/// Whether a subsystem is in use (`extension_status.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionState {
    /// Set up and in use; its tools, if it has any, are offered to the model.
    Configured,
    /// Not in use this run; `reason` says why.
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
    /// Which budget is 80% used.
    pub budget: LimitKind,
    /// How much of it is used, in its unit: turns, seconds (for `timeout`), tool calls, tokens or
    /// US dollars.
    pub used: f64,
    /// The budget, in the same unit as `used`.
    pub limit: f64,
    /// The note the model gets.
    pub message: String,
}

/// `limit_reached`: the configured limit that stopped the run (exit code 3).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitReached {
    /// Which limit stopped the run.
    pub limit: LimitKind,
    /// Turns run so far, as `usage_snapshot.stats.turns` counts them (a retried request is
    /// one turn).
    pub turns: u32,
    /// The turn limit (`--max-turns` / `--max-steps`); only for `max_turns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// The `--timeout`, in milliseconds; only for `timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Time since the run started, in milliseconds.
    pub elapsed_ms: u64,
    /// For a budget: how much was used, and the limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<f64>,
    /// The budget's limit, in its unit (tool calls, tokens or US dollars); only for
    /// `max_tool_calls`, `max_total_tokens` and `max_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_limit: Option<f64>,
}

/// A configured limit on a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `--max-turns` / `--max-steps`: model turns.
    MaxTurns,
    /// `--timeout`: wall-clock time.
    Timeout,
    /// `--max-tool-calls`: tool calls the model made.
    MaxToolCalls,
    /// `--max-total-tokens`: tokens over every model request (`usage_snapshot.stats.tokens.total`).
    MaxTotalTokens,
    /// `--max-cost`: US dollars spent (`usage_snapshot.stats.cost`).
    MaxCost,
}

/// Serialized as `{kind, name, message}`: `name` is the kind as an error class name
/// (`HttpError`, ...), the field agentic-pi consumers read.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(with = "FatalErrorWire")]
pub struct FatalError {
    /// The class of the failure.
    pub kind: FatalErrorKind,
    /// What went wrong, as one line; the stderr failure line is built from it.
    pub message: String,
}

/// The wire shape of [`FatalError`], for the published schema.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct FatalErrorWire {
    /// The class of the failure.
    kind: FatalErrorKind,
    /// The kind as an error class: `HttpError`, `TransportError`, `StreamError`,
    /// `LengthError`, `ContentFilterError`, `ModelDiscoveryError`, `AuthError`, `ReplayError`,
    /// `InternalError`, `OutputSchemaError`, `ContextOverflowError`.
    name: String,
    /// What went wrong, as one line; the stderr failure line is built from it.
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
    /// User prompts: 1 once `agent_start` was printed, else 0 (the notes worker adds, such as
    /// budget warnings, are not counted).
    pub user_messages: u32,
    /// Assistant messages, one per turn (a failed request's message included); compaction summaries
    /// are not counted.
    pub assistant_messages: u32,
    /// Tool calls the model made.
    pub tool_calls: u32,
    /// Tool results returned to the model.
    pub tool_results: u32,
    /// Tokens over every model request.
    pub tokens: TokenTotals,
    /// What every model request cost, in US dollars (0 unless a price is known).
    pub cost: f64,
    /// Model requests answered (one per turn, more with retries).
    pub llm_requests: u32,
    /// Turns started (`turn_start` lines).
    pub turns: u32,
    /// Wall-clock time of the run, in milliseconds, up to its closing lines.
    pub duration_ms: u64,
    /// Serving totals, when any request had a serving report (see `turn_end.serving`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<ServingTotals>,
    /// Counters of the subsystems riding along (`webCalls`, `webFetchesBlocked`, ...).
    #[serde(flatten)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// Token counts summed over every model request (`usage_snapshot.stats.tokens`); each count means
/// what it does in a message's `usage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    /// Prompt tokens neither read from nor written to the prompt cache.
    pub input: u64,
    /// Tokens generated, reasoning included.
    pub output: u64,
    /// Prompt tokens read from the prompt cache.
    pub cache_read: u64,
    /// Prompt tokens written to the prompt cache.
    pub cache_write: u64,
    /// The sum of the four counts.
    pub total: u64,
}

impl UsageStats {
    /// Adds one assistant message's tokens and cost to the totals.
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
