//! Issues, their comments and labels.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::args::{Direction, IssueRef, Paging, Repo, State, query, segment, wire};
use super::{Call, Failure, Handled, Output, Registry};
use crate::github::client::{GitHub, Method};
use crate::tools::args::{List, OptList, OptText, Text};

pub(super) fn register(r: &mut Registry) {
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
        "Create a label in a repository. A label that already exists is success: { ok: true, existed: true }.",
        create_label,
    );
    r.write(
        "github_ensure_labels",
        "Idempotently ensure a set of labels exists in a repository. Lists labels once, then creates only the missing ones (bulk). Prefer this over calling github_create_label per label: it never errors on labels that already exist. Returns { created, existed }.",
        ensure_labels,
    );
}

/// The color of an ensured label given none: GitHub's default grey.
const DEFAULT_LABEL_COLOR: &str = "ededed";

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
pub(super) struct ListIssuesArgs {
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
pub(super) struct ListCommentsArgs {
    #[serde(flatten)]
    issue: IssueRef,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CreateIssueArgs {
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
pub(super) struct UpdateIssueArgs {
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
pub(super) struct CommentArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Comment body (Markdown)
    body: Text,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct AddLabelsArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Label names to add
    labels: List,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct RemoveLabelArgs {
    #[serde(flatten)]
    issue: IssueRef,
    /// Label name to remove
    name: Text,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CreateLabelArgs {
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

#[derive(Deserialize, JsonSchema)]
pub(super) struct EnsureLabelsArgs {
    #[serde(flatten)]
    repo: Repo,
    /// The labels that must exist
    labels: Vec<LabelSpec>,
}

#[derive(Deserialize, JsonSchema)]
struct LabelSpec {
    /// Label name
    name: Text,
    /// Hex color without '#', e.g. 'ff0000' (default ededed)
    #[serde(default)]
    color: OptText,
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
        let created = new_label(
            call.gh,
            &a.repo.path(),
            &a.name.0,
            &a.color.0,
            a.description.as_deref(),
        )
        .await?;
        Ok(Output::Json(
            created.unwrap_or_else(|| json!({"ok": true, "existed": true})),
        ))
    })
}

/// Creates a label; `None` when it already exists (GitHub's create is not idempotent: it
/// answers 422 `already_exists`, which every caller wants as success).
async fn new_label(
    gh: &GitHub,
    repo: &str,
    name: &str,
    color: &str,
    description: Option<&str>,
) -> Result<Option<Value>, Failure> {
    let mut body = json!({"name": name, "color": color.trim_start_matches('#')});
    if let Some(description) = description {
        body["description"] = json!(description);
    }
    match gh
        .json(Method::Post, &format!("{repo}/labels"), Some(&body))
        .await
    {
        Ok(created) => Ok(Some(created)),
        Err(err) if err.already_exists() => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Lists the labels once, then creates only the missing ones. Names compare
/// case-insensitively, as GitHub's uniqueness does.
fn ensure_labels(call: Call<'_, EnsureLabelsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let repo = a.repo.path();
        let listed = call
            .gh
            .json(Method::Get, &format!("{repo}/labels?per_page=100"), None)
            .await?;
        let existing: HashSet<String> = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|label| label["name"].as_str())
            .map(str::to_lowercase)
            .collect();
        let (mut created, mut existed) = (Vec::new(), Vec::new());
        for label in &a.labels {
            let name = label.name.0.as_str();
            if existing.contains(&name.to_lowercase()) {
                existed.push(name);
                continue;
            }
            let color = label.color.as_deref().unwrap_or(DEFAULT_LABEL_COLOR);
            // A label created meanwhile answers already_exists: it existed.
            match new_label(call.gh, &repo, name, color, label.description.as_deref()).await? {
                Some(_) => created.push(name),
                None => existed.push(name),
            }
        }
        Ok(Output::Json(
            json!({"created": created, "existed": existed}),
        ))
    })
}
