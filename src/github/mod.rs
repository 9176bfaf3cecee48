//! GitHub tools, gated by permission profile at registration time.
//!
//! `--profile` picks a profile ([`profiles`]); only its tools are registered, so the model can
//! neither see nor call the others (calling one anyway answers `Tool X not found`). Without
//! `--profile` there are no GitHub tools and no status line. Credentials ([`auth`]) come from a
//! GitHub App or `GITHUB_TOKEN`; the API base is `GITHUB_API_URL` (default
//! `https://api.github.com`), which the App token exchange follows too.
//!
//! The status line: `{"type":"extension_status","extension":"github","status":"configured"|
//! "skipped","reason"?,"message"?,"profile","toolCount","auth"?}`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

pub mod auth;
pub mod client;
pub mod git;
pub mod profiles;
pub mod tools;
mod trim;

use crate::config::{Env, http_url, url_with_scheme};
use crate::events::{ExtensionState, ExtensionStatus};
use crate::extension::{Extension, StatusLine};
use crate::secrets::Secrets;
use crate::tools::Tool;
use client::GitHub;
use profiles::Profiles;
use tools::{GitSettings, Shared, TOOL_NAMES};

/// The API base when `GITHUB_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// The `github` extension: its status line and the tools of the chosen profile.
pub struct GitHubExtension {
    status: ExtensionStatus,
    tools: Vec<Arc<dyn Tool>>,
    /// The client, when the profile's tools are configured (for the token commands get).
    shared: Option<Arc<tools::Shared>>,
}

/// Why the GitHub tools could not be configured (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// `--profile` names no profile, or a profile is broken.
    #[error(transparent)]
    Profile(#[from] profiles::ProfileError),
    /// `GITHUB_API_URL` or `GITHUB_SERVER_URL` is not a URL git and the API can use; the
    /// message names the variable.
    #[error(transparent)]
    Url(#[from] crate::config::UrlError),
}

/// What `--profile` resolved to, and what to warn about.
pub struct Configured {
    /// Always there: without `--profile` (or credentials) it is a skipped status line.
    pub extension: GitHubExtension,
    /// What stderr should warn about (credentials missing for `--profile`).
    pub warnings: Vec<String>,
    /// The MCP tools (names or globs) the profile lists; `None` when it lists none, and then
    /// it does not narrow MCP tools.
    pub mcp_tools: Option<Vec<String>>,
}

/// Builds the extension for `--profile`. Errors (an unknown or broken profile) are usage
/// errors; missing credentials are a skipped extension and a warning.
pub fn configure(
    env: &dyn Env,
    profile: Option<&str>,
    profiles_dir: Option<&Path>,
    retry_base: Duration,
    secrets: &Secrets,
) -> Result<Configured, GitHubError> {
    let Some(profile) = profile else {
        // Without a profile the shipped profiles are not needed (tests check that they load),
        // and parsing them cost every run; a profiles directory given is still checked.
        if profiles_dir.is_some() {
            Profiles::load(profiles_dir, &TOOL_NAMES)?;
        }
        return Ok(Configured {
            extension: GitHubExtension {
                status: ExtensionStatus {
                    extension: "github".into(),
                    status: ExtensionState::Skipped,
                    reason: Some("no-profile".into()),
                    message: Some("no --profile: no GitHub tools".into()),
                    extra: serde_json::Map::new(),
                },
                tools: Vec::new(),
                shared: None,
            },
            warnings: Vec::new(),
            mcp_tools: None,
        });
    };
    let profiles = Profiles::load(profiles_dir, &TOOL_NAMES)?;
    let names = profiles.resolve(profile, &TOOL_NAMES)?;
    let mcp_tools: Vec<String> = names
        .iter()
        .filter(|name| name.starts_with(crate::events::MCP_TOOL_PREFIX))
        .cloned()
        .collect();
    let mcp_tools = (!mcp_tools.is_empty()).then_some(mcp_tools);
    let credentials = match auth::from_env(env, secrets) {
        Ok(credentials) => credentials,
        Err(missing) => {
            let status = status(
                ExtensionState::Skipped,
                profile,
                0,
                None,
                Some((missing.reason, &missing.message)),
            );
            return Ok(Configured {
                extension: GitHubExtension {
                    status,
                    tools: Vec::new(),
                    shared: None,
                },
                warnings: vec![format!(
                    "--profile {profile}: GitHub tools skipped ({}): {}",
                    missing.reason, missing.message
                )],
                mcp_tools,
            });
        }
    };
    // Both URLs are checked before anything is sent to them (a usage error).
    let api_base = env
        .get("GITHUB_API_URL")
        .unwrap_or_else(|| DEFAULT_API_URL.to_string());
    http_url("GITHUB_API_URL", &api_base).map_err(GitHubError::Url)?;
    if let Some(server) = env.get(git::SERVER_URL_VAR) {
        url_with_scheme(git::SERVER_URL_VAR, &server, &git::SERVER_SCHEMES)
            .map_err(GitHubError::Url)?;
    }
    let auth_kind = credentials.kind();
    let gh = GitHub::new(&api_base, credentials, retry_base, secrets.clone());
    let git = GitSettings {
        server_url: git::server_url(env, gh.api_base()),
        credentials: git::credentials_path(env),
    };
    let shared = Arc::new(Shared { gh, git });
    let all = tools::all(&shared);
    let tools: Vec<Arc<dyn Tool>> = names
        .iter()
        .filter_map(|name| all.iter().find(|tool| tool.name() == name).cloned())
        .collect();
    let status = status(
        ExtensionState::Configured,
        profile,
        tools.len(),
        Some(auth_kind),
        None,
    );
    Ok(Configured {
        extension: GitHubExtension {
            status,
            tools,
            shared: Some(shared),
        },
        warnings: Vec::new(),
        mcp_tools,
    })
}

fn status(
    state: ExtensionState,
    profile: &str,
    tool_count: usize,
    auth: Option<&str>,
    skipped: Option<(&str, &str)>,
) -> ExtensionStatus {
    let mut extra = serde_json::Map::new();
    extra.insert("profile".into(), json!(profile));
    extra.insert("toolCount".into(), json!(tool_count));
    if let Some(auth) = auth {
        extra.insert("auth".into(), json!(auth));
    }
    ExtensionStatus {
        extension: "github".into(),
        status: state,
        reason: skipped.map(|(reason, _)| reason.to_string()),
        message: skipped.map(|(_, message)| message.to_string()),
        extra,
    }
}

impl Extension for GitHubExtension {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    /// Commands get the run's GitHub token as `GITHUB_TOKEN` and `GH_TOKEN` (as agentic-pi
    /// injects it), so `git` and `gh` work under a sandbox that scrubs the environment: the
    /// configured token, or the App's installation token once minted.
    fn call_env(&self, call: &crate::events::ToolCall) -> Vec<(String, Option<String>)> {
        let token = self
            .shared
            .as_ref()
            .filter(|_| call.name == "bash")
            .and_then(|shared| shared.gh.cached_token());
        match token {
            Some(token) => vec![
                ("GITHUB_TOKEN".into(), Some(token.clone())),
                ("GH_TOKEN".into(), Some(token)),
            ],
            None => Vec::new(),
        }
    }
}
