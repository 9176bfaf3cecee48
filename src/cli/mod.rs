//! The command line: flags (with their environment fallbacks) and turning them into a
//! [`RunConfig`]. Every problem found here is a usage error: exit 2, a message on stderr,
//! nothing on stdout.

use std::path::{Path, PathBuf};

use std::sync::Arc;

pub use crate::config::{Env, ProcessEnv};
use crate::config::{ModelSource, PromptConfig, RunConfig, ToolSelection};
use crate::dynamo::{DynamoBridge, DynamoSettings};
use crate::file_search::FileSearch;
use crate::ids::SessionId;
use crate::input_file::{InputKind, read_text};
use crate::secrets::Secrets;
use crate::skills::Skills;
use crate::web::WebSearch;

mod args;
mod auth_file;
pub mod compat;
mod credentials;
mod error;
mod limits;
mod live;
pub mod manual;
mod mcp;
mod model;
mod pi_agent;
mod prompt;
pub mod reference;
mod sandbox;
mod tool_names;

pub use args::{Cli, Command, McpCheckArgs, McpCommand, RunArgs, SandboxArgs, TraceCommand};
pub use auth_file::AuthFileError;
pub use error::UsageError;
pub use limits::LimitsError;
pub use mcp::{McpCheck, McpCheckOutcome};
pub use model::{ModelError, parse_model};
pub use pi_agent::PiSettingsError;
pub use prompt::{InvalidPrompt, PromptError, read_prompt, read_prompt_command};

/// The run's configuration and the warnings found on the way (reported, not fatal).
///
/// Every credential is added to `secrets` as soon as it is known, so the caller can redact
/// what it prints (warnings, or the usage error) with the same set the run uses.
pub fn build_config(
    args: &RunArgs,
    env: &dyn Env,
    secrets: &Secrets,
    commands: Option<crate::live::CommandLines>,
) -> Result<(RunConfig, Vec<String>), UsageError> {
    let cwd = resolve_cwd(args.cwd.as_deref())?;
    let (model, sources) = model_and_keys(args, env, secrets)?;
    let mut config = RunConfig::new(cwd, model);
    config.secrets = secrets.clone();
    // The session id names everything downstream (Dynamo, OTEL, the trace): settle it first,
    // from the resumed file (read once, here) when there is one.
    let loaded = resumed(args, env, &config.cwd)?;
    config.session_id = session_id(args, loaded.as_ref())?;
    let retry_warning = run_settings(args, &sources.pi_settings, &mut config)?;
    let mut warnings = sources.auth.warnings;
    warnings.extend(sources.pi_settings.warnings);
    warnings.extend(retry_warning);
    let profile_mcp_tools = add_tool_extensions(args, env, &mut config, &mut warnings)?;
    config.sandbox = sandbox::sandbox_settings(&args.isolation);
    if let Some(scope) = &config.tools.edit_scope {
        config.sandbox.write_scope = scope.directories();
        if config.sandbox.write_scope.is_none()
            && args.isolation.backend == crate::sandbox::Backend::Linux
        {
            warnings.push(format!(
                "--edit-scope {}: not every glob names a directory, so commands (bash) can still write anywhere in --cwd; the file tools keep to the globs",
                scope.patterns().join(",")
            ));
        }
    }
    if args.isolation.backend == crate::sandbox::Backend::Linux {
        config.sandbox.confinement = Some(sandbox::confine(
            &args.isolation,
            args.auth_file.as_deref(),
            env,
            &config.sandbox,
            &config.cwd,
        )?);
    } else {
        config.sandbox.contain = Some(crate::tools::contain::Containment::new());
    }
    // After the sandbox: a server with a network allowance gets a sandbox runner of its own.
    mcp::add_mcp(args, env, &mut config, &mut warnings, profile_mcp_tools)?;
    add_observers(args, env, &mut config, &mut warnings)?;
    live::add_live_control(args, commands, &mut config)?;
    // Checked again by the run; checking here keeps the error a usage error.
    let mut available = if config.tools.builtin {
        crate::tools::ToolSet::all_builtin()
    } else {
        Vec::new()
    };
    available.extend(config.extensions.iter().flat_map(|e| e.tools()));
    if let Some(allow) = &mut config.tools.allow {
        warnings.extend(tool_names::keep_offered(allow, &available));
    }
    crate::tools::ToolSet::select(available, config.tools.allow.as_deref())?;
    // Last: the session file is created here, and a usage error must leave nothing behind.
    config.session = match session_setup(args, env, &config, loaded) {
        Ok(setup) => setup,
        // The default place may be read-only (a container's home): the run goes on unsaved.
        Err(err)
            if args.session_dir.is_none() && args.resume.is_none() && !args.continue_session =>
        {
            warnings.push(format!("{err}; this run's session is not saved"));
            None
        }
        Err(err) => return Err(err),
    };
    Ok((config, warnings))
}

