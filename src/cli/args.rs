//! The command line's definitions: every flag of `worker run`, its help, environment
//! variable and default, in one place. `--help`, the README's flag table and the parser all
//! read them. Flags that agentic-pi 0.3 users already pass are accepted under the same
//! spelling (see [`super::compat`] for the few that need rewriting).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{FlagDuration, ThinkingLevel, defaults};
use crate::dynamo::protocol::TraceProtocol;
use crate::exit::ExitStatus;

/// The whole command line: `worker` and one subcommand.
#[derive(Debug, Parser)]
#[command(
    name = "worker",
    version,
    about = "One-shot, headless coding agent: prompt on stdin, JSONL events on stdout",
    after_help = ExitStatus::help_section()
)]
pub struct Cli {
    /// The subcommand given.
    #[command(subcommand)]
    pub command: Command,
}

/// `worker`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task: read the prompt from stdin, print events as JSON lines.
    ///
    /// A flag given twice takes its last value (orchestrators append overrides to a default
    /// command line); repeatable flags (--skill, --sandbox-env, --allow-host) add up.
    #[command(after_help = ExitStatus::help_section(), args_override_self = true)]
    Run(Box<RunArgs>),
    /// Work with Dynamo trace files.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Print the completion script for a shell, e.g. `worker completions bash >
    /// /usr/share/bash-completion/completions/worker`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: super::manual::Shell,
    },
    /// Work with MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Print the manual page (roff), e.g. `worker man > /usr/local/share/man/man1/worker.1`.
    Man,
}

/// The subcommands of `worker trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert a trace (worker's --trace-file or Dynamo's JSONL sink) to Chrome Trace Event
    /// JSON for ui.perfetto.dev: one process per session, one track per trajectory.
    Perfetto {
        /// The trace, one JSON record per line.
        input: PathBuf,
        /// Where to write the Chrome Trace Event JSON.
        #[arg(short, long)]
        output: PathBuf,
    },
}

/// The subcommands of `worker mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server exactly as a run would (sandbox included), initialize it
    /// and list its tools; print one JSON line per server (the mcp_status fields and
    /// toolNames). Exits 2 when a required server is not ready.
    Check(McpCheckArgs),
}

/// The flags of `worker mcp check`.
#[derive(Debug, Args)]
pub struct McpCheckArgs {
    /// The MCP configuration files, as for `worker run` (repeatable).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,

    /// Also check the servers of .mcp.json in --cwd.
    #[arg(long)]
    pub mcp_project: bool,

    /// The directory servers start in, as for `worker run` [default: current directory]
    #[arg(long, env = "WORKER_CWD", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Where servers run, as for `worker run`.
    #[command(flatten)]
    pub isolation: SandboxArgs,
}

