//! MCP servers (`--mcp-config`): tools from any Model Context Protocol server, over stdio or
//! streamable HTTP, by the official Rust SDK (`rmcp`).
//!
//! The servers ride beside the run as an extension. They all start at once, the moment the
//! run has its tool context ([`Extension::tool_context`]): a stdio server is a process
//! started like the run's commands (in its sandbox, or contained; a scrubbed environment plus
//! its own `env`; its process group reaped with the run and by the watchdog if worker is
//! killed). The first model request waits ([`Extension::prepare`]) only for the *required*
//! servers still starting; `mcp_status` then says where every server stands, and a required one
//! that is not ready ends the run before any request ([`Extension::broken`], exit 2). An
//! optional server that becomes ready later, a server that changes its tool list
//! (`notifications/tools/list_changed`) or one that dies changes the tools the run offers at
//! its next model request ([`Extension::changed_tools`]), and prints `mcp_status` again. A
//! required server that dies ends the run at its next safe point.
//!
//! `--tools` names MCP tools by their full name or a glob (`mcp__github__*`): the entries that
//! start with `mcp__` are this extension's filter; without `--tools` every tool the
//! configuration enables is offered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use futures_util::future::{BoxFuture, join_all};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::events::{Emitter, Event, McpServerState, McpStatus};
use crate::extension::{Extension, Finish, RunOutcome, StatusLine};
use crate::sync::LockExt;
use crate::tools::{Tool, ToolContext};

pub mod config;
mod content;
mod server;
mod tool;

pub use config::{ConfigError, ServerConfig};
pub use tool::{PREFIX as TOOL_PREFIX, tool_name};

use server::Server;

/// `--tools` entries for MCP tools that are not valid globs.
#[derive(Debug, thiserror::Error)]
#[error("--tools {pattern}: {source}")]
pub struct PatternError {
    /// The entry.
    pub pattern: String,
    /// Why it is not a glob.
    pub source: globset::Error,
}

/// The run's MCP servers.
pub struct Mcp {
    servers: Vec<Arc<Server>>,
    /// What narrows the tools offered (the `--tools` entries naming MCP tools, a profile's):
    /// a tool is offered when it matches every one; none: every enabled tool is.
    filters: Vec<GlobSet>,
    /// Bumped by every server whenever its state or tools change.
    generation: Arc<AtomicU64>,
    /// The generation the run's tool list reflects.
    offered_generation: AtomicU64,
    /// The generation the last `mcp_status` reflects.
    status_generation: AtomicU64,
    /// The stream `mcp_status` is printed to.
    stream: OnceLock<Emitter>,
    /// Every server's start, running from the moment the tool context arrives.
    starting: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Settled when the required servers have.
    required_settled: tokio::sync::watch::Sender<bool>,
    /// Printed the first `mcp_status` (the one the run waits for).
    announced: std::sync::atomic::AtomicBool,
}

impl Mcp {
    /// The servers of `configs`; `filters`: lists of tool names or globs (`mcp__SERVER__TOOL`),
    /// each of which a tool must match to be offered (`--tools`, a profile).
    pub fn new(
        configs: Vec<ServerConfig>,
        filters: &[Vec<String>],
    ) -> Result<Arc<Mcp>, PatternError> {
        let filters = filters
            .iter()
            .map(|patterns| globs(patterns))
            .collect::<Result<Vec<_>, _>>()?;
        let generation = Arc::new(AtomicU64::new(0));
        let epoch = Instant::now();
        Ok(Arc::new_cyclic(|me: &Weak<Mcp>| {
            let changed: server::OnChange = {
                let me = me.clone();
                Arc::new(move || {
                    if let Some(mcp) = me.upgrade() {
                        mcp.settled();
                    }
                })
            };
            Mcp {
                servers: configs
                    .into_iter()
                    .map(|config| {
                        Arc::new(Server::new(
                            config,
                            generation.clone(),
                            epoch,
                            changed.clone(),
                        ))
                    })
                    .collect(),
                filters,
                generation,
                offered_generation: AtomicU64::new(u64::MAX),
                status_generation: AtomicU64::new(u64::MAX),
                stream: OnceLock::new(),
                starting: Mutex::new(Vec::new()),
                required_settled: tokio::sync::watch::channel(false).0,
                announced: std::sync::atomic::AtomicBool::new(false),
            }
        }))
    }

    /// Starts every server (inside the async runtime) the way `ctx` starts processes.
    pub fn start_all(&self, ctx: &ToolContext) {
        let mut starting = self.starting.lock_or_recover();
        if !starting.is_empty() {
            return;
        }
        for server in &self.servers {
            let server = server.clone();
            let ctx = ctx.clone();
            starting.push(tokio::spawn(async move { server.start(&ctx).await }));
        }
        drop(starting);
        self.settled();
    }