/// Where the model's key and Pi's settings came from.
struct KeySources {
    auth: auth_file::AuthFile,
    pi_settings: pi_agent::Settings,
}

/// The model (with its key from the auth file, if it has one there), every credential
/// registered with `secrets`, and the files they came from.
fn model_and_keys(
    args: &RunArgs,
    env: &dyn Env,
    secrets: &Secrets,
) -> Result<(ModelSource, KeySources), UsageError> {
    let overrides = match (&args.providers, env.get(model::PROVIDERS_ENV)) {
        (Some(raw), _) => model::parse_overrides(raw, "--providers")?,
        (None, Some(raw)) => model::parse_overrides(&raw, model::PROVIDERS_ENV)?,
        (None, None) => std::collections::BTreeMap::default(),
    };
    let mut model = parse_model(&args.model, env, &overrides)?;
    let agent_dir = pi_agent::agent_dir(env);
    let auth = match (&args.auth_file, &agent_dir) {
        (Some(path), _) => auth_file::load(path)?,
        (None, Some(dir)) => auth_file::load_default(&dir.join("auth.json"))?,
        (None, None) => auth_file::AuthFile::default(),
    };
    let pi_settings = match &agent_dir {
        Some(dir) => pi_agent::settings(dir)?,
        None => pi_agent::Settings::default(),
    };
    if let ModelSource::Http { endpoint, .. } = &mut model
        && let Some(key) = auth.keys.get(&endpoint.label)
    {
        endpoint.api_key = Some(key.clone());
    }
    credentials::register(
        secrets,
        &credentials::Known {
            env,
            overrides: &overrides,
            model: &model,
            auth: &auth,
            otel_endpoint: args.otel_endpoint.as_deref(),
        },
    );
    Ok((model, KeySources { auth, pi_settings }))
}

/// The run's own settings: output schema and files, prices, thinking, tool selection,
/// limits, the system prompt and the recording. Returns the retry warning, if any.
fn run_settings(
    args: &RunArgs,
    pi_settings: &pi_agent::Settings,
    config: &mut RunConfig,
) -> Result<Option<String>, UsageError> {
    config.price.clone_from(&args.price);
    if let Some(path) = &args.output_schema {
        let text = read_text(path, InputKind::OutputSchema).map_err(|source| {
            UsageError::OutputSchemaUnreadable {
                path: path.clone(),
                source,
            }
        })?;
        let schema =
            serde_json::from_str(&text).map_err(|source| UsageError::OutputSchemaNotJson {
                path: path.clone(),
                source,
            })?;
        let schema = crate::output::OutputSchema::new(schema).map_err(|source| {
            UsageError::OutputSchemaInvalid {
                path: path.clone(),
                source,
            }
        })?;
        config.output_schema = Some(Arc::new(schema));
    }
    config
        .output_last_message
        .clone_from(&args.output_last_message);
    if let Some(path) = &args.prices_file {
        config
            .prices
            .merge_file(path)
            .map_err(|source| UsageError::PricesFile {
                path: path.clone(),
                source,
            })?;
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
        edit_scope: match args.edit_scope.as_slice() {
            [] => None,
            patterns => Some(Arc::new(crate::tools::EditScope::new(
                &config.cwd,
                patterns,
            )?)),
        },
    };
    let (run_limits, retry_warning) = limits::limits(args, &pi_settings.retry)?;
    config.limits = run_limits;
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
            return Err(UsageError::RecordDirectory {
                path: record.clone(),
            });
        }
        config.record = Some(record.clone());
    }
    Ok(retry_warning)
}