/// The flags of `worker run`, as clap parsed them (environment variables and defaults
/// applied).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Model as provider/id: dynamo/<id>, dynamo/default (first model the server lists),
    /// openai/<id>, anthropic/<id>, openrouter/<id>, a name from --providers, or
    /// replay/<fixture.jsonl>. Ids may contain '/'.
    #[arg(short = 'm', long, env = "WORKER_MODEL", value_name = "PROVIDER/ID")]
    pub model: String,

    /// Reasoning effort, sent as reasoning_effort (off sends nothing).
    #[arg(long, value_enum, env = "WORKER_THINKING", visible_alias = "variant")]
    pub thinking: Option<ThinkingLevel>,

    /// Working directory for tools and AGENTS.md discovery [default: current directory]
    #[arg(long, env = "WORKER_CWD", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Only these tools (comma-separated), e.g. read,grep; can name opt-in tools
    /// (hashline_edit). A tool this run does not offer (a GitHub tool without --profile, a web
    /// tool without a search key) is left out with a warning; a name no run offers is a usage
    /// error.
    #[arg(
        long,
        env = "WORKER_TOOLS",
        value_delimiter = ',',
        value_name = "A,B,..."
    )]
    pub tools: Option<Vec<String>>,

    /// Offer no built-in tools.
    #[arg(long, env = "WORKER_NO_BUILTIN_TOOLS")]
    pub no_builtin_tools: bool,

    /// Stop after this many model requests, each with its tool calls, when the model still
    /// wants to go on (exit 3, with `max_steps_reached` and `limit_reached`).
    #[arg(
        long,
        env = "WORKER_MAX_TURNS",
        value_name = "N",
        visible_alias = "max-steps"
    )]
    pub max_turns: Option<u32>,

    /// Tool calls the run may make (exit 3); at 80% the model is told to wrap up.
    #[arg(long, env = "WORKER_MAX_TOOL_CALLS", value_name = "N")]
    pub max_tool_calls: Option<u32>,

    /// Tokens the run may use, input, output and cache included (exit 3); at 80% the model is
    /// told to wrap up.
    #[arg(long, env = "WORKER_MAX_TOTAL_TOKENS", value_name = "N")]
    pub max_total_tokens: Option<u64>,

    /// US dollars the run may spend, by the price table (exit 3, stop reason budget_exceeded);
    /// at 80% the model is told to wrap up.
    #[arg(
        long,
        env = "WORKER_MAX_COST",
        value_name = "USD",
        allow_hyphen_values = true,
        visible_alias = "max-cost-usd"
    )]
    pub max_cost: Option<f64>,

    /// End the run (exit 3, stop reason repeated_failures) when the same tool with the same
    /// arguments has failed this many times with no success of that call in between.
    #[arg(long, env = "WORKER_MAX_REPEATED_FAILURES", value_name = "N")]
    pub max_repeated_failures: Option<u32>,

    /// Where write, edit and hashline_edit may change files: globs relative to --cwd
    /// (repeatable; a directory covers what is under it). A write elsewhere is refused with a
    /// reason the model can act on.
    #[arg(long, value_name = "GLOB")]
    pub edit_scope: Vec<String>,

    /// Read control commands from stdin as JSON lines (stdin is the only source): the prompt
    /// first ({"type":"prompt","message":...}) unless given as the argument, then steer,
    /// follow_up, abort and decide. Each command is answered by a control_ack line.
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub control: Option<crate::live::ControlSource>,

    /// Tools whose calls wait for an approval before they run (comma-separated names or globs,
    /// e.g. bash,write,github_*): a decide command (--control stdin), else the pre-tool hooks,
    /// decide; without either it is a usage error.
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    pub approve_tools: Option<Vec<String>>,

    /// How long a call waits for its approval before it is denied.
    #[arg(long, default_value_t = FlagDuration(crate::live::DEFAULT_APPROVAL_TIMEOUT), value_name = "DURATION")]
    pub approval_timeout: FlagDuration,

    /// A program run before every tool call, with Claude Code's PreToolUse hook contract (JSON
    /// on stdin; exit 0 allows unless its output denies or replaces the input, exit 2 denies
    /// with stderr as the reason, anything else denies). Repeatable: every hook must allow.
    #[arg(long, value_name = "CMD")]
    pub pre_tool_hook: Vec<String>,

    /// A program run after every tool call with the PostToolUse shape (tool_response added),
    /// for audit; it cannot change the result. Repeatable.
    #[arg(long, value_name = "CMD")]
    pub post_tool_hook: Vec<String>,

    /// How long a hook program may run before it is killed (a pre-tool hook that times out
    /// denies the call).
    #[arg(long, default_value_t = FlagDuration(crate::live::DEFAULT_HOOK_TIMEOUT), value_name = "DURATION")]
    pub hook_timeout: FlagDuration,

    /// Print a heartbeat line when nothing else was written for this long (off by default).
    #[arg(long, value_name = "DURATION")]
    pub heartbeat: Option<FlagDuration>,

    /// The model's context window in tokens, for compaction [default: what the server lists
    /// (max_model_len), else a built-in table of hosted models, else no compaction]
    #[arg(long, env = "WORKER_CONTEXT_WINDOW", value_name = "TOKENS")]
    pub context_window: Option<u64>,

    /// Wall-clock budget for the whole run, e.g. 90, 90s, 5m, 1h (exit 3).
    #[arg(long, env = "WORKER_TIMEOUT", value_name = "DURATION")]
    pub timeout: Option<FlagDuration>,

    /// `--max-retries`; `None` when not given (Pi's `settings.json` or the built-in default
    /// applies).
    #[arg(long, env = "WORKER_MAX_RETRIES", value_name = "N", help = max_retries_help())]
    pub max_retries: Option<u32>,

    /// `--retry-base-delay`; `None` when not given (Pi's `settings.json` or the built-in
    /// default applies).
    #[arg(long, env = "WORKER_RETRY_BASE_DELAY", value_name = "DURATION", help = retry_base_delay_help())]
    pub retry_base_delay: Option<FlagDuration>,

    /// Output-token limit per model request.
    #[arg(long, env = "WORKER_MAX_TOKENS", value_name = "N")]
    pub max_tokens: Option<u32>,

    /// Fail a request when the model server sends nothing for this long.
    #[arg(long, env = "WORKER_IDLE_TIMEOUT", default_value_t = FlagDuration(defaults::IDLE_TIMEOUT), value_name = "DURATION")]
    pub idle_timeout: FlagDuration,

    /// TCP/TLS connect timeout for the model server.
    #[arg(long, env = "WORKER_CONNECT_TIMEOUT", default_value_t = FlagDuration(defaults::CONNECT_TIMEOUT), value_name = "DURATION")]
    pub connect_timeout: FlagDuration,

    /// `--bash-timeout`: the longest one bash call may run, whatever the model asks for.
    #[arg(
        long,
        env = "WORKER_BASH_TIMEOUT",
        default_value_t = FlagDuration(defaults::BASH_TIMEOUT_MAX),
        value_name = "DURATION",
        help = bash_timeout_help()
    )]
    pub bash_timeout: FlagDuration,

    /// Replace the built-in system prompt (text, or @file).
    #[arg(long, env = "WORKER_SYSTEM_PROMPT", value_name = "TEXT|@FILE")]
    pub system_prompt: Option<String>,

    /// Add to the system prompt (text, or @file).
    #[arg(long, env = "WORKER_APPEND_SYSTEM_PROMPT", value_name = "TEXT|@FILE")]
    pub append_system_prompt: Option<String>,

    /// Don't load AGENTS.md / CLAUDE.md files.
    #[arg(long, env = "WORKER_NO_CONTEXT_FILES")]
    pub no_context_files: bool,

    /// Record every model exchange to this fixture file (replay it with --model replay/FILE).
    #[arg(long, env = "WORKER_RECORD", value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// How the Dynamo identity travels: agent (Dynamo 1.2.x body field), request (1.3+
    /// headers), auto (both, until the server shows which it speaks), off.
    #[arg(
        long,
        env = "DYN_AGENT_TRACE_PROTOCOL",
        value_enum,
        default_value = "auto",
        value_name = "PROTOCOL"
    )]
    pub dynamo_trace_protocol: TraceProtocol,

    /// Dynamo scheduling priority of this run's requests (nvext.agent_hints.priority; higher
    /// is served first under contention). With --timeout it rises as the budget runs out.
    #[arg(
        long,
        env = "DYN_AGENT_PRIORITY",
        value_name = "N",
        allow_hyphen_values = true
    )]
    pub priority: Option<i32>,

    /// Dynamo router queue tier (nvext.agent_hints.strict_priority): a higher tier always goes
    /// ahead of a lower one.
    #[arg(long, env = "DYN_AGENT_STRICT_PRIORITY", value_name = "N")]
    pub strict_priority: Option<u32>,

    /// Send Dynamo no nvext.agent_hints (priority, deadline escalation, expected output length,
    /// speculative prefill).
    #[arg(long, env = "DYN_AGENT_NO_SERVING_HINTS")]
    pub no_serving_hints: bool,

    /// Scope Dynamo's prefix cache to this tenant (x-tenant-id): different tenants share no
    /// cached prefix.
    #[arg(long, env = "DYN_AGENT_TENANT", value_name = "ID")]
    pub tenant: Option<String>,

    /// After the run's last answer, tell Dynamo the session is over (a one-token request with
    /// x-dynamo-session-final), so it can release the session's worker affinity.
    #[arg(long, env = "DYN_AGENT_SESSION_FINAL")]
    pub session_final: bool,

    /// Register the GitHub tools of this permission profile (read, issues-write, review-write,
    /// repo-write, or one from --profiles-dir). Without it there are no GitHub tools.
    #[arg(long, env = "WORKER_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,

    /// Directory of extra or overriding profile files (NAME.json).
    #[arg(long, env = "WORKER_PROFILES_DIR", value_name = "DIR")]
    pub profiles_dir: Option<PathBuf>,

    /// Export traces and metrics over OTLP (also WORKER_OTEL_ENABLED or AGENTIC_PI_OTEL_ENABLED=1|true|yes|on).
    #[arg(long)]
    pub otel: bool,

    /// Never export telemetry, whatever else asks for it.
    #[arg(long)]
    pub no_otel: bool,

    /// OTLP base URL; signals go to <URL>/v1/traces and /v1/metrics [default: the
    /// OTEL_EXPORTER_OTLP_* variables, else http://localhost:4318]
    #[arg(long, value_name = "URL")]
    pub otel_endpoint: Option<String>,

    /// service.name of the exported telemetry [default: OTEL_SERVICE_NAME, else worker]
    #[arg(long, value_name = "NAME", value_parser = non_empty)]
    pub otel_service_name: Option<String>,

    /// Attach prompts, completions and tool arguments/results to spans, cut to 4096 characters
    /// (also WORKER_OTEL_INCLUDE_CONTENT or AGENTIC_PI_OTEL_INCLUDE_CONTENT=1).
    #[arg(long)]
    pub otel_include_content: bool,

    /// Prefix of worker's own span, metric and attribute names (gen_ai.* follow the semantic
    /// conventions); agentic_pi exports agentic-pi's names (agentic_pi.session,
    /// agentic_pi.tool.invocations, ...) so its dashboards keep working.
    #[arg(long, env = crate::telemetry::NAMESPACE_ENV, value_name = "NAME", default_value = crate::telemetry::names::DEFAULT_NAMESPACE, value_parser = crate::telemetry::parse_namespace)]
    pub otel_namespace: String,

    /// Write this run's trace (model requests and tool calls) in Dynamo's JSONL trace format.
    #[arg(long, env = "DYN_AGENT_TRACE_FILE", value_name = "FILE")]
    pub trace_file: Option<PathBuf>,

    /// Point providers at other endpoints (a gateway, a self-hosted server) without code, as
    /// JSON: {"acme": {"baseUrl": "https://gw/v1", "api": "openai-completions", "apiKeyEnv":
    /// "ACME_API_KEY"}}; api is openai-completions or anthropic-messages, needed for a new
    /// name. Also read from AGENTIC_PI_PROVIDERS.
    #[arg(long, value_name = "JSON")]
    pub providers: Option<String>,

    /// The model's price in US dollars per million tokens, e.g.
    /// input=3,output=15,cacheRead=0.3,cacheWrite=3.75; wins over the price table. Without a
    /// price, self-hosted and unknown models cost 0.
    #[arg(long, value_name = "PRICES", value_parser = crate::llm::pricing::Price::parse)]
    pub price: Option<crate::llm::pricing::Price>,

    /// A price table to add to (or override) the bundled one: {"models": {"provider/model":
    /// {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}}.
    #[arg(long, value_name = "FILE")]
    pub prices_file: Option<PathBuf>,

    /// A JSON Schema the final answer must be valid against: the answer is one JSON value,
    /// checked, corrected once if needed, and reported as agent_end.structuredOutput.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Write the final answer (the text, or the JSON with --output-schema) to this file.
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,

    /// Model credentials in Pi's auth.json shape ({"openai": {"type": "api_key", "key": "…"}});
    /// the file must not be readable by group or others. A key here wins over the provider's
    /// environment variable.
    #[arg(long, env = "WORKER_AUTH_FILE", value_name = "FILE")]
    pub auth_file: Option<PathBuf>,

    /// Do not write a session file.
    #[arg(long)]
    pub no_session: bool,

    /// Where session files go [default: $XDG_STATE_HOME/worker/sessions/<cwd-slug>/, XDG_STATE_HOME
    /// defaulting to ~/.local/state]
    #[arg(long, env = "WORKER_SESSION_DIR", value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// The session's id (caller-owned: A-Z a-z 0-9 - _ . :, up to 128): the header's id, the
    /// session file, the Dynamo session and trajectory, OTEL's conversation id [default: a new
    /// UUIDv7]
    #[arg(long, env = "WORKER_SESSION_ID", value_name = "ID")]
    pub session_id: Option<String>,

    /// The session that started this one (Dynamo's parent trajectory, the session file's
    /// parentSession).
    #[arg(long, value_name = "ID")]
    pub parent_session_id: Option<String>,

    /// Continue a session (its id in --session-dir, or its file): its conversation is loaded,
    /// the prompt appended, the same session id kept.
    #[arg(long, value_name = "ID|FILE", conflicts_with = "continue_session")]
    pub resume: Option<String>,

    /// Continue the most recent session of --cwd.
    #[arg(long = "continue")]
    pub continue_session: bool,

    /// Accepted for agentic-pi and opencode command lines; worker never asks for permission.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,

    /// Where tools (and MCP servers) run.
    #[command(flatten)]
    pub isolation: SandboxArgs,

    /// Do not offer web_search and web_fetch.
    #[arg(long)]
    pub no_web_search: bool,

    /// Web search provider: tavily, exa or brave, else WEB_SEARCH_PROVIDER's (without either:
    /// the first whose key is set, of TAVILY_API_KEY, EXA_API_KEY and BRAVE_SEARCH_API_KEY).
    /// A provider without its key is a warning and no web tools; any other name is an error.
    #[arg(long, value_name = "PROVIDER")]
    pub web_search_provider: Option<String>,

    /// What web_fetch makes of an HTML page it fetches itself, unless the call's format
    /// argument says: markdown keeps headings, links, lists and code; text is agentic-pi's
    /// plain text
    #[arg(
        long,
        value_enum,
        env = "WORKER_WEB_FETCH_FORMAT",
        default_value = "markdown",
        value_name = "FORMAT"
    )]
    pub web_fetch_format: crate::web::FetchFormat,

    /// Most web_search + web_fetch calls in one run.
    #[arg(long, value_name = "N", default_value_t = crate::web::DEFAULT_MAX_CALLS, value_parser = clap::value_parser!(u32).range(1..))]
    pub web_search_max_calls: u32,

    /// A host or address web_fetch may reach although it is on a private or internal network
    /// or on this machine (repeatable), e.g. an intranet docs server.
    #[arg(long, value_name = "HOST")]
    pub web_allow_host: Vec<String>,

    /// Let web_fetch reach private, loopback and link-local addresses: no SSRF guard.
    #[arg(long)]
    pub web_allow_private: bool,

    /// Do not offer multi_grep (grep and find stay: they are built in).
    #[arg(long)]
    pub no_file_search: bool,

    /// override: the file-search tools under the names grep, find and multi_grep;
    /// tools-only and tools-and-ui behave the same here (worker has no UI).
    #[arg(long, value_enum, default_value = "override", value_name = "MODE")]
    pub file_search_mode: crate::file_search::Mode,

    /// Load Agent Skills from PATH: a directory of skills, or one skill (its directory or
    /// SKILL.md). Repeatable; adds to discovery, even with --no-skills.
    #[arg(long, value_name = "PATH")]
    pub skill: Vec<PathBuf>,

    /// Do not discover skills in ~/.pi/agent/skills, ~/.agents/skills, and .pi/skills or
    /// .agents/skills from --cwd up to the git root.
    #[arg(long)]
    pub no_skills: bool,

    /// Offer the task tool: the model can run subagents, child agents with their own
    /// conversation, in this process, each shown as subagent_start and subagent_end.
    #[arg(long, env = "WORKER_SUBAGENTS")]
    pub subagents: bool,

    /// A directory of agent definitions (NAME.md with YAML front matter) the task tool may
    /// name, before .pi/agents/ and .claude/agents/ of --cwd (repeatable).
    #[arg(long, value_name = "DIR")]
    pub agents_dir: Vec<PathBuf>,

    /// Subagents of one run at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = crate::config::defaults::MAX_SUBAGENTS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_subagents: u32,

    /// What of a subagent's own stream this one carries: summary (subagent_start and
    /// subagent_end) or full (every line of it too, tagged with subagent).
    #[arg(long, value_enum, default_value = "summary", value_name = "WHAT")]
    pub subagent_events: crate::config::SubagentEvents,

    /// How deep subagents may nest (a subagent of the run is depth 1).
    #[arg(long, value_name = "N", default_value_t = crate::config::defaults::MAX_SUBAGENT_DEPTH)]
    pub max_subagent_depth: u32,

    /// An MCP configuration in the .mcp.json shape ({"mcpServers": {NAME: {command, args,
    /// env, cwd} or {type: "http", url, headers}}}): its servers start with the run and their
    /// tools are offered as mcp__NAME__TOOL (repeatable; a server named again replaces the
    /// earlier one).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,

    /// Also start the servers of .mcp.json in --cwd (a repository's own file is never used
    /// without it: it could start any program).
    #[arg(long)]
    pub mcp_project: bool,

    /// Prompt text; stdin, if any, is appended inside <stdin> tags.
    pub prompt: Option<String>,
}

