//! The `github_*` tools: names and parameters as agentic-pi's, so prompts written for it work.
//!
//! Each tool is a [`Spec`] (name, description, schema, read-only flag, handler) in one of the
//! files below, grouped by what it touches. Results are GitHub's JSON, trimmed of noise and
//! pretty-printed, truncated like every tool's output. Failures are `isError: true` results
//! carrying `{error, status, transient, hint}`, so a consumer counting tool errors sees them.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{ApiError, GitHub};
use super::trim::trim;
use crate::events::ToolResult;
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_head};
use crate::tools::{Tool, ToolContext, ToolError, ToolFuture, text_result};

mod args;
mod gitops;
mod issues;
mod pulls;
mod repos;
mod search;
mod write;

pub use args::Args;

/// Every tool, in the order of the profiles that introduce them.
pub const TOOL_NAMES: [&str; 31] = [
    "github_refresh_git_auth",
    "github_get_repository",
    "github_get_file_contents",
    "github_list_branches",
    "github_list_commits",
    "github_list_issues",
    "github_get_issue",
    "github_list_issue_comments",
    "github_list_labels",
    "github_list_pull_requests",
    "github_get_pull_request",
    "github_list_pull_request_files",
    "github_get_pull_request_diff",
    "github_list_pull_request_reviews",
    "github_list_pull_request_review_comments",
    "github_search_repositories",
    "github_search_issues",
    "github_search_code",
    "github_create_issue",
    "github_update_issue",
    "github_add_issue_comment",
    "github_add_labels",
    "github_remove_label",
    "github_create_label",
    "github_create_pull_request",
    "github_create_pull_request_review",
    "github_clone_repo",
    "github_create_or_update_file",
    "github_push_files",
    "github_create_branch",
    "github_merge_pull_request",
];

pub enum Output {
    Json(Value),
    Text(String),
}

pub enum Failure {
    Api(ApiError),
    /// Bad arguments, with the message the model should read.
    Invalid(String),
    /// A local step failed (git, the credentials file).
    Local(String),
}

impl From<ApiError> for Failure {
    fn from(err: ApiError) -> Self {
        Failure::Api(err)
    }
}

/// What the git tools need besides the API.
#[derive(Debug, Clone)]
pub struct GitSettings {
    pub server_url: String,
    pub credentials: PathBuf,
}

pub struct Call<'a> {
    pub gh: &'a GitHub,
    pub git: &'a GitSettings,
    pub args: Args,
    pub ctx: &'a ToolContext,
}

pub type Handled<'a> = Pin<Box<dyn Future<Output = Result<Output, Failure>> + Send + 'a>>;
pub type Handler = for<'a> fn(Call<'a>) -> Handled<'a>;

#[derive(Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub parameters: fn() -> Value,
    pub handler: Handler,
}

pub fn specs() -> Vec<Spec> {
    [
        repos::specs(),
        issues::specs(),
        pulls::specs(),
        search::specs(),
        write::specs(),
        gitops::specs(),
    ]
    .concat()
}

pub struct Shared {
    pub gh: GitHub,
    pub git: GitSettings,
}

pub struct GitHubTool {
    spec: Spec,
    shared: Arc<Shared>,
}

impl GitHubTool {
    pub fn new(spec: Spec, shared: Arc<Shared>) -> Self {
        GitHubTool { spec, shared }
    }
}

impl Tool for GitHubTool {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn description(&self) -> &str {
        self.spec.description
    }

    fn parameters(&self) -> Value {
        (self.spec.parameters)()
    }

    fn prompt_snippet(&self) -> &str {
        self.spec
            .description
            .split_once(". ")
            .map_or(self.spec.description, |(first, _)| first)
    }

    fn is_read_only(&self) -> bool {
        self.spec.read_only
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let call = Call {
                gh: &self.shared.gh,
                git: &self.shared.git,
                args: Args::new(self.spec.name, args),
                ctx: &ctx,
            };
            match (self.spec.handler)(call).await {
                Ok(Output::Json(value)) => Ok(render(&self.shared.gh, &to_pretty(&trim(value)))),
                Ok(Output::Text(text)) => Ok(render(&self.shared.gh, &text)),
                Err(Failure::Invalid(message)) => Err(ToolError::new(message)),
                Err(Failure::Local(message)) => {
                    let payload = json!({"error": self.shared.gh.redact(&message), "status": null, "transient": false, "hint": null});
                    Err(ToolError::new(to_pretty(&payload)).with_details(payload))
                }
                Err(Failure::Api(err)) => {
                    let payload = err.payload();
                    Err(ToolError::new(self.shared.gh.redact(&to_pretty(&payload)))
                        .with_details(payload))
                }
            }
        })
    }
}

fn to_pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Redacted and cut to the usual limits, with a notice saying how to see less.
fn render(gh: &GitHub, text: &str) -> ToolResult {
    let text = gh.redact(text);
    let (mut shown, truncation) = truncate_head(&text, MAX_LINES, MAX_BYTES);
    if !truncation.truncated {
        return text_result(text, None);
    }
    shown.push_str(&format!(
        "\n\n[Showing {} of {} lines ({} limit). Ask for less: use page/per_page, a narrower path, or a more specific query.]",
        truncation.output_lines,
        truncation.total_lines,
        format_size(MAX_BYTES)
    ));
    text_result(shown, Some(json!({"truncation": truncation})))
}

// ---- schema helpers ---------------------------------------------------------------------------

pub fn schema(props: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> =
        props.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

pub fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

pub fn number(description: &str) -> Value {
    json!({"type": "number", "description": description})
}

pub fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

pub fn choice(values: &[&str], description: &str) -> Value {
    json!({"type": "string", "enum": values, "description": description})
}

pub fn owner_repo() -> Vec<(&'static str, Value)> {
    vec![
        ("owner", string("Repository owner (user or organization)")),
        ("repo", string("Repository name")),
    ]
}

pub fn paging(default_per_page: u64) -> Vec<(&'static str, Value)> {
    vec![
        ("page", number("Page number, from 1 (default 1)")),
        (
            "per_page",
            number(&format!(
                "Results per page, up to 100 (default {default_per_page})"
            )),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_tool_has_exactly_one_spec_with_a_valid_schema() {
        let specs = specs();
        let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        names.sort();
        let mut expected = TOOL_NAMES.to_vec();
        expected.sort();
        assert_eq!(names, expected);
        for spec in specs {
            let schema = (spec.parameters)();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            for required in schema["required"].as_array().unwrap() {
                assert!(
                    schema["properties"]
                        .get(required.as_str().unwrap())
                        .is_some(),
                    "{}: {required}",
                    spec.name
                );
            }
            assert!(spec.description.len() > 20, "{}", spec.name);
        }
    }
}
