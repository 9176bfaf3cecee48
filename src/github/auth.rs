//! Which GitHub credentials a run has: a GitHub App installation (preferred: short-lived,
//! scoped tokens) or a static `GITHUB_TOKEN`.
//!
//! App mode needs all three of `GITHUB_APP_ID`, `GITHUB_APP_PRIVATE_KEY_PATH` and
//! `GITHUB_APP_INSTALLATION_ID`. A partial App configuration is not silently replaced by
//! `GITHUB_TOKEN`: that would run with different permissions than intended.

use std::path::Path;

use octocrab::EncodingKey;

use crate::config::Env;
use crate::input_file::{InputKind, read_bytes};
use crate::secrets::Secrets;

const APP_ID: &str = "GITHUB_APP_ID";
const APP_KEY_PATH: &str = "GITHUB_APP_PRIVATE_KEY_PATH";
const APP_INSTALLATION: &str = "GITHUB_APP_INSTALLATION_ID";
const TOKEN: &str = "GITHUB_TOKEN";

/// The GitHub credentials a run found in its environment.
#[derive(Clone)]
pub enum Credentials {
    /// A GitHub App installation: the client mints short-lived installation tokens with the key.
    App {
        /// `GITHUB_APP_ID`.
        app_id: u64,
        /// `GITHUB_APP_INSTALLATION_ID`.
        installation_id: u64,
        /// The App's RSA private key, read from `GITHUB_APP_PRIVATE_KEY_PATH`.
        key: EncodingKey,
    },
    /// A static `GITHUB_TOKEN`, trimmed.
    Token(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::App {
                app_id,
                installation_id,
                ..
            } => f
                .debug_struct("App")
                .field("app_id", app_id)
                .field("installation_id", installation_id)
                .finish_non_exhaustive(),
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

impl Credentials {
    /// `app` or `token`, as the status line reports it.
    pub fn kind(&self) -> &'static str {
        match self {
            Credentials::App { .. } => "app",
            Credentials::Token(_) => "token",
        }
    }
}

/// Why there are no usable credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The status line's `reason`: `no-credentials`, `invalid-config` or `pem-unreadable`.
    pub reason: &'static str,
    /// What is wrong, for the status line's `message` and the warning.
    pub message: String,
}

/// The run's credentials; the App's private key is added to `secrets` as soon as it is read
/// (the token and the installation tokens are added by the client that uses them).
pub fn from_env(env: &dyn Env, secrets: &Secrets) -> Result<Credentials, Missing> {
    let app = [APP_ID, APP_KEY_PATH, APP_INSTALLATION].map(|name| env.get(name));
    let set = app.iter().filter(|v| v.is_some()).count();
    match (set, app) {
        (3, [Some(id), Some(key_path), Some(installation)]) => {
            let parse = |name: &str, value: &str| {
                value.trim().parse::<u64>().map_err(|_| Missing {
                    reason: "invalid-config",
                    message: format!("{name} must be a number, got '{value}'"),
                })
            };
            let app_id = parse(APP_ID, &id)?;
            let installation_id = parse(APP_INSTALLATION, &installation)?;
            let key_file = Path::new(key_path.trim());
            let pem = read_bytes(key_file, InputKind::AppKey).map_err(|err| Missing {
                reason: "pem-unreadable",
                message: format!("cannot read {APP_KEY_PATH} {key_path}: {err}"),
            })?;
            let key = EncodingKey::from_rsa_pem(&pem).map_err(|err| Missing {
                reason: "pem-unreadable",
                message: format!("{APP_KEY_PATH} {key_path} is not an RSA private key in PEM form: {err}"),
            })?;
            // Only a real key: the lines of a file named by mistake are no secret.
            secrets.add(String::from_utf8_lossy(&pem));
            Ok(Credentials::App {
                app_id,
                installation_id,
                key,
            })
        }
        (0, _) => env.get(TOKEN).map(|t| Credentials::Token(t.trim().to_string())).ok_or(Missing {
            reason: "no-credentials",
            message: format!("no GitHub credentials: set {TOKEN}, or {APP_ID}, {APP_KEY_PATH} and {APP_INSTALLATION}"),
        }),
        (n, _) => Err(Missing {
            reason: "invalid-config",
            message: format!(
                "partial GitHub App credentials: {n}/3 of {APP_ID}, {APP_KEY_PATH}, {APP_INSTALLATION} are set"
            ),
        }),
    }
}

#[cfg(test)]
mod tests;
