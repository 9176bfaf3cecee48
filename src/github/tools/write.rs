//! Writing to repositories through the API: single files, multi-file commits (git data API),
//! branches.

use base64::Engine;
use serde_json::{Value, json};

use schemars::JsonSchema;
use serde::Deserialize;

use super::args::{Repo, file_path, segment};
use super::{Call, Failure, Handled, Output, Registry};
use crate::github::client::{GitHub, Method};
use crate::tools::args::{OptText, Text};

pub(super) fn register(r: &mut Registry) {
    r.write(
        "github_create_or_update_file",
        "Create or replace one file in a repository with a commit. To replace, pass the file's current blob sha.",
        create_or_update_file,
    );
    r.write(
        "github_push_files",
        "Commit several files to a branch in one commit (the branch is created from the default branch if missing).",
        push_files,
    );
    r.write(
        "github_create_branch",
        "Create a branch at the head of another branch.",
        create_branch,
    );
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct FileArgs {
    #[serde(flatten)]
    repo: Repo,
    /// File path in the repository
    path: Text,
    /// The new content (text)
    content: String,
    /// Commit message
    message: Text,
    /// Branch (default: the default branch)
    #[serde(default)]
    branch: OptText,
    /// Blob sha of the file being replaced (required to update)
    #[serde(default)]
    sha: OptText,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct PushArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Branch to commit to
    branch: Text,
    /// Files to write
    files: Vec<FileEntry>,
    /// Commit message
    message: Text,
}

#[derive(Deserialize, JsonSchema)]
struct FileEntry {
    /// File path
    path: String,
    /// File content (text)
    content: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct BranchArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Name of the new branch
    branch: Text,
    /// Branch to start from
    from_branch: Text,
}

fn create_or_update_file(call: Call<'_, FileArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let content = base64::engine::general_purpose::STANDARD.encode(&a.content);
        let mut body = json!({"message": a.message.0, "content": content});
        for (field, value) in [("branch", &a.branch), ("sha", &a.sha)] {
            if let Some(value) = value.as_deref() {
                body[field] = json!(value);
            }
        }
        let path = format!("{}/contents/{}", a.repo.path(), file_path(&a.path));
        Ok(Output::Json(
            call.gh.json(Method::Put, &path, Some(&body)).await?,
        ))
    })
}

/// The commit sha a branch points at, or `None` when the branch does not exist.
async fn branch_head(gh: &GitHub, repo: &str, branch: &str) -> Result<Option<String>, Failure> {
    match gh
        .json(
            Method::Get,
            &format!("{repo}/git/ref/heads/{}", segment(branch)),
            None,
        )
        .await
    {
        Ok(reference) => Ok(reference["object"]["sha"].as_str().map(str::to_string)),
        Err(err) if err.status == Some(404) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

fn sha_of(value: &Value, what: &str) -> Result<String, Failure> {
    value["sha"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Failure::Local(format!("GitHub's answer for the {what} has no sha")))
}

fn push_files(call: Call<'_, PushArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let repo = a.repo.path();
        let branch = a.branch.0.clone();
        let message = &a.message.0;
        if a.files.is_empty() {
            return Err(Failure::Invalid("Validation failed for tool \"github_push_files\":\n  - files: required (a non-empty list of {path, content})".into()));
        }
        let files: Vec<(String, &str)> = a
            .files
            .iter()
            .map(|f| {
                (
                    f.path.trim_start_matches('/').to_string(),
                    f.content.as_str(),
                )
            })
            .collect();
        let gh = call.gh;
        let (parent, created) = match branch_head(gh, &repo, &branch).await? {
            Some(sha) => (sha, false),
            None => {
                let info = gh.json(Method::Get, &repo, None).await?;
                let default = info["default_branch"]
                    .as_str()
                    .unwrap_or("main")
                    .to_string();
                let sha = branch_head(gh, &repo, &default).await?.ok_or_else(|| {
                    Failure::Local(format!(
                        "the default branch '{default}' has no commits to branch from"
                    ))
                })?;
                let body = json!({"ref": format!("refs/heads/{branch}"), "sha": sha});
                gh.json(Method::Post, &format!("{repo}/git/refs"), Some(&body))
                    .await?;
                (sha, true)
            }
        };
        let parent_commit = gh
            .json(Method::Get, &format!("{repo}/git/commits/{parent}"), None)
            .await?;
        let base_tree = parent_commit["tree"]["sha"]
            .as_str()
            .ok_or_else(|| Failure::Local("the parent commit has no tree".into()))?
            .to_string();
        let mut entries = Vec::with_capacity(files.len());
        for (path, content) in &files {
            let blob = gh
                .json(
                    Method::Post,
                    &format!("{repo}/git/blobs"),
                    Some(&json!({"content": content, "encoding": "utf-8"})),
                )
                .await?;
            entries.push(json!({"path": path, "mode": "100644", "type": "blob", "sha": sha_of(&blob, "blob")?}));
        }
        let tree = gh
            .json(
                Method::Post,
                &format!("{repo}/git/trees"),
                Some(&json!({"base_tree": base_tree, "tree": entries})),
            )
            .await?;
        let commit = gh
            .json(
                Method::Post,
                &format!("{repo}/git/commits"),
                Some(&json!({"message": message, "tree": sha_of(&tree, "tree")?, "parents": [parent]})),
            )
            .await?;
        let commit_sha = sha_of(&commit, "commit")?;
        let reference = gh
            .json(
                Method::Patch,
                &format!("{repo}/git/refs/heads/{}", segment(&branch)),
                Some(&json!({"sha": commit_sha})),
            )
            .await?;
        Ok(Output::Json(json!({
            "commit": commit_sha,
            "branch": branch,
            "ref": reference["ref"],
            "created_branch": created,
            "files": files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        })))
    })
}

fn create_branch(call: Call<'_, BranchArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let repo = a.repo.path();
        let from = &a.from_branch.0;
        let sha = branch_head(call.gh, &repo, from)
            .await?
            .ok_or_else(|| Failure::Local(format!("branch '{from}' does not exist")))?;
        let body = json!({"ref": format!("refs/heads/{}", a.branch.0), "sha": sha});
        Ok(Output::Json(
            call.gh
                .json(Method::Post, &format!("{repo}/git/refs"), Some(&body))
                .await?,
        ))
    })
}
