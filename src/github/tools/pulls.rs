//! Pull requests: reading, opening, reviewing, merging.

use serde_json::{Value, json};

use super::args::query;
use super::{
    Call, Failure, Handled, Output, Spec, choice, number, owner_repo, paging, schema, string,
};
use crate::github::client::Method;

const DIFF: &str = "application/vnd.github.diff";

fn pull_number() -> Vec<(&'static str, Value)> {
    let mut props = owner_repo();
    props.push(("pull_number", number("Pull request number")));
    props
}

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_list_pull_requests",
            description: "List a repository's pull requests, filtered by state, head or base branch.",
            read_only: true,
            parameters: || {
                let mut props = owner_repo();
                props.push((
                    "state",
                    choice(&["open", "closed", "all"], "State (default open)"),
                ));
                props.push((
                    "sort",
                    choice(
                        &["created", "updated", "popularity", "long-running"],
                        "Sort field (default created)",
                    ),
                ));
                props.push(("direction", choice(&["asc", "desc"], "Sort direction")));
                props.push(("head", string("Head branch as 'user:branch'")));
                props.push(("base", string("Base branch name")));
                schema([props, paging(30)].concat(), &["owner", "repo"])
            },
            handler: list_pull_requests,
        },
        Spec {
            name: "github_get_pull_request",
            description: "Get one pull request: title, body, state, branches, mergeability, author.",
            read_only: true,
            parameters: || schema(pull_number(), &["owner", "repo", "pull_number"]),
            handler: get_pull_request,
        },
        Spec {
            name: "github_list_pull_request_files",
            description: "List the files a pull request changes, with status, additions, deletions and patches.",
            read_only: true,
            parameters: || schema(pull_number(), &["owner", "repo", "pull_number"]),
            handler: list_pull_request_files,
        },
        Spec {
            name: "github_get_pull_request_diff",
            description: "Get a pull request's unified diff.",
            read_only: true,
            parameters: || schema(pull_number(), &["owner", "repo", "pull_number"]),
            handler: get_pull_request_diff,
        },
        Spec {
            name: "github_list_pull_request_reviews",
            description: "List the reviews of a pull request (approvals, change requests, comments).",
            read_only: true,
            parameters: || schema(pull_number(), &["owner", "repo", "pull_number"]),
            handler: list_pull_request_reviews,
        },
        Spec {
            name: "github_list_pull_request_review_comments",
            description: "List the inline review comments of a pull request, with file paths and lines.",
            read_only: true,
            parameters: || schema(pull_number(), &["owner", "repo", "pull_number"]),
            handler: list_pull_request_review_comments,
        },
        Spec {
            name: "github_create_pull_request",
            description: "Open a pull request from head into base. Returns it with its number and URL.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("title", string("Pull request title")));
                props.push(("body", string("Description (Markdown)")));
                props.push((
                    "head",
                    string("Branch with the changes ('branch' or 'user:branch')"),
                ));
                props.push(("base", string("Branch to merge into")));
                schema(props, &["owner", "repo", "title", "head", "base"])
            },
            handler: create_pull_request,
        },
        Spec {
            name: "github_create_pull_request_review",
            description: "Submit a review on a pull request: APPROVE, REQUEST_CHANGES or COMMENT, with optional inline comments.",
            read_only: false,
            parameters: || {
                let mut props = pull_number();
                props.push(("body", string("Review summary (Markdown)")));
                props.push((
                    "event",
                    choice(&["APPROVE", "REQUEST_CHANGES", "COMMENT"], "Review verdict"),
                ));
                props.push((
                    "comments",
                    json!({
                        "type": "array",
                        "description": "Inline comments",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string", "description": "File path"},
                                "position": {"type": "number", "description": "Position in the diff"},
                                "line": {"type": "number", "description": "Line in the file"},
                                "body": {"type": "string", "description": "Comment text"}
                            },
                            "required": ["path", "body"]
                        }
                    }),
                ));
                schema(props, &["owner", "repo", "pull_number", "body", "event"])
            },
            handler: create_pull_request_review,
        },
        Spec {
            name: "github_merge_pull_request",
            description: "Merge a pull request (merge, squash or rebase).",
            read_only: false,
            parameters: || {
                let mut props = pull_number();
                props.push(("commit_title", string("Title of the merge commit")));
                props.push((
                    "commit_message",
                    string("Extra detail for the merge commit"),
                ));
                props.push((
                    "merge_method",
                    choice(
                        &["merge", "squash", "rebase"],
                        "Merge method (default merge)",
                    ),
                ));
                schema(props, &["owner", "repo", "pull_number"])
            },
            handler: merge_pull_request,
        },
    ]
}

fn pull_path(call: &Call<'_>) -> Result<String, Failure> {
    Ok(format!(
        "{}/pulls/{}",
        call.args.repo_path()?,
        call.args.num("pull_number")?
    ))
}

fn list_pull_requests(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut pairs = vec![
            (
                "state",
                Some(
                    a.opt_choice("state", &["open", "closed", "all"])?
                        .unwrap_or_else(|| "open".into()),
                ),
            ),
            (
                "sort",
                a.opt_choice(
                    "sort",
                    &["created", "updated", "popularity", "long-running"],
                )?,
            ),
            ("direction", a.opt_choice("direction", &["asc", "desc"])?),
            ("head", a.opt_str("head")?),
            ("base", a.opt_str("base")?),
        ];
        pairs.extend(a.paging(30)?);
        let path = format!("{}/pulls{}", a.repo_path()?, query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_pull_request(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        Ok(Output::Json(
            call.gh.json(Method::Get, &pull_path(&call)?, None).await?,
        ))
    })
}

fn list_pull_request_files(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/files?per_page=100", pull_path(&call)?);
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_pull_request_diff(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let response = call
            .gh
            .send(Method::Get, &pull_path(&call)?, None, DIFF)
            .await?;
        Ok(Output::Text(if response.body.is_empty() {
            "(empty diff)".into()
        } else {
            response.body
        }))
    })
}

fn list_pull_request_reviews(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/reviews?per_page=100", pull_path(&call)?);
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_pull_request_review_comments(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/comments?per_page=100", pull_path(&call)?);
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn create_pull_request(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body =
            json!({"title": a.str("title")?, "head": a.str("head")?, "base": a.str("base")?});
        if let Some(text) = a.opt_str("body")? {
            body["body"] = json!(text);
        }
        let path = format!("{}/pulls", a.repo_path()?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn create_pull_request_review(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let event = a
            .opt_choice("event", &["APPROVE", "REQUEST_CHANGES", "COMMENT"])?
            .ok_or_else(|| Failure::Invalid("Validation failed for tool \"github_create_pull_request_review\":\n  - event: required (APPROVE, REQUEST_CHANGES or COMMENT)".into()))?;
        let mut body = json!({"body": a.text("body")?, "event": event});
        if let Some(comments) = a.raw("comments") {
            body["comments"] = comments.clone();
        }
        let path = format!("{}/reviews", pull_path(&call)?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn merge_pull_request(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({});
        for field in ["commit_title", "commit_message"] {
            if let Some(text) = a.opt_str(field)? {
                body[field] = json!(text);
            }
        }
        if let Some(method) = a.opt_choice("merge_method", &["merge", "squash", "rebase"])? {
            body["merge_method"] = json!(method);
        }
        let path = format!("{}/merge", pull_path(&call)?);
        Ok(Output::Json(
            call.gh.json(Method::Put, &path, Some(&body)).await?,
        ))
    })
}
