//! The command line: flags (with their environment fallbacks) and turning them into a
//! [`RunConfig`]. Every problem found here is a usage error: exit 2, a message on stderr,
//! nothing on stdout.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::config::{
    Endpoint, FlagDuration, HttpProvider, Limits, ModelSource, PromptConfig, RunConfig,
    ThinkingLevel, ToolSelection, defaults, normalize_base_url,
};
pub use crate::config::{Env, ProcessEnv};
use crate::dynamo::protocol::TraceProtocol;
use crate::dynamo::{DynamoBridge, DynamoSettings};
use crate::exit::ExitStatus;
use crate::llm::fixture::Fixture;
use crate::secrets::Secrets;

mod prompt;
pub mod reference;

pub use prompt::{PromptError, read_prompt};

#[derive(Debug, Parser)]
#[command(
    name = "worker",
    version,
    about = "One-shot, headless coding agent: prompt on stdin, JSONL events on stdout",
    after_help = ExitStatus::help_section()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task: read the prompt from stdin, print events as JSON lines.
    #[command(after_help = ExitStatus::help_section())]
    Run(Box<RunArgs>),
    /// Work with Dynamo trace files.
    #[command(subcommand)]
    Trace(TraceCommand),
}

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

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Model as provider/id: dynamo/<id>, dynamo/default (first model the server lists),
    /// openai/<id>, or replay/<fixture.jsonl>. Ids may contain '/'.
    #[arg(short = 'm', long, env = "WORKER_MODEL", value_name = "PROVIDER/ID")]
    pub model: String,

    /// Reasoning effort, sent as reasoning_effort (off sends nothing).
    #[arg(long, value_enum, env = "WORKER_THINKING")]
    pub thinking: Option<ThinkingLevel>,

    /// Working directory for tools and AGENTS.md discovery [default: current directory]
    #[arg(long, env = "WORKER_CWD", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Only these tools (comma-separated), e.g. read,grep; can name opt-in tools
    /// (hashline_edit); an unknown name is a usage error.
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

    /// Stop after this many model requests (exit 3).
    #[arg(long, env = "WORKER_MAX_TURNS", value_name = "N")]
    pub max_turns: Option<u32>,

    /// Wall-clock budget for the whole run, e.g. 90, 90s, 5m, 1h (exit 3).
    #[arg(long, env = "WORKER_TIMEOUT", value_name = "DURATION")]
    pub timeout: Option<FlagDuration>,

    /// Retries of a failed model request (transport errors, 408, 429, 5xx, cut streams).
    #[arg(long, env = "WORKER_MAX_RETRIES", default_value_t = defaults::MAX_RETRIES, value_name = "N")]
    pub max_retries: u32,

    /// First retry delay; doubles per retry (with jitter), capped at 30s; a server's
    /// Retry-After wins (up to 120s).
    #[arg(long, env = "WORKER_RETRY_BASE_DELAY", default_value_t = FlagDuration(defaults::RETRY_BASE_DELAY), value_name = "DURATION")]
    pub retry_base_delay: FlagDuration,

    /// Output-token limit per model request.
    #[arg(long, env = "WORKER_MAX_TOKENS", value_name = "N")]
    pub max_tokens: Option<u32>,

    /// Fail a request when the model server sends nothing for this long.
    #[arg(long, env = "WORKER_IDLE_TIMEOUT", default_value_t = FlagDuration(defaults::IDLE_TIMEOUT), value_name = "DURATION")]
    pub idle_timeout: FlagDuration,

    /// TCP/TLS connect timeout for the model server.
    #[arg(long, env = "WORKER_CONNECT_TIMEOUT", default_value_t = FlagDuration(defaults::CONNECT_TIMEOUT), value_name = "DURATION")]
    pub connect_timeout: FlagDuration,

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

    /// Register the GitHub tools of this permission profile (read, issues-write, review-write,
    /// repo-write, or one from --profiles-dir). Without it there are no GitHub tools.
    #[arg(long, env = "WORKER_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,

    /// Directory of extra or overriding profile files (NAME.json).
    #[arg(long, env = "WORKER_PROFILES_DIR", value_name = "DIR")]
    pub profiles_dir: Option<PathBuf>,

    /// Export traces and metrics over OTLP (also WORKER_OTEL_ENABLED=1|true|yes|on).
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
    #[arg(long, value_name = "NAME")]
    pub otel_service_name: Option<String>,

    /// Attach prompts, completions and tool arguments/results to spans, cut to 4096 characters
    /// (also WORKER_OTEL_INCLUDE_CONTENT=1).
    #[arg(long)]
    pub otel_include_content: bool,

    /// Write this run's trace (model requests and tool calls) in Dynamo's JSONL trace format.
    #[arg(long, env = "DYN_AGENT_TRACE_FILE", value_name = "FILE")]
    pub trace_file: Option<PathBuf>,

    /// Prompt text; stdin, if any, is appended inside <stdin> tags.
    pub prompt: Option<String>,
}

