//! The state of the run's MCP servers (`--mcp-config`). Part of the wire contract of
//! [`super`].

use schemars::JsonSchema;
use serde::Serialize;

/// `mcp_status`: every configured server, as it is now. Printed once the servers the run
/// waits for have settled (before the first model request), and again whenever one changes
/// (an optional server ready late, a server that died).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpStatus {
    /// One entry per server, in configuration order.
    pub servers: Vec<McpServerStatus>,
}

/// One server in `mcp_status` (and a line of `worker mcp check`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// The server's name in the configuration (its tools are `mcp__NAME__TOOL`).
    pub name: String,
    /// Where it stands.
    pub status: McpServerState,
    /// Whether the run cannot go on without it (`required: true`).
    pub required: bool,
    /// How many of its tools the run offers.
    pub tools: u32,
    /// Milliseconds from the start of the run to when it became ready or failed (so far, while
    /// it is starting).
    pub ms: u64,
    /// Why it is not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The names of the tools offered (`mcp__NAME__TOOL`); only `worker mcp check` lists them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
}

/// Where an MCP server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Still starting; the run did not wait for it (it is optional). Its tools join at the
    /// first model request after it is ready.
    Starting,
    /// Initialized and listed; its tools are offered.
    Ready,
    /// It could not be started or initialized, or it died; `error` says why.
    Failed,
    /// It did not become ready within its `startupTimeoutMs`.
    Timeout,
    /// `disabled: true` in the configuration: not started.
    Disabled,
}
