//! What a run needs to know, resolved and validated before it starts.
//!
//! The command line (`cli`) builds a [`RunConfig`] from flags and the environment; in-process
//! callers build one directly. Nothing here touches the network: the model may still have to be
//! discovered (`dynamo/default`), which happens inside the run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::RunControl;
use crate::extension::Extension;
use crate::llm::fixture::Fixture;
use crate::secrets::Secrets;

mod duration;
mod http_url;

pub use duration::{DurationError, FlagDuration, parse_duration};
pub use http_url::{UrlError, http_url, url_with_scheme};

/// Reads the environment; blank values count as unset.
pub trait Env {
    /// The value of variable `name`; `None` when it is unset or blank.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

/// A fixed environment, for tests and embedding.
#[derive(Debug, Clone, Default)]
pub struct MapEnv(pub std::collections::HashMap<String, String>);

impl MapEnv {
    /// An environment holding exactly these `(name, value)` pairs.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        MapEnv(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }
}

impl Env for MapEnv {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }
}

/// Defaults for the limits, in one place so `--help` and the code agree.
pub mod defaults {
    use std::time::Duration;

    /// Model request retries: agentic-pi's schedule, 4 s, 8 s, 16 s, 32 s, 64 s. The last
    /// wait alone outlasts a provider's per-minute rate-limit window, so a fleet that hits
    /// one rides it out instead of failing.
    pub const MAX_RETRIES: u32 = 5;
    /// The wait before the first model request retry; each later wait doubles it.
    pub const RETRY_BASE_DELAY: Duration = Duration::from_secs(4);
    /// A tool's own HTTP retries (web search, GitHub) keep a short schedule: the model is
    /// waiting on the call, and a failed call is an answer it can work with.
    pub const TOOL_MAX_RETRIES: u32 = 3;
    /// The wait before a tool's first HTTP retry; each later wait doubles it.
    pub const TOOL_RETRY_BASE_DELAY: Duration = Duration::from_secs(1);
    /// TCP and TLS connect timeout for the model server (`--connect-timeout`).
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// How long the model server may send nothing before the request fails (`--idle-timeout`).
    pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
    /// The longest a bash call may run unless `--bash-timeout` says otherwise (the bash tool's
    /// own ceiling).
    pub const BASH_TIMEOUT_MAX: Duration = crate::tools::BashSettings::MAX_TIMEOUT;
    /// Child runs of one run at once (`--max-subagents`).
    pub const MAX_SUBAGENTS: usize = 4;
    /// How deep child runs may nest (`--max-subagent-depth`).
    pub const MAX_SUBAGENT_DEPTH: u32 = 2;
    /// How long one `GET <base>/models` may take, to discover the model or its context window.
    pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(2);
}

