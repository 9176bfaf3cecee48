//! Writing to repositories through the API: single files, multi-file commits (git data API),
//! branches.

use base64::Engine;
use serde_json::{Value, json};

use super::args::{file_path, segment};
use super::{Call, Failure, Handled, Output, Spec, owner_repo, schema, string};
use crate::github::client::{GitHub, Method};

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_create_or_update_file",
            description: "Create or replace one file in a repository with a commit. To replace, pass the file's current blob sha.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("path", string("File path in the repository")));
                props.push(("content", string("The new content (text)")));
                props.push(("message", string("Commit message")));
                props.push(("branch", string("Branch (default: the default branch)")));
                props.push((
                    "sha",
                    string("Blob sha of the file being replaced (required to update)"),
                ));
                schema(props, &["owner", "repo", "path", "content", "message"])
            },
            handler: create_or_update_file,
        },
        Spec {
            name: "github_push_files",
            description: "Commit several files to a branch in one commit (the branch is created from the default branch if missing).",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("branch", string("Branch to commit to")));
                props.push((
                    "files",
                    json!({
                        "type": "array",
                        "description": "Files to write",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string", "description": "File path"},
                                "content": {"type": "string", "description": "File content (text)"}
                            },
                            "required": ["path", "content"]
                        }
                    }),
                ));
                props.push(("message", string("Commit message")));
                schema(props, &["owner", "repo", "branch", "files", "message"])
            },
            handler: push_files,
        },
        Spec {
            name: "github_create_branch",
            description: "Create a branch at the head of another branch.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("branch", string("Name of the new branch")));
                props.push(("from_branch", string("Branch to start from")));
                schema(props, &["owner", "repo", "branch", "from_branch"])
            },
            handler: create_branch,
        },
    ]
}

fn create_or_update_file(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let content = base64::engine::general_purpose::STANDARD.encode(a.text("content")?);
        let mut body = json!({"message": a.str("message")?, "content": content});
        for field in ["branch", "sha"] {
            if let Some(value) = a.opt_str(field)? {
                body[field] = json!(value);
            }
        }
        let path = format!("{}/contents/{}", a.repo_path()?, file_path(&a.str("path")?));
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

fn push_files(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let repo = a.repo_path()?;
        let branch = a.str("branch")?;
        let message = a.str("message")?;
        let files: Vec<(String, String)> = match a.raw("files") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|f| match (f["path"].as_str(), f["content"].as_str()) {
                    (Some(path), Some(content)) => Ok((path.trim_start_matches('/').to_string(), content.to_string())),
                    _ => Err(Failure::Invalid("Validation failed for tool \"github_push_files\":\n  - files: each file needs a path and a content string".into())),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(Failure::Invalid("Validation failed for tool \"github_push_files\":\n  - files: required (a non-empty list of {path, content})".into())),
        };
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

fn create_branch(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let repo = a.repo_path()?;
        let from = a.str("from_branch")?;
        let sha = branch_head(call.gh, &repo, &from)
            .await?
            .ok_or_else(|| Failure::Local(format!("branch '{from}' does not exist")))?;
        let body = json!({"ref": format!("refs/heads/{}", a.str("branch")?), "sha": sha});
        Ok(Output::Json(
            call.gh
                .json(Method::Post, &format!("{repo}/git/refs"), Some(&body))
                .await?,
        ))
    })
}
