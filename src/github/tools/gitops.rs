//! git over HTTPS: cloning with the run's credentials, refreshing them for later pushes.

use std::path::PathBuf;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::Repo;
use super::{Call, Failure, Handled, Output, Registry};
use crate::github::git;
use crate::tools::args::{OptText, Text};

pub(super) fn register(r: &mut Registry) {
    r.write(
        "github_clone_repo",
        "Clone a repository with git over HTTPS, set up so later git push/pull authenticate without prompts. The target is inside the working directory unless path is absolute.",
        clone_repo,
    );
    r.write(
        "github_refresh_git_auth",
        "Refresh the git credentials used by a clone (tokens expire after about an hour). Call it when git push or pull fails to authenticate.",
        refresh_git_auth,
    );
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CloneArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Branch to check out (default: the default branch)
    #[serde(default)]
    branch: OptText,
    /// Where to clone (default: the repository name, in the working directory)
    #[serde(default)]
    path: OptText,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct RefreshArgs {
    /// Path of the clone
    path: Text,
}

fn expiry(expires_at: Option<SystemTime>) -> Value {
    expires_at.map_or(Value::Null, |t| {
        json!(humantime::format_rfc3339_seconds(t).to_string())
    })
}

fn clone_repo(call: Call<'_, CloneArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let (owner, repo) = (&a.repo.owner.0, &a.repo.repo.0);
        let target = a.path.0.clone().unwrap_or_else(|| repo.clone());
        let dest = match PathBuf::from(&target) {
            absolute if absolute.is_absolute() => absolute,
            relative => call.ctx.cwd.join(relative),
        };
        if dest.exists() && std::fs::read_dir(&dest).map_or(true, |mut d| d.next().is_some()) {
            return Err(Failure::Local(format!(
                "{} already exists and is not empty",
                dest.display()
            )));
        }
        let token = call.gh.token().await?;
        git::write_credentials(&call.git.credentials, &call.git.server_url, &token.value)
            .map_err(|err| Failure::Local(err.to_string()))?;
        let url = format!("{}/{owner}/{repo}.git", call.git.server_url);
        let branch = a.branch.0.clone();
        git::clone(
            &url,
            &dest,
            branch.as_deref(),
            &call.git.credentials,
            git::CLONE_TIMEOUT,
        )
        .await
        .map_err(|err| Failure::Local(err.to_string()))?;
        Ok(Output::Json(json!({
            "cloned": true,
            "path": dest,
            "credentials_file": call.git.credentials,
            "branch": branch,
            "expires_at": expiry(token.expires_at),
        })))
    })
}

fn refresh_git_auth(call: Call<'_, RefreshArgs>) -> Handled<'_> {
    Box::pin(async move {
        let dest = match PathBuf::from(&call.args.path.0) {
            absolute if absolute.is_absolute() => absolute,
            relative => call.ctx.cwd.join(relative),
        };
        if !dest.join(".git").exists() {
            return Err(Failure::Local(format!(
                "{} is not a git clone",
                dest.display()
            )));
        }
        let token = call.gh.token().await?;
        git::write_credentials(&call.git.credentials, &call.git.server_url, &token.value)
            .map_err(|err| Failure::Local(err.to_string()))?;
        Ok(Output::Json(json!({
            "refreshed": true,
            "path": dest,
            "credentials_file": call.git.credentials,
            "expires_at": expiry(token.expires_at),
        })))
    })
}