/// The extensions that offer tools, in agentic-pi's status order: GitHub, web search, file
/// search, skills. Returns the MCP tools the `--profile` lists (it narrows them).
fn add_tool_extensions(
    args: &RunArgs,
    env: &dyn Env,
    config: &mut RunConfig,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<String>>, UsageError> {
    let github = crate::github::configure(
        env,
        args.profile.as_deref(),
        args.profiles_dir.as_deref(),
        limits::tool_retry_base_delay(args),
        &config.secrets,
    )?;
    warnings.extend(github.warnings);
    let profile_mcp_tools = github.mcp_tools;
    config.extensions.push(Arc::new(github.extension));
    let web = crate::web::Settings {
        enabled: !args.no_web_search,
        provider: args.web_search_provider.clone(),
        max_calls: args.web_search_max_calls,
        fetch_format: args.web_fetch_format,
        allow_hosts: args.web_allow_host.clone(),
        allow_private: args.web_allow_private,
        retry: limits::tool_retry(args),
    };
    let (web, web_warnings) = WebSearch::configure(&web, env, &config.secrets)?;
    warnings.extend(web_warnings);
    config.extensions.push(Arc::new(web));
    config.extensions.push(Arc::new(FileSearch::configure(
        !args.no_file_search,
        args.file_search_mode,
    )));
    if args
        .skill
        .iter()
        .any(|path| path.to_string_lossy().trim().is_empty())
    {
        return Err(UsageError::EmptySkillPath);
    }
    let skills = crate::skills::Settings {
        paths: args.skill.clone(),
        no_discovery: args.no_skills,
        home: env.get("HOME").map(PathBuf::from),
    };
    config
        .extensions
        .push(Arc::new(Skills::discover(&skills, &config.cwd)));
    if args.subagents {
        config
            .extensions
            .push(Arc::new(crate::subagents::Subagents::new(
                &config.cwd,
                &args.agents_dir,
            )));
    }
    config.subagents = crate::config::SubagentLimits {
        max_concurrent: args.max_subagents as usize,
        max_depth: args.max_subagent_depth,
        events: args.subagent_events,
    };
    Ok(profile_mcp_tools)
}

/// The extensions that watch the run: telemetry, then the Dynamo bridge (with its serving
/// hints; the serving flags are a warning for a model Dynamo does not serve).
fn add_observers(
    args: &RunArgs,
    env: &dyn Env,
    config: &mut RunConfig,
    warnings: &mut Vec<String>,
) -> Result<(), UsageError> {
    let decorate = matches!(config.model, ModelSource::Http { provider, .. } if provider.dynamo);
    // --parent-session-id is the Dynamo parent trajectory unless the environment names one.
    let with_parent = WithDefault {
        env,
        name: "DYN_AGENT_PARENT_TRAJECTORY_ID",
        value: args.parent_session_id.clone(),
    };
    let (mut settings, dynamo_warnings) = DynamoSettings::from_env(
        &with_parent,
        &config.session_id,
        args.dynamo_trace_protocol,
        decorate,
        args.trace_file.clone(),
    );
    warnings.extend(dynamo_warnings);
    settings.hints = crate::dynamo::hints::HintSettings {
        agent_hints: !args.no_serving_hints,
        priority: args.priority,
        strict_priority: args.strict_priority,
        max_tokens: config.limits.max_tokens,
        deadline: config.limits.timeout.map(|t| (config.budget_start, t)),
        tenant: args.tenant.clone(),
    };
    settings.session_final = args.session_final;
    let serving_flags = [
        ("--priority", args.priority.is_some()),
        ("--strict-priority", args.strict_priority.is_some()),
        ("--tenant", args.tenant.is_some()),
        ("--session-final", args.session_final),
    ];
    if !decorate {
        for (flag, _) in serving_flags.iter().filter(|(_, given)| *given) {
            warnings.push(format!(
                "{flag} is for the dynamo provider; this run's model is not served by Dynamo"
            ));
        }
    }
    let flags = crate::telemetry::Flags {
        otel: args.otel,
        no_otel: args.no_otel,
        endpoint: args.otel_endpoint.clone(),
        service_name: args.otel_service_name.clone(),
        include_content: args.otel_include_content,
        namespace: Some(args.otel_namespace.clone()),
    };
    let identity = settings.is_active().then(|| settings.identity.clone());
    let telemetry = crate::telemetry::configure(
        env,
        &flags,
        &config.session_id,
        config.sandbox.backend.name(),
        identity,
        &config.secrets,
    )?;
    warnings.extend(telemetry.warnings);
    config.extensions.extend(telemetry.extension);
    if settings.is_active() {
        let bridge = DynamoBridge::new(settings, config.secrets.clone()).map_err(|source| {
            UsageError::TraceFile {
                path: args.trace_file.clone().unwrap_or_default(),
                source,
            }
        })?;
        config.extensions.push(std::sync::Arc::new(bridge));
    }
    Ok(())
}

/// The environment, with one variable given a value when it has none.
struct WithDefault<'a> {
    env: &'a dyn Env,
    name: &'static str,
    value: Option<String>,
}

