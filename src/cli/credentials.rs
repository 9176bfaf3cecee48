//! Every credential worker knows, registered with the run's one redactor (`secrets`) before
//! anything is printed, so every sink replaces it with `[REDACTED]`:
//!
//! - model keys from every source, whichever model the run uses: the built-in providers'
//!   variables, each `--providers` / `AGENTIC_PI_PROVIDERS` entry's `apiKey`, the variable its
//!   `apiKeyEnv` names and its `<NAME>_API_KEY`, every `--auth-file` entry, the key the run's
//!   endpoint resolved to, and a password in a provider's `baseUrl`;
//! - GitHub tokens (`GITHUB_TOKEN`, `GH_TOKEN`, `GITHUB_APP_PRIVATE_KEY`); the App key read
//!   from `GITHUB_APP_PRIVATE_KEY_PATH` and the installation tokens minted during the run are
//!   added by the GitHub client as it reads or mints them;
//! - web search keys (every provider's variable, not only the one in use);
//! - the OpenTelemetry collector's header values and URL passwords.
//!
//! The set only grows; what counts as a secret (trimmed, at least
//! [`MIN_LEN`](crate::secrets::MIN_LEN) characters) is the redactor's rule.

use std::collections::BTreeMap;

use super::auth_file::AuthFile;
use super::model::{self, Override};
use crate::config::{Env, ModelSource};
use crate::secrets::{Secrets, url_password};

/// GitHub credentials held in variables.
const GITHUB_VARS: [&str; 3] = ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_APP_PRIVATE_KEY"];

/// What the command line, the environment and the auth file say, for [`register`].
pub(super) struct Known<'a> {
    pub env: &'a dyn Env,
    pub overrides: &'a BTreeMap<String, Override>,
    pub model: &'a ModelSource,
    pub auth: &'a AuthFile,
    /// `--otel-endpoint`.
    pub otel_endpoint: Option<&'a str>,
}

/// Adds every credential in `known` to `secrets`.
pub(super) fn register(secrets: &Secrets, known: &Known<'_>) {
    let env = known.env;
    let mut values = model::known_keys(env, known.overrides);
    values.extend(known.auth.keys.values().cloned());
    if let ModelSource::Http { endpoint, .. } = known.model {
        values.extend(endpoint.api_key.clone());
        values.extend(url_password(&endpoint.base_url));
    }
    for entry in known.overrides.values() {
        values.extend(url_password(&entry.base_url));
    }
    values.extend(GITHUB_VARS.iter().filter_map(|name| env.get(name)));
    let web_keys = crate::web::Provider::ALL.map(crate::web::Provider::key_var);
    values.extend(web_keys.iter().filter_map(|name| env.get(name)));
    values.extend(crate::telemetry::credentials(env, known.otel_endpoint));
    for value in values {
        secrets.add(value);
    }
}

#[cfg(test)]
mod tests;
