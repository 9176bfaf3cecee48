//! `--model provider/id`: which server, which wire format, which key.
//!
//! Built in: `dynamo`, `openai`, `anthropic`, `openrouter` (an OpenAI-compatible preset) and
//! `replay`. Any other OpenAI-compatible or Anthropic-compatible endpoint (a gateway, a
//! self-hosted server) is added without code by `--providers` / `AGENTIC_PI_PROVIDERS`, in
//! agentic-pi's shape: `{"acme": {"baseUrl": "https://gw/v1", "api": "openai-completions",
//! "apiKeyEnv": "ACME_API_KEY"}}`. For a built-in provider `baseUrl` alone re-points it (its
//! wire format and key stay); a new name also needs `api`. The key is the entry's `apiKey`
//! (the key itself), else the variable its `apiKeyEnv` names, else the provider's own variable
//! (`<NAME>_API_KEY` for a new name). A broken entry is a usage error: silently reaching the
//! vendor instead of the configured gateway is what the setting exists to prevent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::config::{
    Endpoint, Env, HttpProvider, ModelSource, defaults, http_url, normalize_base_url,
};
use crate::llm::fixture::Fixture;

/// The variable agentic-pi reads provider overrides from (the flag wins).
pub(super) const PROVIDERS_ENV: &str = "AGENTIC_PI_PROVIDERS";

const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// The key variables of the built-in providers.
const DYNAMO_KEY: &str = "DYNAMO_API_KEY";
const OPENAI_KEY: &str = "OPENAI_API_KEY";
const ANTHROPIC_KEY: &str = "ANTHROPIC_API_KEY";
const OPENROUTER_KEY: &str = "OPENROUTER_API_KEY";
const BUILTIN_KEY_VARS: [&str; 4] = [DYNAMO_KEY, OPENAI_KEY, ANTHROPIC_KEY, OPENROUTER_KEY];

/// One `--providers` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub base_url: String,
    pub api: Option<HttpProvider>,
    /// The key itself (`apiKey`).
    pub api_key: Option<String>,
    pub api_key_env: Option<String>,
}

/// Parses `--providers` (or the variable); `label` names the source in errors.
pub(super) fn parse_overrides(
    raw: &str,
    label: &str,
) -> Result<BTreeMap<String, Override>, String> {
    let parsed: Value =
        serde_json::from_str(raw).map_err(|err| format!("{label} must be JSON: {err}"))?;
    let Value::Object(entries) = parsed else {
        return Err(format!(
            "{label} must be a JSON object of provider -> {{baseUrl, ...}}"
        ));
    };
    let mut out = BTreeMap::new();
    for (prefix, entry) in entries {
        let base_url = entry["baseUrl"]
            .as_str()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .ok_or(format!("{label}.{prefix}.baseUrl is required"))?;
        http_url(&format!("{label}.{prefix}.baseUrl"), base_url)?;
        let api = match entry.get("api").and_then(Value::as_str) {
            None => None,
            Some("openai-completions") => Some(HttpProvider::Compatible),
            Some("anthropic-messages") => Some(HttpProvider::Anthropic),
            Some(other) => {
                return Err(format!(
                    "{label}.{prefix}.api '{other}' is not one worker speaks: openai-completions or anthropic-messages"
                ));
            }
        };
        let text = |field: &str| match entry.get(field) {
            None => Ok(None),
            Some(Value::String(value)) if !value.trim().is_empty() => Ok(Some(value.to_string())),
            // The value is never echoed: it may be a key.
            Some(_) => Err(format!(
                "{label}.{prefix}.{field} must be a non-empty string"
            )),
        };
        let api_key = text("apiKey")?;
        let api_key_env = text("apiKeyEnv")?;
        if api_key.is_some() && api_key_env.is_some() {
            return Err(format!(
                "{label}.{prefix}: give apiKey (the key) or apiKeyEnv (a variable holding it), not both"
            ));
        }
        out.insert(
            prefix,
            Override {
                base_url: base_url.trim_end_matches('/').to_string(),
                api,
                api_key,
                api_key_env,
            },
        );
    }
    Ok(out)
}

