//! The command line: flags (with their environment fallbacks) and turning them into a
//! [`RunConfig`]. Every problem found here is a usage error: exit 2, a message on stderr,
//! nothing on stdout.

use std::path::{Path, PathBuf};

use std::sync::Arc;

pub use crate::config::{Env, ProcessEnv};
use crate::config::{HttpProvider, Limits, ModelSource, PromptConfig, RunConfig, ToolSelection};
use crate::dynamo::{DynamoBridge, DynamoSettings};
use crate::file_search::FileSearch;
use crate::secrets::Secrets;
use crate::skills::Skills;
use crate::web::WebSearch;

mod args;
mod auth_file;
pub mod compat;
mod model;
mod prompt;
pub mod reference;

pub use args::{Cli, Command, RunArgs, TraceCommand};
pub use model::parse_model;
pub use prompt::{PromptError, read_prompt};

/// Variables whose values must never be written to a recording.
const SECRET_VARS: [&str; 7] = [
    "DYNAMO_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
];

/// The run's configuration and the warnings found on the way (reported, not fatal).
pub fn build_config(args: &RunArgs, env: &dyn Env) -> Result<(RunConfig, Vec<String>), String> {
    let cwd = resolve_cwd(args.cwd.as_deref())?;
    let overrides = match (&args.providers, env.get(model::PROVIDERS_ENV)) {
        (Some(raw), _) => model::parse_overrides(raw, "--providers")?,
        (None, Some(raw)) => model::parse_overrides(&raw, model::PROVIDERS_ENV)?,
        (None, None) => Default::default(),
    };
    let mut model = parse_model(&args.model, env, &overrides)?;
    let auth = match &args.auth_file {
        Some(path) => auth_file::load(path)?,
        None => auth_file::AuthFile::default(),
    };
    if let ModelSource::Http { endpoint, .. } = &mut model
        && let Some(key) = auth.keys.get(&endpoint.label)
    {
        endpoint.api_key = Some(key.clone());
    }
    let mut config = RunConfig::new(cwd, model);
    config.price = args.price;
    if let Some(path) = &args.prices_file {
        config
            .prices
            .merge_file(path)
            .map_err(|err| format!("--prices-file {}: {err}", path.display()))?;
    }
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
    config.secrets = Secrets::from_values(
        SECRET_VARS
            .iter()
            .filter_map(|name| env.get(name))
            .chain(auth.keys.into_values()),
    );
    let mut warnings = auth.warnings;
    let github = crate::github::configure(
        env,
        args.profile.as_deref(),
        args.profiles_dir.as_deref(),
        config.limits.retry_base_delay,
        &config.secrets,
    )?;
    warnings.extend(github.warnings);
    config.extensions.push(Arc::new(github.extension));
    let web = crate::web::Settings {
        enabled: !args.no_web_search,
        provider: args.web_search_provider.clone(),
        max_calls: args.web_search_max_calls,
        allow_hosts: args.web_allow_host.clone(),
        allow_private: args.web_allow_private,
        retry: crate::llm::RetryPolicy::new(
            config.limits.max_retries,
            config.limits.retry_base_delay,
        ),
    };
    let (web, web_warnings) = WebSearch::configure(&web, env, &config.secrets);
    warnings.extend(web_warnings);
    config.extensions.push(Arc::new(web));
    config.extensions.push(Arc::new(FileSearch::configure(
        !args.no_file_search,
        args.file_search_mode,
    )));
    let skills = crate::skills::Settings {
        paths: args.skill.clone(),
        no_discovery: args.no_skills,
        home: env.get("HOME").map(PathBuf::from),
    };
    config
        .extensions
        .push(Arc::new(Skills::discover(&skills, &config.cwd)));
    config.sandbox = crate::sandbox::Settings {
        backend: args.sandbox,
        image: args.sandbox_image.clone(),
        env: args.sandbox_env.clone(),
        allow_hosts: (!args.allow_host.is_empty()).then(|| args.allow_host.clone()),
        no_network: args.no_network,
    };
    if args.session_dir.is_some() && !args.no_session {
        warnings.push(
            "--session-dir: worker does not write session files yet; nothing is persisted"
                .to_string(),
        );
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
