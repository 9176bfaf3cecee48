//! git over HTTPS: cloning with the run's credentials, refreshing them for later pushes.

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::{Call, Failure, Handled, Output, Spec, owner_repo, schema, string};
use crate::github::git;

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_clone_repo",
            description: "Clone a repository with git over HTTPS, set up so later git push/pull authenticate without prompts. The target is inside the working directory unless path is absolute.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push((
                    "branch",
                    string("Branch to check out (default: the default branch)"),
                ));
                props.push((
                    "path",
                    string(
                        "Where to clone (default: the repository name, in the working directory)",
                    ),
                ));
                schema(props, &["owner", "repo"])
            },
            handler: clone_repo,
        },
        Spec {
            name: "github_refresh_git_auth",
            description: "Refresh the git credentials used by a clone (tokens expire after about an hour). Call it when git push or pull fails to authenticate.",
            read_only: false,
            parameters: || schema(vec![("path", string("Path of the clone"))], &["path"]),
            handler: refresh_git_auth,
        },
    ]
}

fn expiry(expires_at: Option<SystemTime>) -> Value {
    expires_at.map_or(Value::Null, |t| {
        json!(humantime::format_rfc3339_seconds(t).to_string())
    })
}

fn clone_repo(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let (owner, repo) = (a.str("owner")?, a.str("repo")?);
        let target = a.opt_str("path")?.unwrap_or_else(|| repo.clone());
        let dest = match PathBuf::from(&target) {
            absolute if absolute.is_absolute() => absolute,
            relative => call.ctx.cwd.join(relative),
        };
        if dest.exists()
            && std::fs::read_dir(&dest)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(Failure::Local(format!(
                "{} already exists and is not empty",
                dest.display()
            )));
        }
        let token = call.gh.token().await?;
        git::write_credentials(&call.git.credentials, &call.git.server_url, &token.value)
            .map_err(Failure::Local)?;
        let url = format!("{}/{owner}/{repo}.git", call.git.server_url);
        let branch = a.opt_str("branch")?;
        git::clone(
            &url,
            &dest,
            branch.as_deref(),
            &call.git.credentials,
            git::CLONE_TIMEOUT,
        )
        .await
        .map_err(Failure::Local)?;
        Ok(Output::Json(json!({
            "cloned": true,
            "path": dest,
            "credentials_file": call.git.credentials,
            "branch": branch,
            "expires_at": expiry(token.expires_at),
        })))
    })
}

fn refresh_git_auth(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = call.args.str("path")?;
        let dest = match PathBuf::from(&path) {
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
            .map_err(Failure::Local)?;
        Ok(Output::Json(json!({
            "refreshed": true,
            "path": dest,
            "credentials_file": call.git.credentials,
            "expires_at": expiry(token.expires_at),
        })))
    })
}
