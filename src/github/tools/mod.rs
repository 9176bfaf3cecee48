//! The `github_*` tools: names and parameters as agentic-pi's, so prompts written for it work.
//!
//! Each tool is defined the way every tool is ([`crate::tools::TypedTool`]): a spec, a typed
//! argument struct (its schema derived) and a handler, in one of the files below, grouped by
//! what it touches. Results are GitHub's JSON, trimmed of noise and pretty-printed, truncated
//! like every tool's output. Failures are `isError: true` results carrying
//! `{error, status, transient, hint}`, so a consumer counting tool errors sees them.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::client::{ApiError, GitHub};
use super::trim::trim;
use crate::events::ToolResult;
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_head};
use crate::tools::{Tool, ToolContext, ToolError, ToolSpec, TypedTool, text_result};

mod args;
mod automerge;
mod gitops;
mod issues;
mod pulls;
mod repos;
mod search;
mod write;

/// Every tool, in the order of the profiles that introduce them.
pub const TOOL_NAMES: [&str; 33] = [
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
    "github_ensure_labels",
    "github_create_pull_request",
    "github_create_pull_request_review",
    "github_clone_repo",
    "github_create_or_update_file",
    "github_push_files",
    "github_create_branch",
    "github_merge_pull_request",
    "github_enable_auto_merge",
];

/// What a GitHub tool handler returns on success.
pub enum Output {
    /// GitHub's JSON: trimmed of noise and pretty-printed for the model.
    Json(Value),
    /// Text shown as it is (a pull request's diff).
    Text(String),
}

/// Why a GitHub tool call failed.
pub enum Failure {
    /// The API call failed: the model reads `{error, status, transient, hint}`.
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
    /// The web URL git clones from (`https://github.com`, `GITHUB_SERVER_URL`).
    pub server_url: String,
    /// The git credential-store file the token is written to.
    pub credentials: PathBuf,
}

/// What a handler gets for one call.
pub struct Call<'a, A> {
    /// The API client.
    pub gh: &'a GitHub,
    /// Where git clones from and keeps its credentials.
    pub git: &'a GitSettings,
    /// The call's arguments, parsed.
    pub args: A,
    /// The call's context: working directory, cancellation, progress, file locks.
    pub ctx: &'a ToolContext,
}

/// The future a handler returns.
pub type Handled<'a> = BoxFuture<'a, Result<Output, Failure>>;
/// A GitHub tool's handler: its arguments in, an output or a failure out.
pub type Handler<A> = for<'a> fn(Call<'a, A>) -> Handled<'a>;

/// What every GitHub tool shares: one client and the git settings.
pub struct Shared {
    /// The API client.
    pub gh: GitHub,
    /// Where git clones from and keeps its credentials.
    pub git: GitSettings,
}

/// Every GitHub tool, sharing one client (profiles decide which are offered, in their order).
pub fn all(shared: &Arc<Shared>) -> Vec<Arc<dyn Tool>> {
    registry(shared).tools
}

fn registry(shared: &Arc<Shared>) -> Registry {
    let mut registry = Registry {
        shared: shared.clone(),
        tools: Vec::with_capacity(TOOL_NAMES.len()),
        #[cfg(test)]
        parsers: Vec::new(),
    };
    gitops::register(&mut registry);
    repos::register(&mut registry);
    issues::register(&mut registry);
    pulls::register(&mut registry);
    search::register(&mut registry);
    write::register(&mut registry);
    automerge::register(&mut registry);
    registry
}

/// Collects tool definitions; the files below add theirs.
pub struct Registry {
    shared: Arc<Shared>,
    tools: Vec<Arc<dyn Tool>>,
    /// Each tool's argument parsing alone, for the property tests.
    #[cfg(test)]
    parsers: Vec<(&'static str, ParseOnly)>,
}

/// A tool's argument parsing alone (for the property tests): the refusal's message, if any.
#[cfg(test)]
type ParseOnly = fn(&Value) -> Result<(), String>;

impl Registry {
    /// A tool that only reads.
    pub fn read<A: ToolArgs>(
        &mut self,
        name: &'static str,
        description: &'static str,
        handler: Handler<A>,
    ) {
        self.add(name, description, true, handler);
    }

    /// A tool that changes something on GitHub or on disk.
    pub fn write<A: ToolArgs>(
        &mut self,
        name: &'static str,
        description: &'static str,
        handler: Handler<A>,
    ) {
        self.add(name, description, false, handler);
    }

    fn add<A: ToolArgs>(
        &mut self,
        name: &'static str,
        description: &'static str,
        read_only: bool,
        handler: Handler<A>,
    ) {
        let spec = ToolSpec {
            name,
            description,
            snippet: None,
            read_only,
        };
        self.tools.push(Arc::new(GitHubTool {
            spec,
            handler,
            shared: self.shared.clone(),
        }));
        #[cfg(test)]
        self.parsers.push((name, |args| {
            crate::tools::parse_args::<A>("t", args, std::string::ToString::to_string)
                .map(drop)
                .map_err(|error| error.message)
        }));
    }
}

/// What a GitHub tool's argument type must be.
pub trait ToolArgs: DeserializeOwned + JsonSchema + Send + Sync + 'static {}
impl<T: DeserializeOwned + JsonSchema + Send + Sync + 'static> ToolArgs for T {}

struct GitHubTool<A> {
    spec: ToolSpec,
    handler: Handler<A>,
    shared: Arc<Shared>,
}

impl<A: ToolArgs> TypedTool for GitHubTool<A> {
    type Args = A;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, args: A, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let call = Call {
            gh: &self.shared.gh,
            git: &self.shared.git,
            args,
            ctx: &ctx,
        };
        let gh = &self.shared.gh;
        match (self.handler)(call).await {
            Ok(Output::Json(value)) => Ok(render(gh, &to_pretty(&trim(value)))),
            Ok(Output::Text(text)) => Ok(render(gh, &text)),
            Err(Failure::Invalid(message)) => Err(ToolError::new(message)),
            Err(Failure::Local(message)) => {
                let payload = json!({"error": gh.redact(&message), "status": null, "transient": false, "hint": null});
                Err(ToolError::new(to_pretty(&payload)).with_details(payload))
            }
            Err(Failure::Api(err)) => {
                let payload = err.payload();
                Err(ToolError::new(gh.redact(&to_pretty(&payload))).with_details(payload))
            }
        }
    }

    /// `field: required (a non-empty string)`, the kind named from the field's schema.
    fn missing_field(&self, field: &str, schema: &Value) -> String {
        let property = &schema["properties"][field];
        let kind = match (property["type"].as_str(), property["enum"].as_array()) {
            (_, Some(values)) => {
                let names: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                format!("one of {}", names.join(", "))
            }
            (Some("number"), _) => "a number".to_string(),
            (Some("array"), _) => "a non-empty list".to_string(),
            _ => "a non-empty string".to_string(),
        };
        format!("{field}: required ({kind})")
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
        // agentic-pi's extension tools always carry an (empty) details object.
        return text_result(text, Some(json!({})));
    }
    shown.push_str(&format!(
        "\n\n[Showing {} of {} lines ({} limit). Ask for less: use page/per_page, a narrower path, or a more specific query.]",
        truncation.output_lines,
        truncation.total_lines,
        format_size(MAX_BYTES)
    ));
    text_result(shown, Some(json!({"truncation": truncation})))
}

#[cfg(test)]
mod tests;
