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

use crate::config::{Endpoint, Env, ModelSource, UrlError, http_url, normalize_base_url};
use crate::llm::Provider;
use crate::llm::fixture::{Fixture, FixtureError};
use crate::llm::provider::BUILT_IN;

/// The variable agentic-pi reads provider overrides from (the flag wins).
pub(super) const PROVIDERS_ENV: &str = "AGENTIC_PI_PROVIDERS";

/// One `--providers` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub base_url: String,
    /// The row of the wire format its `api` names; `None`: a built-in keeps its own.
    pub api: Option<&'static Provider>,
    /// The key itself (`apiKey`).
    pub api_key: Option<String>,
    pub api_key_env: Option<String>,
}

/// Why `--model` or `--providers` (or its variable) cannot be used: a usage error. `label`
/// names where the providers came from, `provider` the entry.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The providers are not JSON.
    #[error("{label} must be JSON: {source}")]
    ProvidersNotJson {
        /// `--providers`, or the variable.
        label: &'static str,
        /// Why they did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The providers are JSON, but not an object.
    #[error("{label} must be a JSON object of provider -> {{baseUrl, ...}}")]
    ProvidersNotObject {
        /// `--providers`, or the variable.
        label: &'static str,
    },
    /// An entry without `baseUrl`.
    #[error("{label}.{provider}.baseUrl is required")]
    MissingBaseUrl {
        /// `--providers`, or the variable.
        label: &'static str,
        /// The entry's name.
        provider: String,
    },
    /// A base URL (an entry's, or a built-in provider's variable) that is not an http(s) URL.
    #[error(transparent)]
    BaseUrl(#[from] UrlError),
    /// An entry whose `api` is not a wire format worker speaks.
    #[error("{label}.{provider}.api '{api}' is not one worker speaks: {}", Provider::api_names().join(" or "))]
    UnknownApi {
        /// `--providers`, or the variable.
        label: &'static str,
        /// The entry's name.
        provider: String,
        /// The `api` it gives.
        api: String,
    },
    /// An entry's `apiKey` or `apiKeyEnv` that is not a non-empty string (never echoed: it may
    /// be a key).
    #[error("{label}.{provider}.{field} must be a non-empty string")]
    NotAString {
        /// `--providers`, or the variable.
        label: &'static str,
        /// The entry's name.
        provider: String,
        /// `apiKey` or `apiKeyEnv`.
        field: &'static str,
    },
    /// An entry that gives both `apiKey` and `apiKeyEnv`.
    #[error(
        "{label}.{provider}: give apiKey (the key) or apiKeyEnv (a variable holding it), not both"
    )]
    KeyAndKeyEnv {
        /// `--providers`, or the variable.
        label: &'static str,
        /// The entry's name.
        provider: String,
    },
    /// `--model` is not `provider/id`.
    #[error("--model must be 'provider/id', got '{raw}'")]
    Malformed {
        /// The value, trimmed.
        raw: String,
    },
    /// `--model replay/` without the fixture's path.
    #[error("--model replay/<file>: the fixture path is missing")]
    MissingFixturePath,
    /// The replay fixture cannot be used.
    #[error("--model: {0}")]
    Fixture(#[source] FixtureError),
    /// A `--providers` entry that adds a provider without naming its wire format.
    #[error("--providers.{provider} needs \"api\" ({}): worker has no built-in provider of that name", Provider::api_names().join(" or "))]
    NeedsApi {
        /// The entry's name.
        provider: String,
    },
    /// A provider that is neither built in nor added by `--providers`.
    #[error(
        "unknown provider '{provider}' in --model '{raw}'; expected {}, replay, or a name from --providers",
        built_in_names()
    )]
    UnknownProvider {
        /// The provider as given.
        provider: String,
        /// The value of `--model`, trimmed.
        raw: String,
    },
    /// A provider that cannot list its models, without a model id.
    #[error("--model {provider}/<id>: the model id is missing")]
    MissingModelId {
        /// The provider.
        provider: String,
    },
}

/// The built-in providers' names, for the error that names an unknown one.
fn built_in_names() -> String {
    let names: Vec<&str> = BUILT_IN.iter().map(|provider| provider.name).collect();
    names.join(", ")
}