/// Where tools run: the flags `worker run` and `worker mcp check` share.
#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// Where tools run: none (as worker's user, in --cwd) or linux (each command in its own
    /// user, mount and PID namespace under Landlock: writes only in --cwd and a private temp
    /// directory, credentials hidden, a scrubbed environment). Other backends are refused.
    #[arg(long = "sandbox", value_name = "BACKEND", default_value = "none", value_parser = crate::sandbox::Backend::parse)]
    pub backend: crate::sandbox::Backend,

    /// A path --sandbox linux hides from every tool, besides the usual credentials
    /// (repeatable).
    #[arg(long, value_name = "PATH")]
    pub sandbox_hide: Vec<PathBuf>,

    /// Image for a VM sandbox; not used by --sandbox none or linux.
    #[arg(long, value_name = "NAME", value_parser = non_empty)]
    pub sandbox_image: Option<String>,

    /// KEY=VAL added to the environment of every command (repeatable).
    #[arg(long, value_name = "KEY=VAL", value_parser = crate::sandbox::parse_env_pair)]
    pub sandbox_env: Vec<(String, String)>,

    /// A host commands may reach over HTTP/HTTPS (repeatable; *.example.com for its
    /// subdomains, an IP address for that address), on ports 443 and 80, or HOST:PORT for
    /// that port only: under --sandbox linux, through worker's proxy, the only way out, and
    /// never to a loopback, private or link-local address unless that address itself is
    /// allowed. With --sandbox none it cannot be enforced, and a warning says so.
    #[arg(long, value_name = "HOST[:PORT]", value_parser = crate::sandbox::parse_host)]
    pub allow_host: Vec<String>,

    /// No network for commands (only loopback), enforced by --sandbox linux; with --sandbox
    /// none it cannot be, and a warning says so.
    #[arg(long)]
    pub no_network: bool,
}

