//! Issues, their comments and labels.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::args::{Direction, IssueRef, Paging, Repo, State, query, segment, wire};
use super::{Call, Handled, Output, Registry};
use crate::github::client::Method;
use crate::tools::args::{List, OptList, OptText, Text};

pub fn register(r: &mut Registry) {
    r.read(
        "github_list_issues",
        "List a repository's issues (pull requests included, as GitHub does), filtered by state and labels.",
        list_issues,
    );
    r.read(
        "github_get_issue",
        "Get one issue: title, body, state, labels, assignees, author, timestamps.",
        get_issue,
    );
    r.read(
        "github_list_issue_comments",
        "List the comments on an issue or pull request, oldest first.",
        list_issue_comments,
    );
    r.read(
        "github_list_labels",
        "List the labels defined in a repository.",
        list_labels,
    );
    r.write(
        "github_create_issue",
        "Open an issue. Returns the new issue with its number and URL.",
        create_issue,
    );
    r.write(
        "github_update_issue",
        "Update an issue's title, body, state, labels or assignees. Only the fields given change; labels: [] removes every label.",
        update_issue,
    );
    r.write(
        "github_add_issue_comment",
        "Comment on an issue or pull request.",
        add_issue_comment,
    );
    r.write(
        "github_add_labels",
        "Add labels to an issue or pull request (existing labels stay).",
        add_labels,
    );
    r.write(
        "github_remove_label",
        "Remove one label from an issue or pull request.",
        remove_label,
    );
    r.write(
        "github_create_label",
        "Create a label in a repository.",
        create_label,
    );
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum NewState {
    Open,
    Closed,
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum IssueSort {
    Created,
    Updated,
    Comments,
}

#[derive(Deserialize, JsonSchema)]
pub struct ListIssuesArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Issue state (default open)
    state: Option<State>,
    /// Comma-separated label names; issues must have all of them
    #[serde(default)]
    #[schemars(with = "String")]
    labels: OptList,
    /// Sort field (default created)
    sort: Option<IssueSort>,
    /// Sort direction (default desc)
    direction: Option<Direction>,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
pub struct ListCommentsArgs {
    #[serde(flatten)]
    issue: IssueRef,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
pub struct CreateIssueArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Issue title
    title: Text,
    /// Issue body (Markdown)
    #[serde(default)]
    body: OptText,
    /// Label names to add
    #[serde(default)]
    labels: OptList,
}

#[derive(Deserialize, JsonSchema)]
pub struct UpdateIssueArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// New title
    #[serde(default)]
    title: OptText,
    /// New body (Markdown)
    #[serde(default)]
    body: OptText,
    /// New state
    state: Option<NewState>,
    /// The complete new set of label names
    #[serde(default)]
    labels: OptList,
    /// The complete new set of assignee logins
    #[serde(default)]
    assignees: OptList,
}

#[derive(Deserialize, JsonSchema)]
pub struct CommentArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Comment body (Markdown)
    body: Text,
}

#[derive(Deserialize, JsonSchema)]
pub struct AddLabelsArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Label names to add
    labels: List,
}

#[derive(Deserialize, JsonSchema)]
pub struct RemoveLabelArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Label name to remove
    name: Text,
}

#[derive(Deserialize, JsonSchema)]
pub struct CreateLabelArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Label name
    name: Text,
    /// Hex color without '#', e.g. 'ff0000'
    color: Text,
    /// Short description
    #[serde(default)]
    description: OptText,
}

fn list_issues(call: Call<'_, ListIssuesArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut pairs = vec![
            ("state", Some(wire(&a.state.unwrap_or(State::Open)))),
            (
                "labels",
                a.labels
                    .0
                    .as_ref()
                    .filter(|l| !l.is_empty())
                    .map(|l| l.join(",")),
            ),
            ("sort", a.sort.as_ref().map(wire)),
            ("direction", a.direction.as_ref().map(wire)),
        ];
        pairs.extend(a.paging.pairs());
        let path = format!("{}/issues{}", a.repo.path(), query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_issue(call: Call<'_, IssueRef>) -> Handled<'_> {
    Box::pin(async move {
        Ok(Output::Json(
            call.gh.json(Method::Get, &call.args.path(), None).await?,
        ))
    })
}

fn list_issue_comments(call: Call<'_, ListCommentsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/comments{}",
            call.args.issue.path(),
            query(&call.args.paging.pairs())
        );
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_labels(call: Call<'_, Repo>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/labels?per_page=100", call.args.path());
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn create_issue(call: Call<'_, CreateIssueArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({"title": a.title.0});
        if let Some(text) = a.body.as_deref() {
            body["body"] = json!(text);
        }
        if let Some(labels) = a.labels.0.as_ref().filter(|l| !l.is_empty()) {
            body["labels"] = json!(labels);
        }
        let path = format!("{}/issues", a.repo.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn update_issue(call: Call<'_, UpdateIssueArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = Map::new();
        for (field, value) in [("title", &a.title), ("body", &a.body)] {
            if let Some(text) = value.as_deref() {
                body.insert(field.into(), json!(text));
            }
        }
        if let Some(state) = &a.state {
            body.insert("state".into(), json!(wire(state)));
        }
        // An explicit empty list is sent as such: it clears the field.
        for (field, value) in [("labels", &a.labels), ("assignees", &a.assignees)] {
            if let Some(list) = &value.0 {
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
                .json(Method::Patch, &a.issue.path(), Some(&Value::Object(body)))
                .await?,
        ))
    })
}

fn add_issue_comment(call: Call<'_, CommentArgs>) -> Handled<'_> {
    Box::pin(async move {
        let body = json!({"body": call.args.body.0});
        let path = format!("{}/comments", call.args.issue.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn add_labels(call: Call<'_, AddLabelsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let body = json!({"labels": call.args.labels.0});
        let path = format!("{}/labels", call.args.issue.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn remove_label(call: Call<'_, RemoveLabelArgs>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!(
            "{}/labels/{}",
            call.args.issue.path(),
            segment(&call.args.name)
        );
        Ok(Output::Json(
            call.gh.json(Method::Delete, &path, None).await?,
        ))
    })
}

fn create_label(call: Call<'_, CreateLabelArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({"name": a.name.0, "color": a.color.trim_start_matches('#')});
        if let Some(description) = a.description.as_deref() {
            body["description"] = json!(description);
        }
        let path = format!("{}/labels", a.repo.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}
