//! The end of a run: why it stopped, the budget and limit lines, the fatal error and the
//! run's totals. Part of the wire contract of [`super`].

use schemars::JsonSchema;
use serde::Serialize;

use super::{ServingTotals, Usage};

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
    /// An `abort` command, a signal or a closed stdout stopped the run: exit 5 / 130 / 143 /
    /// 141.
    Aborted,
    /// `--max-turns` stopped the run: exit 3.
    MaxTurns,
    /// `--timeout` stopped the run: exit 3.
    Timeout,
    /// `--max-tool-calls`, `--max-total-tokens` or `--max-cost` stopped the run: exit 3.
    BudgetExceeded,
    /// The same tool call failed `--max-repeated-failures` times: exit 3.
    RepeatedFailures,
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
    /// The budget's limit, in its unit (tool calls, tokens, US dollars or failures); only for
    /// `max_tool_calls`, `max_total_tokens`, `max_cost` and `repeated_failures`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_limit: Option<f64>,
    /// The tool whose same call kept failing; only for `repeated_failures`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
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
    /// `--max-cost` / `--max-cost-usd`: US dollars spent (`usage_snapshot.stats.cost`).
    MaxCost,
    /// `--max-repeated-failures`: the same tool with the same arguments failed that many
    /// times, with no success of that call in between.
    RepeatedFailures,
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
    /// Something the run requires is not there (a required MCP server not ready, or gone).
    Dependency,
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
            FatalErrorKind::Dependency => "DependencyError",
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
    /// What each subagent used (already counted in the totals above), in the order they
    /// ended; absent when the run started none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<super::SubagentUsage>,
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
