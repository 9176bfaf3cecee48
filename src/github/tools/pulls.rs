//! Pull requests: reading, opening, reviewing, merging.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::args::{Direction, Paging, PullRef, Repo, State, query, wire};
use super::{Call, Handled, Output, Registry};
use crate::github::client::Method;
use crate::tools::args::{Count, OptText, Text};

const DIFF: &str = "application/vnd.github.diff";

pub(super) fn register(r: &mut Registry) {
    r.read(
        "github_list_pull_requests",
        "List a repository's pull requests, filtered by state, head or base branch.",
        list_pull_requests,
    );
    r.read(
        "github_get_pull_request",
        "Get one pull request: title, body, state, branches, mergeability, author.",
        get_pull_request,
    );
    r.read(
        "github_list_pull_request_files",
        "List the files a pull request changes, with status, additions, deletions and patches.",
        list_pull_request_files,
    );
    r.read(
        "github_get_pull_request_diff",
        "Get a pull request's unified diff.",
        get_pull_request_diff,
    );
    r.read(
        "github_list_pull_request_reviews",
        "List the reviews of a pull request (approvals, change requests, comments).",
        list_pull_request_reviews,
    );
    r.read(
        "github_list_pull_request_review_comments",
        "List the inline review comments of a pull request, with file paths and lines.",
        list_pull_request_review_comments,
    );
    r.write(
        "github_create_pull_request",
        "Open a pull request from head into base. Returns it with its number and URL.",
        create_pull_request,
    );
    r.write(
        "github_create_pull_request_review",
        "Submit a review on a pull request: APPROVE, REQUEST_CHANGES or COMMENT, with optional inline comments.",
        create_pull_request_review,
    );
    r.write(
        "github_merge_pull_request",
        "Merge a pull request (merge, squash or rebase).",
        merge_pull_request,
    );
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum PullSort {
    Created,
    Updated,
    Popularity,
    LongRunning,
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Verdict {
    Approve,
    RequestChanges,
    Comment,
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum MergeMethod {
    Merge,
    Squash,
    Rebase,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct ListPullsArgs {
    #[serde(flatten)]
    repo: Repo,
    /// State (default open)
    state: Option<State>,
    /// Sort field (default created)
    sort: Option<PullSort>,
    /// Sort direction
    direction: Option<Direction>,
    /// Head branch as 'user:branch'
    #[serde(default)]
    head: OptText,
    /// Base branch name
    #[serde(default)]
    base: OptText,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CreatePullArgs {
    #[serde(flatten)]
    repo: Repo,
    /// Pull request title
    title: Text,
    /// Description (Markdown)
    #[serde(default)]
    body: OptText,
    /// Branch with the changes ('branch' or 'user:branch')
    head: Text,
    /// Branch to merge into
    base: Text,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct ReviewArgs {
    #[serde(flatten)]
    pull: PullRef,
    /// Review summary (Markdown)
    body: String,
    /// Review verdict
    event: Verdict,
    /// Inline comments
    comments: Option<Vec<ReviewComment>>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct ReviewComment {
    /// File path
    path: String,
    /// Position in the diff
    #[serde(skip_serializing_if = "Option::is_none")]
    position: Option<Count>,
    /// Line in the file
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<Count>,
    /// Comment text
    body: String,
    // Anything else GitHub accepts (side, start_line, ...) is passed through.
    #[serde(flatten)]
    #[schemars(skip)]
    rest: Map<String, Value>,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct MergeArgs {
    #[serde(flatten)]
    pull: PullRef,
    /// Title of the merge commit
    #[serde(default)]
    commit_title: OptText,
    /// Extra detail for the merge commit
    #[serde(default)]
    commit_message: OptText,
    /// Merge method (default merge)
    merge_method: Option<MergeMethod>,
}

fn list_pull_requests(call: Call<'_, ListPullsArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut pairs = vec![
            ("state", Some(wire(&a.state.unwrap_or(State::Open)))),
            ("sort", a.sort.as_ref().map(wire)),
            ("direction", a.direction.as_ref().map(wire)),
            ("head", a.head.0.clone()),
            ("base", a.base.0.clone()),
        ];
        pairs.extend(a.paging.pairs());
        let path = format!("{}/pulls{}", a.repo.path(), query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_pull_request(call: Call<'_, PullRef>) -> Handled<'_> {
    Box::pin(async move {
        Ok(Output::Json(
            call.gh.json(Method::Get, &call.args.path(), None).await?,
        ))
    })
}

fn list_pull_request_files(call: Call<'_, PullRef>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/files?per_page=100", call.args.path());
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn get_pull_request_diff(call: Call<'_, PullRef>) -> Handled<'_> {
    Box::pin(async move {
        let response = call
            .gh
            .send(Method::Get, &call.args.path(), None, DIFF)
            .await?;
        Ok(Output::Text(if response.body.is_empty() {
            "(empty diff)".into()
        } else {
            response.body
        }))
    })
}

fn list_pull_request_reviews(call: Call<'_, PullRef>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/reviews?per_page=100", call.args.path());
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn list_pull_request_review_comments(call: Call<'_, PullRef>) -> Handled<'_> {
    Box::pin(async move {
        let path = format!("{}/comments?per_page=100", call.args.path());
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}

fn create_pull_request(call: Call<'_, CreatePullArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({"title": a.title.0, "head": a.head.0, "base": a.base.0});
        if let Some(text) = a.body.as_deref() {
            body["body"] = json!(text);
        }
        let path = format!("{}/pulls", a.repo.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn create_pull_request_review(call: Call<'_, ReviewArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({"body": a.body, "event": wire(&a.event)});
        if let Some(comments) = &a.comments {
            body["comments"] = json!(comments);
        }
        let path = format!("{}/reviews", a.pull.path());
        Ok(Output::Json(
            call.gh.json(Method::Post, &path, Some(&body)).await?,
        ))
    })
}

fn merge_pull_request(call: Call<'_, MergeArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let mut body = json!({});
        for (field, value) in [
            ("commit_title", &a.commit_title),
            ("commit_message", &a.commit_message),
        ] {
            if let Some(text) = value.as_deref() {
                body[field] = json!(text);
            }
        }
        if let Some(method) = &a.merge_method {
            body["merge_method"] = json!(wire(method));
        }
        let path = format!("{}/merge", a.pull.path());
        Ok(Output::Json(
            call.gh.json(Method::Put, &path, Some(&body)).await?,
        ))
    })
}