/// `provider/id`, split on the first `/`.
pub fn parse_model(
    raw: &str,
    env: &dyn Env,
    overrides: &BTreeMap<String, Override>,
) -> Result<ModelSource, String> {
    let raw = raw.trim();
    let malformed = || format!("--model must be 'provider/id', got '{raw}'");
    let (prefix, id) = match raw.split_once('/') {
        // Both halves must say something: `openai/` and `/gpt` are typos, not defaults.
        Some((prefix, id)) if prefix.trim().is_empty() || id.trim().is_empty() => {
            return Err(malformed());
        }
        Some((prefix, id)) => (prefix, Some(id.trim())),
        None if raw == "dynamo" => ("dynamo", None),
        None => return Err(malformed()),
    };
    let chosen = id.filter(|id| *id != "default").map(str::to_string);
    if prefix == "replay" {
        let path = PathBuf::from(id.ok_or("--model replay/<file>: the fixture path is missing")?);
        let fixture = Fixture::load(&path).map_err(|err| format!("--model: {err}"))?;
        return Ok(ModelSource::Replay { path, fixture });
    }
    let overridden = overrides.get(prefix);
    // A base URL from the environment, checked as it is read.
    let from_env = |names: &[&str], default: &str| -> Result<String, String> {
        match names
            .iter()
            .find_map(|name| env.get(name).map(|value| (*name, value)))
        {
            Some((name, value)) => http_url(name, &value).map(|_| value),
            None => Ok(default.to_string()),
        }
    };
    // (wire format, base URL, key variable, key required)
    let (provider, base_url, key_var, required) = match prefix {
        "dynamo" => (
            HttpProvider::Dynamo,
            from_env(
                &["DYNAMO_BASE_URL", "OPENAI_BASE_URL"],
                defaults::DYNAMO_BASE_URL,
            )?,
            DYNAMO_KEY.to_string(),
            false,
        ),
        "openai" => {
            let base = from_env(&["OPENAI_BASE_URL"], defaults::OPENAI_BASE_URL)?;
            // OpenAI itself needs a key; a compatible server elsewhere may not.
            let required = normalize_base_url(&base) == defaults::OPENAI_BASE_URL;
            (HttpProvider::OpenAi, base, OPENAI_KEY.to_string(), required)
        }
        "anthropic" => (
            HttpProvider::Anthropic,
            from_env(&["ANTHROPIC_BASE_URL"], defaults::ANTHROPIC_BASE_URL)?,
            ANTHROPIC_KEY.to_string(),
            true,
        ),
        "openrouter" => (
            HttpProvider::Compatible,
            OPENROUTER_BASE_URL.to_string(),
            OPENROUTER_KEY.to_string(),
            true,
        ),
        other => match overridden {
            Some(Override {
                api: Some(api),
                base_url,
                ..
            }) => (*api, base_url.clone(), conventional_key_var(other), false),
            Some(_) => {
                return Err(format!(
                    "--providers.{other} needs \"api\" (openai-completions or anthropic-messages): worker has no built-in provider of that name"
                ));
            }
            None => {
                return Err(format!(
                    "unknown provider '{other}' in --model '{raw}'; expected dynamo, openai, anthropic, openrouter, replay, or a name from --providers"
                ));
            }
        },
    };
    let (provider, base_url, key_var, required) = match overridden {
        // A re-pointed provider keeps its format unless the entry names one; the key then
        // comes from the entry's variable, and must be there.
        Some(entry) => (
            entry.api.unwrap_or(provider),
            entry.base_url.clone(),
            entry.api_key_env.clone().unwrap_or(key_var),
            required || entry.api_key_env.is_some(),
        ),
        None => (provider, base_url, key_var, required),
    };
    let inline_key = overridden.and_then(|entry| entry.api_key.clone());
    if provider == HttpProvider::Anthropic && chosen.is_none() {
        return Err(format!("--model {prefix}/<id>: the model id is missing"));
    }
    Ok(ModelSource::Http {
        provider,
        endpoint: Endpoint {
            base_url: normalize_base_url(&base_url),
            required_key: (required && inline_key.is_none()).then(|| key_var.clone()),
            api_key: inline_key.or_else(|| env.get(&key_var)),
            label: prefix.to_string(),
        },
        model: chosen,
    })
}

/// `<NAME>_API_KEY`: the key variable of a provider `--providers` adds.
fn conventional_key_var(name: &str) -> String {
    format!("{}_API_KEY", name.to_uppercase().replace('-', "_"))
}

/// Every model key the command line and environment hold, whichever model the run uses: the
/// built-in providers' variables, and each `--providers` entry's `apiKey`, the variable its
/// `apiKeyEnv` names and its `<NAME>_API_KEY`.
pub(super) fn known_keys(env: &dyn Env, overrides: &BTreeMap<String, Override>) -> Vec<String> {
    let mut vars: Vec<String> = BUILTIN_KEY_VARS.iter().map(|v| v.to_string()).collect();
    let mut keys = Vec::new();
    for (name, entry) in overrides {
        keys.extend(entry.api_key.clone());
        vars.extend(entry.api_key_env.clone());
        vars.push(conventional_key_var(name));
    }
    keys.extend(vars.iter().filter_map(|var| env.get(var)));
    keys
}

#[cfg(test)]
mod tests;