/// The help of `--bash-timeout`, naming the per-call default from its constant.
fn bash_timeout_help() -> String {
    format!(
        "Longest a bash call may run (bash calls default to {}; the model may ask for more, up to this)",
        FlagDuration(crate::tools::BashSettings::DEFAULT_TIMEOUT)
    )
}

/// Variables whose values must never be written to a recording.
const SECRET_VARS: [&str; 5] = [
    "DYNAMO_API_KEY",
    "OPENAI_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
];

/// The run's configuration and the warnings found on the way (reported, not fatal).
pub fn build_config(args: &RunArgs, env: &dyn Env) -> Result<(RunConfig, Vec<String>), String> {
    let cwd = resolve_cwd(args.cwd.as_deref())?;
    let model = parse_model(&args.model, env)?;
    let mut config = RunConfig::new(cwd, model);
    // The stream is the record; keeping every event in memory too would grow with output.
    config.retain_records = false;
    config.thinking = args.thinking;
    config.tools = ToolSelection {
        builtin: !args.no_builtin_tools,
        allow: args.tools.as_ref().map(|names| {
            names
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect()
        }),
    };
    config.limits = Limits {
        max_turns: args.max_turns,
        timeout: args.timeout.map(|t| t.0),
        max_retries: args.max_retries,
        retry_base_delay: args.retry_base_delay.0,
        max_tokens: args.max_tokens,
        connect_timeout: args.connect_timeout.0,
        idle_timeout: args.idle_timeout.0,
        bash_timeout_max: args.bash_timeout.0,
    };
    if args.max_turns == Some(0) {
        return Err("--max-turns must be at least 1".to_string());
    }
    config.prompt = PromptConfig {
        system: text_or_file(args.system_prompt.as_deref(), "--system-prompt")?,
        append: text_or_file(
            args.append_system_prompt.as_deref(),
            "--append-system-prompt",
        )?,
        context_files: !args.no_context_files,
    };
    if let Some(record) = &args.record {
        let parent = record.parent().filter(|p| !p.as_os_str().is_empty());
        if parent.is_some_and(|p| !p.is_dir()) {
            return Err(format!(
                "--record {}: the directory does not exist",
                record.display()
            ));
        }
        config.record = Some(record.clone());
    }
    config.secrets = Secrets::from_values(SECRET_VARS.iter().filter_map(|name| env.get(name)));
    let mut warnings = Vec::new();
    let github = crate::github::configure(
        env,
        args.profile.as_deref(),
        args.profiles_dir.as_deref(),
        config.limits.retry_base_delay,
        &config.secrets,
    )?;
    warnings.extend(github.warnings);
    if let Some(extension) = github.extension {
        config.extensions.push(std::sync::Arc::new(extension));
    }
    let decorate = matches!(
        config.model,
        ModelSource::Http {
            provider: HttpProvider::Dynamo,
            ..
        }
    );
    let (settings, dynamo_warnings) = DynamoSettings::from_env(
        env,
        &config.session_id,
        args.dynamo_trace_protocol,
        decorate,
        args.trace_file.clone(),
    );
    warnings.extend(dynamo_warnings);
    let flags = crate::telemetry::Flags {
        otel: args.otel,
        no_otel: args.no_otel,
        endpoint: args.otel_endpoint.clone(),
        service_name: args.otel_service_name.clone(),
        include_content: args.otel_include_content,
    };
    let identity = settings.is_active().then(|| settings.identity.clone());
    let telemetry =
        crate::telemetry::configure(env, &flags, &config.session_id, identity, &config.secrets);
    warnings.extend(telemetry.warnings);
    config.extensions.extend(telemetry.extension);
    if settings.is_active() {
        let bridge = DynamoBridge::new(settings).map_err(|err| {
            let path = args.trace_file.as_deref().unwrap_or(Path::new(""));
            format!("--trace-file {}: {err}", path.display())
        })?;
        config.extensions.push(std::sync::Arc::new(bridge));
    }
    // Checked again by the run; checking here keeps the error a usage error.
    let mut available = if config.tools.builtin {
        crate::tools::ToolSet::all_builtin()
    } else {
        Vec::new()
    };
    available.extend(config.extensions.iter().flat_map(|e| e.tools()));
    crate::tools::ToolSet::select(available, config.tools.allow.as_deref())?;
    Ok((config, warnings))
}

fn resolve_cwd(cwd: Option<&Path>) -> Result<PathBuf, String> {
    let Some(path) = cwd else {
        return std::env::current_dir()
            .map_err(|err| format!("cannot read the current directory: {err}"));
    };
    match std::fs::canonicalize(path) {
        Ok(real) if real.is_dir() => Ok(real),
        Ok(_) => Err(format!("--cwd {}: not a directory", path.display())),
        Err(_) => Err(format!("--cwd {}: no such directory", path.display())),
    }
}

