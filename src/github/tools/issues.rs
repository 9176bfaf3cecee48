//! Issues, their comments and labels.

use serde_json::{Map, Value, json};

use super::args::{query, segment};
use super::{
    Call, Handled, Output, Spec, choice, number, owner_repo, paging, schema, string, strings,
};
use crate::github::client::Method;

fn issue_number() -> Vec<(&'static str, Value)> {
    let mut props = owner_repo();
    props.push(("issue_number", number("Issue (or pull request) number")));
    props
}

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_list_issues",
            description: "List a repository's issues (pull requests included, as GitHub does), filtered by state and labels.",
            read_only: true,
            parameters: || {
                let mut props = owner_repo();
                props.push((
                    "state",
                    choice(&["open", "closed", "all"], "Issue state (default open)"),
                ));
                props.push((
                    "labels",
                    string("Comma-separated label names; issues must have all of them"),
                ));
                props.push((
                    "sort",
                    choice(
                        &["created", "updated", "comments"],
                        "Sort field (default created)",
                    ),
                ));
                props.push((
                    "direction",
                    choice(&["asc", "desc"], "Sort direction (default desc)"),
                ));
                schema([props, paging(30)].concat(), &["owner", "repo"])
            },
            handler: list_issues,
        },
        Spec {
            name: "github_get_issue",
            description: "Get one issue: title, body, state, labels, assignees, author, timestamps.",
            read_only: true,
            parameters: || schema(issue_number(), &["owner", "repo", "issue_number"]),
            handler: get_issue,
        },
        Spec {
            name: "github_list_issue_comments",
            description: "List the comments on an issue or pull request, oldest first.",
            read_only: true,
            parameters: || {
                schema(
                    [issue_number(), paging(30)].concat(),
                    &["owner", "repo", "issue_number"],
                )
            },
            handler: list_issue_comments,
        },
        Spec {
            name: "github_list_labels",
            description: "List the labels defined in a repository.",
            read_only: true,
            parameters: || schema(owner_repo(), &["owner", "repo"]),
            handler: list_labels,
        },
        Spec {
            name: "github_create_issue",
            description: "Open an issue. Returns the new issue with its number and URL.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("title", string("Issue title")));
                props.push(("body", string("Issue body (Markdown)")));
                props.push(("labels", strings("Label names to add")));
                schema(props, &["owner", "repo", "title"])
            },
            handler: create_issue,
        },
        Spec {
            name: "github_update_issue",
            description: "Update an issue's title, body, state, labels or assignees. Only the fields given change; labels: [] removes every label.",
            read_only: false,
            parameters: || {
                let mut props = issue_number();
                props.push(("title", string("New title")));
                props.push(("body", string("New body (Markdown)")));
                props.push(("state", choice(&["open", "closed"], "New state")));
                props.push(("labels", strings("The complete new set of label names")));
                props.push((
                    "assignees",
                    strings("The complete new set of assignee logins"),
                ));
                schema(props, &["owner", "repo", "issue_number"])
            },
            handler: update_issue,
        },
        Spec {
            name: "github_add_issue_comment",
            description: "Comment on an issue or pull request.",
            read_only: false,
            parameters: || {
                let mut props = issue_number();
                props.push(("body", string("Comment body (Markdown)")));
                schema(props, &["owner", "repo", "issue_number", "body"])
            },
            handler: add_issue_comment,
        },
        Spec {
            name: "github_add_labels",
            description: "Add labels to an issue or pull request (existing labels stay).",
            read_only: false,
            parameters: || {
                let mut props = issue_number();
                props.push(("labels", strings("Label names to add")));
                schema(props, &["owner", "repo", "issue_number", "labels"])
            },
            handler: add_labels,
        },
        Spec {
            name: "github_remove_label",
            description: "Remove one label from an issue or pull request.",
            read_only: false,
            parameters: || {
                let mut props = issue_number();
                props.push(("name", string("Label name to remove")));
                schema(props, &["owner", "repo", "issue_number", "name"])
            },
            handler: remove_label,
        },
        Spec {
            name: "github_create_label",
            description: "Create a label in a repository.",
            read_only: false,
            parameters: || {
                let mut props = owner_repo();
                props.push(("name", string("Label name")));
                props.push(("color", string("Hex color without '#', e.g. 'ff0000'")));
                props.push(("description", string("Short description")));
                schema(props, &["owner", "repo", "name", "color"])
            },
            handler: create_label,
        },
    ]
}

fn issue_path(call: &Call<'_>) -> Result<String, super::Failure> {
    Ok(format!(
        "{}/issues/{}",
        call.args.repo_path()?,
        call.args.num("issue_number")?
    ))
}

fn list_issues(call: Call<'_>) -> Handled<'_> {
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
                "labels",
                a.opt_list("labels")?
                    .filter(|l| !l.is_empty())
                    .map(|l| l.join(",")),
            ),
            (
                "sort",
                a.opt_choice("sort", &["created", "updated", "comments"])?,
            ),
            ("direction", a.opt_choice("direction", &["asc", "desc"])?),
        ];
        pairs.extend(a.paging(30)?);
        let path = format!("{}/issues{}", a.repo_path()?, query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_issue(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        Ok(Output::Json(
            call.gh.json(Method::Get, &issue_path(&call)?, None).await?,
        ))
    })
}

fn list_issue_comments(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/comments{}",
            issue_path(&call)?,
            query(&call.args.paging(30)?)
        );
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_labels(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/labels?per_page=100", call.args.repo_path()?);
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn create_issue(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({"title": a.str("title")?});
        if let Some(text) = a.opt_str("body")? {
            body["body"] = json!(text);
        }
        if let Some(labels) = a.opt_list("labels")?.filter(|l| !l.is_empty()) {
            body["labels"] = json!(labels);
        }
        let path = format!("{}/issues", a.repo_path()?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn update_issue(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = Map::new();
        for field in ["title", "body"] {
            if let Some(text) = a.opt_str(field)? {
                body.insert(field.into(), json!(text));
            }
        }
        if let Some(state) = a.opt_choice("state", &["open", "closed"])? {
            body.insert("state".into(), json!(state));
        }
        // An explicit empty list is sent as such: it clears the field.
        for field in ["labels", "assignees"] {
            if let Some(list) = a.opt_list(field)? {
                body.insert(field.into(), json!(list));
            }
        }
        if body.is_empty() {
            return Err(super::Failure::Invalid(
                "Validation failed for tool \"github_update_issue\":\n  - give at least one of title, body, state, labels, assignees".into(),
            ));
        }
        Ok(Output::Json(
            call.gh
                .json(
                    Method::Patch,
                    &issue_path(&call)?,
                    Some(&Value::Object(body)),
                )
                .await?,
        ))
    })
}

fn add_issue_comment(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let body = json!({"body": call.args.str("body")?});
        let path = format!("{}/comments", issue_path(&call)?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn add_labels(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let body = json!({"labels": call.args.list("labels")?});
        let path = format!("{}/labels", issue_path(&call)?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn remove_label(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/labels/{}",
            issue_path(&call)?,
            segment(&call.args.str("name")?)
        );
        Ok(Output::Json(
            call.gh.json(Method::Delete, &path, None).await?,
        ))
    })
}

fn create_label(call: Call<'_>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body =
            json!({"name": a.str("name")?, "color": a.str("color")?.trim_start_matches('#')});
        if let Some(description) = a.opt_str("description")? {
            body["description"] = json!(description);
        }
        let path = format!("{}/labels", a.repo_path()?);
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}