/// Everything one run needs, resolved and validated: built by the command line from flags and the
/// environment, or by an in-process caller from [`RunConfig::new`].
pub struct RunConfig {
    /// The run's id (UUID v7): the header's `id` and every line's `sessionId`.
    pub session_id: crate::ids::SessionId,
    /// Working directory for tools and context files; must exist.
    pub cwd: PathBuf,
    /// Where model answers come from: a server over HTTP, or a replayed fixture.
    pub model: ModelSource,
    /// The reasoning effort (`--thinking`); `None`: no `reasoning_effort` is sent, as with `off`.
    pub thinking: Option<ThinkingLevel>,
    /// Which tools the model is offered.
    pub tools: ToolSelection,
    /// Budgets, retries and timeouts.
    pub limits: Limits,
    /// How the system prompt is built.
    pub prompt: PromptConfig,
    /// Write every model exchange to this fixture file.
    pub record: Option<PathBuf>,
    /// Stops the run from outside (signals, `--timeout`, a closed stdout); a clone shares it.
    pub control: RunControl,
    /// Keep every emitted record in [`crate::RunResult::records`].
    pub retain_records: bool,
    /// Values that must never appear in any output (API keys, tokens); grows during the run.
    pub secrets: Secrets,
    /// Subsystems riding along (Dynamo trace bridge, GitHub tools, telemetry).
    pub extensions: Vec<Arc<dyn Extension>>,
    /// When `limits.timeout` started counting: when the config was made, so that reading the
    /// prompt is inside the budget.
    pub budget_start: Instant,
    /// Where tools run.
    pub sandbox: crate::sandbox::Settings,
    /// List prices (looked up once the model is known) and the caller's own price, which
    /// wins.
    pub prices: crate::llm::pricing::PriceTable,
    /// The caller's own price (`--price`), which wins over `prices`; `None`: the table's price for
    /// the model, if it has one.
    pub price: Option<crate::llm::pricing::Price>,
    /// Where the conversation is persisted, and what it continues.
    pub session: Option<SessionSetup>,
    /// The final answer must be JSON valid against this schema.
    pub output_schema: Option<Arc<crate::output::OutputSchema>>,
    /// Write the final answer (text, or the JSON) to this file.
    pub output_last_message: Option<PathBuf>,
    /// Child runs (`task`): how many at once and how deep.
    pub subagents: SubagentLimits,
    /// Set for a child run: the run that started it, and the model connection it shares.
    pub parent: Option<ParentLink>,
}

/// `--max-subagents`, `--max-subagent-depth` and `--subagent-events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// Child runs of one run at once; more wait their turn.
    pub max_concurrent: usize,
    /// How deep child runs may nest (a child of the run is depth 1).
    pub max_depth: u32,
    /// What of a child's own stream the run's stream carries.
    pub events: SubagentEvents,
}

impl Default for SubagentLimits {
    fn default() -> Self {
        SubagentLimits {
            max_concurrent: defaults::MAX_SUBAGENTS,
            max_depth: defaults::MAX_SUBAGENT_DEPTH,
            events: SubagentEvents::Summary,
        }
    }
}

/// What of a child run's stream the parent's carries (`--subagent-events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SubagentEvents {
    /// `subagent_start` and `subagent_end` only.
    #[default]
    Summary,
    /// Also every line of the child's own stream (its header aside), as it happens, tagged
    /// with `subagent: {toolCallId, childSessionId, depth}`.
    Full,
}

/// What a child run has of its parent.
#[derive(Clone)]
pub struct ParentLink {
    /// The parent's session id.
    pub session_id: crate::ids::SessionId,
    /// How deep this child is (a child of the top run is 1).
    pub depth: u32,
    /// The parent's model connection: a child asks the same server over the same pool.
    pub connected: Connected,
    /// The parent's file locks: writes to one file stay one at a time across the tree.
    pub files: crate::tools::FileLocks,
}

/// A run's model connection, once made.
#[derive(Clone)]
pub struct Connected {
    /// The transport requests go through.
    pub transport: Arc<dyn crate::llm::Transport>,
    /// The provider name messages carry.
    pub provider: String,
    /// The model id requests name.
    pub model: String,
    /// The model's context window, when known.
    pub context_window: Option<u64>,
}

/// A persisted session: the file the run appends to and, when resumed, the conversation so
/// far.
pub struct SessionSetup {
    /// `None` with `--no-session`: a resumed conversation is read, nothing written.
    pub writer: Option<crate::session::SessionWriter>,
    /// The conversation so far, as read from the resumed session; empty for a new one.
    pub history: Vec<crate::events::Message>,
    /// Set when the run continues an earlier session.
    pub resumed: Option<crate::events::ResumedFrom>,
    /// Entries the session file already had (0 for a new session); request ids carry it.
    pub prior_entries: usize,
    /// The resumed file's last line, cut mid-write by a crash and left out.
    pub torn: Option<crate::events::InputTruncated>,
}