    /// A server settled: the required ones may all have; a later change is announced.
    fn settled(&self) {
        let required_starting = self
            .servers
            .iter()
            .any(|server| server.config.required && server.state() == McpServerState::Starting);
        if !required_starting {
            self.required_settled.send_replace(true);
        }
        if self.announced.load(Ordering::SeqCst) {
            self.announce();
        }
    }

    /// Waits until no required server is still starting.
    pub async fn wait_required(&self) {
        let mut settled = self.required_settled.subscribe();
        let _ = settled.wait_for(|settled| *settled).await;
    }

    /// Waits until every server has settled (for `worker mcp check`).
    pub async fn wait_all(&self) {
        let handles: Vec<_> = std::mem::take(&mut *self.starting.lock_or_recover());
        join_all(handles).await;
    }

    /// Where every server stands; `with_names` lists each one's tools.
    pub fn status(&self, with_names: bool) -> McpStatus {
        McpStatus {
            servers: self
                .servers
                .iter()
                .map(|server| {
                    let names = self
                        .offered_of(server)
                        .iter()
                        .map(|tool| tool_name(&server.config.name, &tool.name))
                        .collect();
                    server.status(names, with_names)
                })
                .collect(),
        }
    }

    /// Prints `mcp_status` if anything changed since it was last printed.
    fn announce(&self) {
        let now = self.generation.load(Ordering::SeqCst);
        if self.status_generation.swap(now, Ordering::SeqCst) == now {
            return;
        }
        if let Some(stream) = self.stream.get() {
            stream.emit(&Event::McpStatus(&self.status(false)));
        }
    }

    /// The tools the run may offer now, narrowed by `--tools` and the profile.
    fn offered(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            for listed in self.offered_of(server) {
                tools.push(Arc::new(tool::McpTool::new(server.clone(), &listed)));
            }
        }
        tools
    }

    /// The tools of `server` the run offers: enabled by its configuration, allowed by every
    /// filter, with a valid JSON Schema.
    fn offered_of(&self, server: &Server) -> Vec<rmcp::model::Tool> {
        server
            .tools()
            .into_iter()
            .filter(|listed| {
                let name = tool_name(&server.config.name, &listed.name);
                self.filters.iter().all(|filter| filter.is_match(&name))
                    && crate::output::OutputSchema::new(serde_json::Value::Object(
                        (*listed.input_schema).clone(),
                    ))
                    .is_ok()
            })
            .collect()
    }

    /// The servers that said their tools changed are listed again.
    async fn relist(&self) {
        join_all(self.servers.iter().map(|server| server.relist())).await;
    }

    /// Closes every connection and ends every server process.
    pub async fn stop_all(&self) {
        // The servers' exits that follow are the run's doing, not news.
        self.announced.store(false, Ordering::SeqCst);
        for handle in self.starting.lock_or_recover().drain(..) {
            handle.abort();
        }
        join_all(
            self.servers
                .iter()
                .map(|server| server.stop(server::CLOSE_GRACE)),
        )
        .await;
    }

    /// The first required server that is not ready, and why.
    fn missing_required(&self) -> Option<String> {
        self.servers.iter().find_map(|server| {
            let status = server.status(Vec::new(), false);
            (server.config.required && status.status != McpServerState::Ready).then(|| {
                let why = status
                    .error
                    .unwrap_or_else(|| "it is not ready".to_string());
                format!("required MCP server '{}' is not ready: {why}", status.name)
            })
        })
    }
}

/// One filter's patterns as a glob set.
fn globs(patterns: &[String]) -> Result<GlobSet, PatternError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern).map_err(|source| PatternError {
            pattern: pattern.clone(),
            source,
        })?);
    }
    set.build().map_err(|source| PatternError {
        pattern: patterns.join(","),
        source,
    })
}

impl Extension for Mcp {
    fn attach(&self, stream: &Emitter) {
        let _ = self.stream.set(stream.clone());
    }

    fn tool_context(&self, ctx: &ToolContext) {
        self.start_all(ctx);
    }

    fn prepare(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.wait_required().await;
            self.announced.store(true, Ordering::SeqCst);
            self.announce();
        })
    }

    fn broken(&self) -> Option<String> {
        self.missing_required()
    }

    fn changed_tools(&self) -> BoxFuture<'_, Option<Vec<Arc<dyn Tool>>>> {
        Box::pin(async move {
            self.relist().await;
            self.announce();
            let now = self.generation.load(Ordering::SeqCst);
            if self.offered_generation.swap(now, Ordering::SeqCst) == now {
                return None;
            }
            Some(self.offered())
        })
    }

    fn run_ending(&self) {
        // The servers' exits that follow are the run's doing, not news.
        self.announced.store(false, Ordering::SeqCst);
        for server in &self.servers {
            server.ending();
        }
    }

    fn finish(&self, _outcome: RunOutcome<'_>) -> Finish<'_> {
        Box::pin(async move {
            self.stop_all().await;
            Vec::<StatusLine>::new()
        })
    }
}
