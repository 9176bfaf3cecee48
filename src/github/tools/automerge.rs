//! Auto-merge: GitHub merges a pull request once its required checks pass.
//!
//! There is no REST call for it, only the GraphQL `enablePullRequestAutoMerge` mutation, which
//! wants the pull request's node id: one REST read resolves it. A repository that does not
//! allow auto-merge (or has no required check) is an answer, not a failure: the result is
//! `{ok: false, pull_number, reason}` so the model can leave the pull request to a person, as
//! agentic-pi does.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{PullRef, wire};
use super::pulls::MergeMethod;
use super::{Call, Failure, Handled, Output, Registry};
use crate::github::client::Method;

const ENABLE: &str = "mutation($id: ID!, $mergeMethod: PullRequestMergeMethod!) {
  enablePullRequestAutoMerge(input: { pullRequestId: $id, mergeMethod: $mergeMethod }) {
    pullRequest { number autoMergeRequest { enabledAt } }
  }
}";

pub(super) fn register(r: &mut Registry) {
    r.write(
        "github_enable_auto_merge",
        "Enable auto-merge on a pull request: GitHub merges it automatically once the required status checks pass (it will NOT merge a PR whose checks are failing or still running). Use this instead of github_merge_pull_request when you want the merge gated on green CI. Returns { ok: false, reason } if the repository does not allow auto-merge.",
        enable_auto_merge,
    );
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct AutoMergeArgs {
    #[serde(flatten)]
    pull: PullRef,
    /// Merge method once the checks pass (default squash)
    merge_method: Option<MergeMethod>,
}

fn enable_auto_merge(call: Call<'_, AutoMergeArgs>) -> Handled<'_> {
    Box::pin(async move {
        let a = &call.args;
        let pull_number = a.pull.pull_number.0;
        let method = wire(&a.merge_method.unwrap_or(MergeMethod::Squash));
        let pull = call.gh.json(Method::Get, &a.pull.path(), None).await?;
        let node_id = pull["node_id"].as_str().ok_or_else(|| {
            Failure::Local(format!(
                "GitHub's pull request {pull_number} has no node_id"
            ))
        })?;
        let variables = json!({"id": node_id, "mergeMethod": method.to_uppercase()});
        let answer = match call.gh.graphql(ENABLE, variables).await {
            Ok(answer) => answer,
            Err(err) => return Ok(refused(pull_number, err.message)),
        };
        if let Some(reason) = graphql_errors(&answer) {
            return Ok(refused(pull_number, reason));
        }
        let auto_merge =
            &answer["data"]["enablePullRequestAutoMerge"]["pullRequest"]["autoMergeRequest"];
        Ok(Output::Json(json!({
            "ok": true,
            "pull_number": pull_number,
            "merge_method": method,
            "auto_merge": auto_merge,
        })))
    })
}

fn refused(pull_number: u64, reason: String) -> Output {
    Output::Json(json!({"ok": false, "pull_number": pull_number, "reason": reason}))
}

/// The messages of a GraphQL `errors` list, joined; `None` when there are none.
fn graphql_errors(answer: &Value) -> Option<String> {
    let errors = answer["errors"].as_array().filter(|e| !e.is_empty())?;
    let messages: Vec<&str> = errors
        .iter()
        .filter_map(|e| e["message"].as_str())
        .filter(|m| !m.is_empty())
        .collect();
    Some(if messages.is_empty() {
        "unknown error".to_string()
    } else {
        messages.join("; ")
    })
}
