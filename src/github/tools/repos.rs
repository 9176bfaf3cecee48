//! Repositories: metadata, file contents, branches, commits.

use base64::Engine;
use serde_json::{Value, json};

use schemars::JsonSchema;
use serde::Deserialize;

use super::args::{Paging, Repo, file_path, query};
use super::{Call, Handled, Output, Registry};
use crate::github::client::Method;
use crate::tools::args::OptText;

pub(super) fn register(r: &mut Registry) {
    r.read(
        "github_get_repository",
        "Get a repository's details: description, default branch, visibility, topics, counts.",
        get_repository,
    );
    r.read(
        "github_get_file_contents",
        "Get a file's contents (decoded as text) or a directory's listing from a repository, at a branch, tag or commit.",
        get_file_contents,
    );
    r.read(
        "github_list_branches",
        "List a repository's branches with their head commits.",
        list_branches,
    );
    r.read(
        "github_list_commits",
        "List commits of a repository, newest first, optionally on a branch or touching a path.",
        list_commits,
    );
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct FileContentsArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Path in the repository ('' or '/' for the root)
    path: OptText,
    /// Branch, tag or commit sha (default: the default branch)
    #[serde(default)]
    branch: OptText,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct ListBranchesArgs {
    #[serde(flatten)]
    repo: Repo,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct ListCommitsArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Branch name or commit sha to start from
    #[serde(default)]
    sha: OptText,
    /// Only commits touching this path
    #[serde(default)]
    path: OptText,
    #[serde(flatten)]
    paging: Paging,
}

fn get_repository(call: Call<'_, Repo>) -> Handled<'_> {
    Box::pin(async move {
        let path = call.args.path();
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_file_contents(call: Call<'_, FileContentsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let q = query(&[("ref", a.branch.0.clone())]);
        let path = format!(
            "{}/contents/{}{q}",
            a.repo.path(),
            file_path(a.path.as_deref().unwrap_or_default())
        );
        let mut value = call.gh.json(Method::Get, &path, None).await?;
        match &mut value {
            // A directory: a listing of entries.
            Value::Array(entries) => {
                let listing: Vec<Value> = entries
                    .iter()
                    .map(|e| json!({"name": e["name"], "path": e["path"], "type": e["type"], "size": e["size"]}))
                    .collect();
                Ok(Output::Json(Value::Array(listing)))
            }
            Value::Object(map) => {
                // The base64 content is decoded in place of the raw field.
                if let Some(encoded) = map
                    .remove("content")
                    .and_then(|c| c.as_str().map(str::to_string))
                {
                    let cleaned: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
                    let decoded = match base64::engine::general_purpose::STANDARD.decode(cleaned) {
                        Ok(bytes) => match String::from_utf8(bytes) {
                            Ok(text) => Value::String(text),
                            Err(err) => Value::String(format!(
                                "(binary file, {} bytes; not shown)",
                                err.as_bytes().len()
                            )),
                        },
                        Err(err) => Value::String(format!("(undecodable content: {err})")),
                    };
                    map.remove("encoding");
                    map.insert("decoded_content".into(), decoded);
                }
                Ok(Output::Json(value))
            }
            _ => Ok(Output::Json(value)),
        }
    })
}

fn list_branches(call: Call<'_, ListBranchesArgs>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/branches{}",
            call.args.repo.path(),
            query(&call.args.paging.pairs())
        );
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_commits(call: Call<'_, ListCommitsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut pairs = vec![("sha", a.sha.0.clone()), ("path", a.path.0.clone())];
        pairs.extend(a.paging.pairs());
        let path = format!("{}/commits{}", a.repo.path(), query(&pairs));
        let commits = call.gh.json(Method::Get, &path, None).await?;
        // Commit lists repeat file trees and verification blobs; keep the log.
        let log = match commits {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|c| {
                        json!({
                            "sha": c["sha"], "html_url": c["html_url"],
                            "message": c["commit"]["message"],
                            "author": c["commit"]["author"], "committer": c["commit"]["committer"],
                            "login": c["author"]["login"],
                        })
                    })
                    .collect(),
            ),
            other => other,
        };
        Ok(Output::Json(log))
    })
}
