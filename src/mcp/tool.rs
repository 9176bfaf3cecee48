//! An MCP server's tool, as the run sees it: `mcp__SERVER__TOOL` with the server's own
//! description and JSON Schema. A call obeys the run like a built-in one: the server's
//! `toolTimeoutMs` and the run's remaining time bound it, a stop cancels it (the server gets
//! `notifications/cancelled`), and its result is cut and spilled by the same rules.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use serde_json::{Value, json};

use super::server::Server;
use crate::tools::{Tool, ToolContext, ToolError, ToolFuture};

/// What separates the parts of an MCP tool's name (Claude Code's convention).
const SEPARATOR: &str = "__";
/// What every MCP tool's name starts with.
pub const PREFIX: &str = crate::events::MCP_TOOL_PREFIX;
/// How long a stopped call may take to tell the server it is cancelled.
const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// The name the model calls `tool` of `server` by.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}{SEPARATOR}{tool}")
}

/// One tool of one server.
pub(super) struct McpTool {
    server: Arc<Server>,
    /// The server's own name for it.
    remote: String,
    name: String,
    description: String,
    parameters: Value,
}

impl McpTool {
    pub(super) fn new(server: Arc<Server>, tool: &rmcp::model::Tool) -> Self {
        let parameters = Value::Object((*tool.input_schema).clone());
        McpTool {
            name: tool_name(&server.config.name, &tool.name),
            remote: tool.name.to_string(),
            description: tool
                .description
                .as_deref()
                .map_or_else(|| tool.name.to_string(), str::to_string),
            parameters,
            server,
        }
    }

    async fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> Result<crate::events::ToolResult, ToolError> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::new(format!(
                    "Arguments must be a JSON object, got: {other}"
                )));
            }
        };
        let server = &self.server.config.name;
        let peer = self.server.peer().map_err(|why| {
            ToolError::new(format!("MCP server '{server}' is not available: {why}"))
        })?;
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| self.lost(&err.to_string()))?;
        let timeout = within_run(self.server.config.tool_timeout, &ctx);
        let answer = tokio::select! {
            answer = &mut handle.rx => Answer::Came(answer.map(|answer| answer.map(Box::new))),
            () = tokio::time::sleep(timeout) => Answer::TimedOut,
            () = ctx.cancel().cancelled() => Answer::Stopped,
        };
        match answer {
            Answer::Came(Ok(Ok(answer))) => match *answer {
                ServerResult::CallToolResult(result) => self.result(result, &ctx),
                _ => Err(ToolError::new(format!(
                    "MCP server '{server}' answered the call with something other than a tool result"
                ))),
            },
            Answer::Came(Ok(Err(error))) => {
                Err(ToolError::new(format!("MCP server '{server}': {error}")))
            }
            Answer::Came(Err(_)) => Err(self.lost("the connection closed during the call")),
            Answer::TimedOut => {
                let reason = format!("timed out after {} ms", timeout.as_millis());
                cancel(handle, &reason).await;
                Err(ToolError::new(format!(
                    "MCP tool {} {reason} (toolTimeoutMs, or the run's remaining time); the server was told to cancel it",
                    self.name
                ))
                .with_details(json!({"server": server, "timedOut": true})))
            }
            Answer::Stopped => {
                cancel(handle, "the run was stopped").await;
                Err(ToolError::new(
                    "Aborted: the run was stopped; the MCP server was told to cancel the call",
                ))
            }
        }
    }

    /// The call's answer, as the model reads it.
    fn result(
        &self,
        result: CallToolResult,
        ctx: &ToolContext,
    ) -> Result<crate::events::ToolResult, ToolError> {
        let mut mapped = super::content::map(&result, ctx);
        let mut details = json!({"server": self.server.config.name, "tool": self.remote});
        if let Some(structured) = result.structured_content {
            details["structuredContent"] = structured;
        }
        if let (Some(Value::Object(extra)), Some(target)) =
            (mapped.details.take(), details.as_object_mut())
        {
            target.extend(extra);
        }
        if result.is_error == Some(true) {
            let text = mapped
                .content
                .iter()
                .map(crate::events::TextContent::as_str)
                .collect::<Vec<_>>()
                .join("\n");
            return Err(ToolError::new(text).with_details(details));
        }
        mapped.details = Some(details);
        Ok(mapped)
    }

    /// The connection to the server is gone: it says so (and `mcp_status` will), and the call
    /// fails with that.
    fn lost(&self, why: &str) -> ToolError {
        self.server.gone(format!("the connection was lost ({why})"));
        ToolError::new(format!(
            "MCP server '{}' is not available: {why}",
            self.server.config.name
        ))
    }
}

enum Answer {
    Came(
        Result<
            Result<Box<ServerResult>, rmcp::service::ServiceError>,
            tokio::sync::oneshot::error::RecvError,
        >,
    ),
    TimedOut,
    Stopped,
}

/// Tells the server the call is cancelled, within [`CANCEL_GRACE`].
async fn cancel(handle: rmcp::service::RequestHandle<RoleClient>, reason: &str) {
    let _ = tokio::time::timeout(CANCEL_GRACE, handle.cancel(Some(reason.to_string()))).await;
}

/// `limit`, cut to what is left of the run's time.
fn within_run(limit: Duration, ctx: &ToolContext) -> Duration {
    match ctx.run.deadline() {
        Some(deadline) => limit.min(deadline.saturating_duration_since(std::time::Instant::now())),
        None => limit,
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn prompt_snippet(&self) -> &str {
        &self.description
    }

    /// A server's own hints cannot be trusted to say a call changes nothing.
    fn is_read_only(&self) -> bool {
        false
    }

    fn stop_grace(&self) -> Duration {
        CANCEL_GRACE * 2
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        self.call(args, ctx).boxed()
    }
}