impl Env for WithDefault<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .or_else(|| (name == self.name).then(|| self.value.clone()).flatten())
    }
}

/// The session's directory, from `--session-dir` or the XDG default.
fn session_dir(args: &RunArgs, env: &dyn Env, cwd: &Path) -> Result<PathBuf, UsageError> {
    if let Some(dir) = &args.session_dir {
        return Ok(dir.clone());
    }
    crate::session::default_dir(
        env.get("XDG_STATE_HOME").map(PathBuf::from).as_deref(),
        env.get("HOME").map(PathBuf::from).as_deref(),
        cwd,
    )
    .ok_or(UsageError::NoSessionDir)
}

/// The session a run continues (`--resume`, `--continue`), loaded.
fn resumed(
    args: &RunArgs,
    env: &dyn Env,
    cwd: &Path,
) -> Result<Option<crate::session::Loaded>, UsageError> {
    let path = match (&args.resume, args.continue_session) {
        (Some(target), _) => {
            let as_path = PathBuf::from(target);
            // A path (it has a `/`, or names something other than a directory) is read as the
            // file, and refused if it is not a regular one; anything else is an id.
            let is_path = target.contains('/')
                || std::fs::metadata(&as_path).is_ok_and(|meta| !meta.is_dir());
            if is_path {
                as_path
            } else {
                let dir = session_dir(args, env, cwd)?;
                crate::session::find(&dir, target).ok_or_else(|| UsageError::NoSuchSession {
                    target: target.clone(),
                    dir: dir.clone(),
                })?
            }
        }
        (None, true) => {
            let dir = session_dir(args, env, cwd)?;
            crate::session::most_recent(&dir, cwd).ok_or_else(|| UsageError::NothingToContinue {
                cwd: cwd.to_path_buf(),
                dir: dir.clone(),
            })?
        }
        (None, false) => return Ok(None),
    };
    crate::session::load(&path)
        .map(Some)
        .map_err(UsageError::Resume)
}

