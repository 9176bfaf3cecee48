//! Repositories: metadata, file contents, branches, commits.

use base64::Engine;
use serde_json::{Value, json};

use super::args::{file_path, query};
use super::{Call, Handled, Output, Spec, owner_repo, paging, schema, string};
use crate::github::client::Method;

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_get_repository",
            description: "Get a repository's details: description, default branch, visibility, topics, counts.",
            read_only: true,
            parameters: || schema(owner_repo(), &["owner", "repo"]),
            handler: get_repository,
        },
        Spec {
            name: "github_get_file_contents",
            description: "Get a file's contents (decoded as text) or a directory's listing from a repository, at a branch, tag or commit.",
            read_only: true,
            parameters: || {
                let mut props = owner_repo();
                props.push((
                    "path",
                    string("Path in the repository ('' or '/' for the root)"),
                ));
                props.push((
                    "branch",
                    string("Branch, tag or commit sha (default: the default branch)"),
                ));
                schema(props, &["owner", "repo", "path"])
            },
            handler: get_file_contents,
        },
        Spec {
            name: "github_list_branches",
            description: "List a repository's branches with their head commits.",
            read_only: true,
            parameters: || schema([owner_repo(), paging(30)].concat(), &["owner", "repo"]),
            handler: list_branches,
        },
        Spec {
            name: "github_list_commits",
            description: "List commits of a repository, newest first, optionally on a branch or touching a path.",
            read_only: true,
            parameters: || {
                let mut props = owner_repo();
                props.push(("sha", string("Branch name or commit sha to start from")));
                props.push(("path", string("Only commits touching this path")));
                schema([props, paging(30)].concat(), &["owner", "repo"])
            },
            handler: list_commits,
        },
    ]
}

fn get_repository(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = call.args.repo_path()?;
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_file_contents(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let file = call.args.opt_str("path")?.unwrap_or_default();
        let q = query(&[("ref", call.args.opt_str("branch")?)]);
        let path = format!(
            "{}/contents/{}{q}",
            call.args.repo_path()?,
            file_path(&file)
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

fn list_branches(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/branches{}",
            call.args.repo_path()?,
            query(&call.args.paging(30)?)
        );
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_commits(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let mut pairs = vec![
            ("sha", call.args.opt_str("sha")?),
            ("path", call.args.opt_str("path")?),
        ];
        pairs.extend(call.args.paging(30)?);
        let path = format!("{}/commits{}", call.args.repo_path()?, query(&pairs));
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
