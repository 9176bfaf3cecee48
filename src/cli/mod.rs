//! The command line: flags (with their environment fallbacks) and turning them into a
//! [`RunConfig`]. Every problem found here is a usage error: exit 2, a message on stderr,
//! nothing on stdout.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::config::{
    Endpoint, HttpProvider, Limits, ModelSource, PromptConfig, RunConfig, ToolSelection, defaults,
    normalize_base_url,
};
pub use crate::config::{Env, ProcessEnv};
use crate::dynamo::{DynamoBridge, DynamoSettings};
use crate::file_search::FileSearch;
use crate::llm::fixture::Fixture;
use crate::secrets::Secrets;
use crate::skills::Skills;
use crate::web::WebSearch;

mod args;
mod auth_file;
pub mod compat;
mod prompt;
pub mod reference;

pub use args::{Cli, Command, RunArgs, TraceCommand};
pub use prompt::{PromptError, read_prompt};

/// Variables whose values must never be written to a recording.
const SECRET_VARS: [&str; 6] = [
    "DYNAMO_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_APP_PRIVATE_KEY",
];

/// The run's configuration and the warnings found on the way (reported, not fatal).
pub fn build_config(args: &RunArgs, env: &dyn Env) -> Result<(RunConfig, Vec<String>), String> {
    let cwd = resolve_cwd(args.cwd.as_deref())?;
    let mut model = parse_model(&args.model, env)?;
    let auth = match &args.auth_file {
        Some(path) => auth_file::load(path)?,
        None => auth_file::AuthFile::default(),
    };
    if let ModelSource::Http {
        provider, endpoint, ..
    } = &mut model
        && let Some(key) = auth.keys.get(provider.name())
    {
        endpoint.api_key = Some(key.clone());
    }
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
        provider: args.web_search_provider,
        max_calls: args.web_search_max_calls,
    };
    config
        .extensions
        .push(Arc::new(WebSearch::configure(&web, env)));
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
                required_key: None,
            },
            model: chosen,
        }),
        "openai" => {
            let base_url = normalize_base_url(
                &env.get("OPENAI_BASE_URL")
                    .unwrap_or_else(|| defaults::OPENAI_BASE_URL.to_string()),
            );
            // OpenAI itself needs a key; a compatible server elsewhere may not.
            let required_key = (base_url == defaults::OPENAI_BASE_URL).then_some("OPENAI_API_KEY");
            Ok(ModelSource::Http {
                provider: HttpProvider::OpenAi,
                endpoint: Endpoint {
                    base_url,
                    api_key: env.get("OPENAI_API_KEY"),
                    required_key,
                },
                model: chosen,
            })
        }
        "anthropic" => Ok(ModelSource::Http {
            provider: HttpProvider::Anthropic,
            endpoint: Endpoint {
                base_url: env
                    .get("ANTHROPIC_BASE_URL")
                    .unwrap_or_else(|| defaults::ANTHROPIC_BASE_URL.to_string())
                    .trim_end_matches('/')
                    .to_string(),
                api_key: env.get("ANTHROPIC_API_KEY"),
                required_key: Some("ANTHROPIC_API_KEY"),
            },
            model: Some(chosen.ok_or("--model anthropic/<id>: the model id is missing")?),
        }),
        "replay" => {
            let path =
                PathBuf::from(id.ok_or("--model replay/<file>: the fixture path is missing")?);
            let fixture = Fixture::load(&path).map_err(|err| format!("--model: {err}"))?;
            Ok(ModelSource::Replay { path, fixture })
        }
        other => Err(format!(
            "unknown provider '{other}' in --model '{raw}'; expected dynamo, openai, anthropic or replay"
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
            parse_model("gemini/pro", &e).err().unwrap(),
            "unknown provider 'gemini' in --model 'gemini/pro'; expected dynamo, openai, anthropic or replay"
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