impl RunConfig {
    /// A config with every default, for in-process callers and tests.
    pub fn new(cwd: PathBuf, model: ModelSource) -> Self {
        RunConfig {
            session_id: crate::ids::SessionId::generate(),
            cwd,
            model,
            thinking: None,
            tools: ToolSelection::default(),
            limits: Limits::default(),
            prompt: PromptConfig::default(),
            record: None,
            control: RunControl::new(),
            retain_records: true,
            secrets: Secrets::default(),
            extensions: Vec::new(),
            budget_start: Instant::now(),
            sandbox: crate::sandbox::Settings::default(),
            prices: crate::llm::pricing::PriceTable::bundled(),
            price: None,
            session: None,
            output_schema: None,
            output_last_message: None,
            subagents: SubagentLimits::default(),
            parent: None,
        }
    }
}

/// Where model answers come from.
#[derive(Clone)]
pub enum ModelSource {
    /// A model server over HTTP.
    Http {
        /// Its row of the provider table: the wire format, and the fields requests carry.
        provider: &'static crate::llm::Provider,
        /// Where the server is, and the key it takes.
        endpoint: Endpoint,
        /// `None`: take the first model `GET <base>/models` lists.
        model: Option<String>,
    },
    /// Answers replayed from a fixture recorded with `--record` (`--model replay/<file>`).
    Replay {
        /// The fixture file, as `--model` named it.
        path: PathBuf,
        /// The fixture, read and checked before the run (shared: it may be large).
        fixture: std::sync::Arc<Fixture>,
    },
}

impl ModelSource {
    /// The provider name messages carry.
    pub fn provider_name(&self) -> &str {
        match self {
            ModelSource::Http { endpoint, .. } => &endpoint.label,
            ModelSource::Replay { .. } => "replay",
        }
    }

    /// The wire format: a replay speaks the one its fixture was recorded in.
    pub fn dialect(&self) -> crate::llm::Dialect {
        match self {
            ModelSource::Http { provider, .. } => provider.dialect,
            ModelSource::Replay { fixture, .. } => match fixture.header.api.as_deref() {
                Some(api) if api == crate::llm::Dialect::AnthropicMessages.api_name() => {
                    crate::llm::Dialect::AnthropicMessages
                }
                Some(_) => crate::llm::Dialect::ChatCompletions,
                None => crate::llm::Provider::named(&fixture.header.provider)
                    .map(|provider| provider.dialect)
                    .unwrap_or_default(),
            },
        }
    }
}

/// Where a model server is and the key it takes (its `Debug` never shows the key).
#[derive(Clone)]
pub struct Endpoint {
    /// Ends in the API root (`.../v1`), no trailing slash.
    pub base_url: String,
    /// The key sent with every request (`Authorization: Bearer`, or Anthropic's `x-api-key`);
    /// `None`: no key is sent.
    pub api_key: Option<String>,
    /// The variable the key comes from when this endpoint cannot work without one; the run
    /// fails before its first request when there is no key. `None`: a key is optional.
    pub required_key: Option<String>,
    /// The provider as `--model` named it (`dynamo`, `openrouter`, a `--providers` name): the
    /// `provider` of assistant messages and the entry an `--auth-file` key comes from.
    pub label: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Strips a trailing `/` and gives a bare origin the `/v1` API root.
pub fn normalize_base_url(raw: &str) -> String {
    let trimmed = raw.trim().trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    if after_scheme.contains('/') {
        trimmed.to_string()
    } else {
        format!("{trimmed}/v1")
    }
}

/// How much the model reasons (`--thinking`): sent as `reasoning_effort` in chat completions, as a
/// thinking budget to Anthropic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ThinkingLevel {
    /// Send no reasoning effort; the server's default applies (Anthropic: no thinking).
    Off,
    /// The least reasoning (Anthropic: a budget of 1024 thinking tokens).
    Minimal,
    /// Little reasoning (Anthropic: a budget of 2048 thinking tokens).
    Low,
    /// Moderate reasoning (Anthropic: a budget of 8192 thinking tokens).
    Medium,
    /// Much reasoning (Anthropic: a budget of 16384 thinking tokens).
    High,
    /// The most reasoning (Anthropic: a budget of 32000 thinking tokens).
    Xhigh,
}