/// Parses `--providers` (or the variable); `label` names the source in errors.
pub(super) fn parse_overrides(
    raw: &str,
    label: &'static str,
) -> Result<BTreeMap<String, Override>, ModelError> {
    let parsed: Value = serde_json::from_str(raw)
        .map_err(|source| ModelError::ProvidersNotJson { label, source })?;
    let Value::Object(entries) = parsed else {
        return Err(ModelError::ProvidersNotObject { label });
    };
    let mut out = BTreeMap::new();
    for (prefix, entry) in entries {
        let provider = || prefix.clone();
        let base_url = entry["baseUrl"]
            .as_str()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .ok_or_else(|| ModelError::MissingBaseUrl {
                label,
                provider: provider(),
            })?;
        http_url(&format!("{label}.{prefix}.baseUrl"), base_url)?;
        let api = match entry.get("api").and_then(Value::as_str) {
            None => None,
            Some(api) => Some(
                Provider::for_api(api).ok_or_else(|| ModelError::UnknownApi {
                    label,
                    provider: provider(),
                    api: api.to_string(),
                })?,
            ),
        };
        let text = |field: &'static str| match entry.get(field) {
            None => Ok(None),
            Some(Value::String(value)) if !value.trim().is_empty() => Ok(Some(value.clone())),
            // The value is never echoed: it may be a key.
            Some(_) => Err(ModelError::NotAString {
                label,
                provider: provider(),
                field,
            }),
        };
        let api_key = text("apiKey")?;
        let api_key_env = text("apiKeyEnv")?;
        if api_key.is_some() && api_key_env.is_some() {
            return Err(ModelError::KeyAndKeyEnv {
                label,
                provider: provider(),
            });
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
) -> Result<ModelSource, ModelError> {
    let raw = raw.trim();
    let malformed = || ModelError::Malformed {
        raw: raw.to_string(),
    };
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
        let path = PathBuf::from(id.ok_or(ModelError::MissingFixturePath)?);
        let fixture = Fixture::load(&path).map_err(ModelError::Fixture)?;
        return Ok(ModelSource::Replay {
            path,
            fixture: std::sync::Arc::new(fixture),
        });
    }
    let overridden = overrides.get(prefix);
    // (row, base URL, key variable, key required)
    let (provider, base_url, key_var, required) = match (Provider::named(prefix), overridden) {
        (Some(built_in), _) => {
            let base_url = env_base_url(env, built_in)?;
            let required = built_in.key_required(&normalize_base_url(&base_url));
            (built_in, base_url, built_in.key_var.to_string(), required)
        }
        (None, Some(entry)) => match entry.api {
            Some(api) => (
                api,
                entry.base_url.clone(),
                conventional_key_var(prefix),
                false,
            ),
            None => {
                return Err(ModelError::NeedsApi {
                    provider: prefix.to_string(),
                });
            }
        },
        (None, None) => {
            return Err(ModelError::UnknownProvider {
                provider: prefix.to_string(),
                raw: raw.to_string(),
            });
        }
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
    if !provider.dialect.lists_models() && chosen.is_none() {
        return Err(ModelError::MissingModelId {
            provider: prefix.to_string(),
        });
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

/// The base URL of a built-in provider: the first of its variables that is set (checked as
/// it is read), else its default.
fn env_base_url(env: &dyn Env, provider: &Provider) -> Result<String, UrlError> {
    match provider
        .base_url_vars
        .iter()
        .find_map(|name| env.get(name).map(|value| (*name, value)))
    {
        Some((name, value)) => http_url(name, &value).map(|_| value),
        None => Ok(provider.default_base_url.to_string()),
    }
}

/// `<NAME>_API_KEY`: the key variable of a provider `--providers` adds.
fn conventional_key_var(name: &str) -> String {
    format!("{}_API_KEY", name.to_uppercase().replace('-', "_"))
}

/// Every model key the command line and environment hold, whichever model the run uses: the
/// built-in providers' variables, and each `--providers` entry's `apiKey`, the variable its
/// `apiKeyEnv` names and its `<NAME>_API_KEY`.
pub(super) fn known_keys(env: &dyn Env, overrides: &BTreeMap<String, Override>) -> Vec<String> {
    let mut vars: Vec<String> = BUILT_IN
        .iter()
        .map(|provider| provider.key_var.to_string())
        .collect();
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