/// `provider/id`, split on the first `/`.
pub fn parse_model(raw: &str, env: &dyn Env) -> Result<ModelSource, String> {
    let raw = raw.trim();
    let (provider, id) = match raw.split_once('/') {
        Some((provider, id)) => (provider, Some(id)),
        None if raw == "dynamo" => ("dynamo", None),
        None => return Err(format!("--model must be 'provider/id', got '{raw}'")),
    };
    let id = id.map(str::trim).filter(|id| !id.is_empty());
    let chosen = id.filter(|id| *id != "default").map(str::to_string);
    match provider {
        "dynamo" => Ok(ModelSource::Http {
            provider: HttpProvider::Dynamo,
            endpoint: Endpoint {
                base_url: normalize_base_url(
                    &env.get("DYNAMO_BASE_URL")
                        .or_else(|| env.get("OPENAI_BASE_URL"))
                        .unwrap_or_else(|| defaults::DYNAMO_BASE_URL.to_string()),
                ),
                api_key: env.get("DYNAMO_API_KEY"),
            },
            model: chosen,
        }),
        "openai" => Ok(ModelSource::Http {
            provider: HttpProvider::OpenAi,
            endpoint: Endpoint {
                base_url: normalize_base_url(
                    &env.get("OPENAI_BASE_URL")
                        .unwrap_or_else(|| defaults::OPENAI_BASE_URL.to_string()),
                ),
                api_key: env.get("OPENAI_API_KEY"),
            },
            model: chosen,
        }),
        "replay" => {
            let path =
                PathBuf::from(id.ok_or("--model replay/<file>: the fixture path is missing")?);
            let fixture = Fixture::load(&path).map_err(|err| format!("--model: {err}"))?;
            Ok(ModelSource::Replay { path, fixture })
        }
        other => Err(format!(
            "unknown provider '{other}' in --model '{raw}'; expected dynamo, openai or replay"
        )),
    }
}

fn text_or_file(value: Option<&str>, flag: &str) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(text) => match text.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map(Some)
                .map_err(|err| format!("{flag} @{path}: {err}")),
            None => Ok(Some(text.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MapEnv;

    fn env(pairs: &[(&str, &str)]) -> MapEnv {
        MapEnv::from_pairs(pairs)
    }

    fn endpoint(source: &ModelSource) -> (&'static str, String, Option<String>, Option<String>) {
        match source {
            ModelSource::Http {
                provider,
                endpoint,
                model,
            } => (
                provider.name(),
                endpoint.base_url.clone(),
                endpoint.api_key.clone(),
                model.clone(),
            ),
            ModelSource::Replay { .. } => panic!("not http"),
        }
    }

    #[test]
    fn the_model_splits_on_the_first_slash() {
        let e = env(&[]);
        assert_eq!(
            endpoint(&parse_model("dynamo/accounts/fw/models/glm", &e).unwrap()),
            (
                "dynamo",
                "http://127.0.0.1:8000/v1".into(),
                None,
                Some("accounts/fw/models/glm".into())
            )
        );
        assert_eq!(endpoint(&parse_model("dynamo", &e).unwrap()).3, None);
        assert_eq!(
            endpoint(&parse_model("dynamo/default", &e).unwrap()).3,
            None
        );
    }

    #[test]
    fn endpoints_follow_the_env_precedence() {
        let e = env(&[
            ("OPENAI_BASE_URL", "http://o:1/"),
            ("DYNAMO_API_KEY", "dk"),
            ("OPENAI_API_KEY", "ok"),
        ]);
        assert_eq!(
            endpoint(&parse_model("dynamo/m", &e).unwrap()),
            (
                "dynamo",
                "http://o:1/v1".into(),
                Some("dk".into()),
                Some("m".into())
            )
        );
        let e = env(&[
            ("OPENAI_BASE_URL", "http://o:1/v1"),
            ("DYNAMO_BASE_URL", "http://d:2"),
            ("OPENAI_API_KEY", "ok"),
        ]);
        assert_eq!(
            endpoint(&parse_model("dynamo/m", &e).unwrap()).1,
            "http://d:2/v1"
        );
        assert_eq!(
            endpoint(&parse_model("openai/gpt", &e).unwrap()),
            (
                "openai",
                "http://o:1/v1".into(),
                Some("ok".into()),
                Some("gpt".into())
            )
        );
        let blank = env(&[("DYNAMO_BASE_URL", "  ")]);
        assert_eq!(
            endpoint(&parse_model("dynamo/m", &blank).unwrap()).1,
            "http://127.0.0.1:8000/v1"
        );
    }

    #[test]
    fn bad_models_are_explained() {
        let e = env(&[]);
        assert_eq!(
            parse_model("gpt4", &e).err().unwrap(),
            "--model must be 'provider/id', got 'gpt4'"
        );
        assert_eq!(
            parse_model("anthropic/claude", &e).err().unwrap(),
            "unknown provider 'anthropic' in --model 'anthropic/claude'; expected dynamo, openai or replay"
        );
        let err = parse_model("replay/does/not/exist.jsonl", &e)
            .err()
            .unwrap();
        assert!(
            err.starts_with("--model: cannot read fixture does/not/exist.jsonl: "),
            "{err}"
        );
    }
}