impl ThinkingLevel {
    /// The `reasoning_effort` value, or `None` for `off` (the field is then omitted).
    pub fn reasoning_effort(self) -> Option<&'static str> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some("minimal"),
            ThinkingLevel::Low => Some("low"),
            ThinkingLevel::Medium => Some("medium"),
            ThinkingLevel::High => Some("high"),
            ThinkingLevel::Xhigh => Some("xhigh"),
        }
    }
}

/// Which tools the model is offered: the built-in ones and those of the extensions, or only the
/// named ones.
#[derive(Debug, Clone)]
pub struct ToolSelection {
    /// Include the built-in tools (`--no-builtin-tools` clears it).
    pub builtin: bool,
    /// `--tools`: only these, from everything available (opt-in tools included).
    pub allow: Option<Vec<String>>,
    /// `--edit-scope`: where the file tools may write; `None`: anywhere they otherwise may.
    pub edit_scope: Option<Arc<crate::tools::EditScope>>,
}

impl Default for ToolSelection {
    fn default() -> Self {
        ToolSelection {
            builtin: true,
            allow: None,
            edit_scope: None,
        }
    }
}

/// What a run may spend (turns, time, tool calls, tokens, dollars) and how its model requests are
/// retried and timed out. A limit that is `None` is not enforced.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Model requests per run.
    pub max_turns: Option<u32>,
    /// Wall-clock budget for the whole run.
    pub timeout: Option<Duration>,
    /// Retries of a failed model request or model discovery (transport errors, 408, 429, 5xx, cut
    /// streams); 0: none.
    pub max_retries: u32,
    /// The wait before the first retry of a model request; it doubles with each further retry.
    pub retry_base_delay: Duration,
    /// Output-token limit per model request (`max_tokens` or `max_completion_tokens`); `None`: none
    /// is sent, except to Anthropic, which requires one and gets a default.
    pub max_tokens: Option<u32>,
    /// TCP and TLS connect timeout for the model server.
    pub connect_timeout: Duration,
    /// No bytes from the model server for this long is an error.
    pub idle_timeout: Duration,
    /// The longest a bash call may run; the model's `timeout` is capped to it.
    pub bash_timeout_max: Duration,
    /// Tool calls per run.
    pub max_tool_calls: Option<u32>,
    /// Tokens (input, output, cache reads and writes) per run.
    pub max_total_tokens: Option<u64>,
    /// US dollars per run.
    pub max_cost: Option<f64>,
    /// The same tool call (same tool, same arguments) may fail this many times before the run
    /// stops.
    pub max_repeated_failures: Option<u32>,
    /// The model's context window in tokens (else the server's listing or the built-in table).
    pub context_window: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: None,
            timeout: None,
            max_retries: defaults::MAX_RETRIES,
            retry_base_delay: defaults::RETRY_BASE_DELAY,
            max_tokens: None,
            connect_timeout: defaults::CONNECT_TIMEOUT,
            idle_timeout: defaults::IDLE_TIMEOUT,
            bash_timeout_max: defaults::BASH_TIMEOUT_MAX,
            max_tool_calls: None,
            max_total_tokens: None,
            max_cost: None,
            max_repeated_failures: None,
            context_window: None,
        }
    }
}

/// How the system prompt is built: the built-in one or the caller's, what is appended, and the
/// context files.
#[derive(Debug, Clone)]
pub struct PromptConfig {
    /// Replaces the built-in preamble, tool list and guidelines.
    pub system: Option<String>,
    /// Added after them.
    pub append: Option<String>,
    /// Load `AGENTS.md` / `CLAUDE.md` from the root down to the cwd.
    pub context_files: bool,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            system: None,
            append: None,
            context_files: true,
        }
    }
}

#[cfg(test)]
mod tests;