/// The run's session id: the resumed session's, `--session-id`, or a new UUIDv7.
fn session_id(
    args: &RunArgs,
    loaded: Option<&crate::session::Loaded>,
) -> Result<SessionId, UsageError> {
    let given = match &args.session_id {
        Some(id) => Some(SessionId::parse(id).map_err(UsageError::SessionId)?),
        None => None,
    };
    if let Some(id) = &args.parent_session_id {
        SessionId::parse(id).map_err(UsageError::ParentSessionId)?;
    }
    match (loaded, given) {
        (Some(loaded), Some(id)) if id != loaded.id => Err(UsageError::SessionIdMismatch {
            given: id,
            resumed: loaded.id.clone(),
        }),
        (Some(loaded), _) => Ok(loaded.id.clone()),
        (None, Some(id)) => Ok(id),
        (None, None) => Ok(SessionId::generate()),
    }
}

/// The session file to append to (none with `--no-session`), and the history it continues.
fn session_setup(
    args: &RunArgs,
    env: &dyn Env,
    config: &RunConfig,
    loaded: Option<crate::session::Loaded>,
) -> Result<Option<crate::config::SessionSetup>, UsageError> {
    if args.no_session {
        // Resuming without saving: the history is read, nothing is written.
        return Ok(loaded.map(|loaded| crate::config::SessionSetup {
            writer: None,
            resumed: Some(resumed_from(&loaded)),
            prior_entries: loaded.entry_ids.len(),
            history: loaded.messages,
            torn: loaded.torn,
        }));
    }
    let secrets = config.secrets.clone();
    let setup = match loaded {
        Some(loaded) => crate::config::SessionSetup {
            writer: Some(
                crate::session::SessionWriter::append_to(&loaded, secrets).map_err(|source| {
                    UsageError::ResumeAppend {
                        path: loaded.path.clone(),
                        source,
                    }
                })?,
            ),
            resumed: Some(resumed_from(&loaded)),
            prior_entries: loaded.entry_ids.len(),
            history: loaded.messages,
            torn: loaded.torn,
        },
        None => {
            let dir = session_dir(args, env, &config.cwd)?;
            let writer = crate::session::SessionWriter::create(
                &dir,
                config.session_id.as_str(),
                &config.cwd,
                args.parent_session_id.as_deref(),
                secrets,
            )
            .map_err(|source| UsageError::SessionCreate {
                dir: dir.clone(),
                source,
            })?;
            crate::config::SessionSetup {
                writer: Some(writer),
                resumed: None,
                prior_entries: 0,
                history: Vec::new(),
                torn: None,
            }
        }
    };
    Ok(Some(setup))
}

fn resumed_from(loaded: &crate::session::Loaded) -> crate::events::ResumedFrom {
    crate::events::ResumedFrom {
        path: loaded.path.display().to_string(),
        entries: loaded.messages.len(),
        interrupted: loaded.interrupted,
    }
}

fn resolve_cwd(cwd: Option<&Path>) -> Result<PathBuf, UsageError> {
    let Some(path) = cwd else {
        return std::env::current_dir().map_err(UsageError::CurrentDir);
    };
    match std::fs::canonicalize(path) {
        Ok(real) if real.is_dir() => Ok(real),
        Ok(_) => Err(UsageError::CwdNotADirectory {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(UsageError::NoSuchCwd {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn text_or_file(value: Option<&str>, flag: &'static str) -> Result<Option<String>, UsageError> {
    match value {
        None => Ok(None),
        Some(text) => match text.strip_prefix('@') {
            Some(path) => read_text(Path::new(path), InputKind::SystemPrompt)
                .map(Some)
                .map_err(|source| UsageError::PromptFile {
                    flag,
                    path: PathBuf::from(path),
                    source,
                }),
            None => Ok(Some(text.to_string())),
        },
    }
}