/// An empty or blank value for a flag that must say something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must not be empty")]
struct EmptyValue;

/// A value that must say something: an empty or blank one is a usage error, as in
/// agentic-pi, rather than a silent fallback to the default.
fn non_empty(value: &str) -> Result<String, EmptyValue> {
    if value.trim().is_empty() {
        Err(EmptyValue)
    } else {
        Ok(value.to_string())
    }
}

/// The help of `--max-retries`, naming its default from the constant.
fn max_retries_help() -> String {
    format!(
        "Retries of a failed model request (transport errors, 408, 429, 5xx, cut streams); \
         over Pi's settings.json retry.maxRetries (retry.enabled false: none) [default: {}]",
        defaults::MAX_RETRIES
    )
}

/// The help of `--retry-base-delay`, naming its default from the constant.
fn retry_base_delay_help() -> String {
    format!(
        "First retry delay, doubling per retry (never earlier, up to 25% later), capped at \
         {}; a server's Retry-After wins (up to {}); over Pi's settings.json \
         retry.baseDelayMs [default: {}]",
        FlagDuration(crate::http::RetryPolicy::MAX_DELAY),
        FlagDuration(crate::http::RetryPolicy::MAX_SERVER_DELAY),
        FlagDuration(defaults::RETRY_BASE_DELAY)
    )
}

/// The help of `--bash-timeout`, naming the per-call default from its constant.
fn bash_timeout_help() -> String {
    format!(
        "Longest a bash call may run (bash calls default to {}; the model may ask for more, up to this)",
        FlagDuration(crate::tools::BashSettings::DEFAULT_TIMEOUT)
    )
}
