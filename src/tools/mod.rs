//! Tools: what the agent uses to touch the repository.
//!
//! Every tool is defined one way ([`define`]): a [`ToolSpec`] (name, description, prompt line,
//! read-only flag), a typed argument struct whose JSON Schema is derived from it, and an async
//! `run` that receives the parsed arguments and a [`ToolContext`] (cwd, progress, file locks,
//! and [`RunServices`]: the run's stop signal, budget, approvals and child runs). The registry and the loop see each one as a [`Tool`]. A tool never fails the
//! run: an `Err(ToolError)` becomes an `isError: true` result whose text tells the model what
//! went wrong.
//!
//! Names, parameters and result texts follow Pi's built-in tools, which models are tuned on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::events::{TextContent, ToolResult};

pub mod access;
pub mod args;
mod bash;
pub mod confined;
pub mod contain;
mod define;
mod edit;
mod edit_match;
mod encoding;
pub mod files;
mod find;
mod grep;
mod hashline;
mod hashline_edit;
mod locks;
mod ls;
mod multi_grep;
pub mod paths;
mod programs;
mod read;
mod scope;
mod services;
mod stored;
pub mod truncate;
mod walk;
mod write;

pub use bash::Leftovers;
pub(crate) use bash::{die_with_worker, start_service};
pub use define::{ToolSpec, TypedTool, invalid_args, parameters_of, parse_args};
pub use locks::FileLocks;
pub use multi_grep::MultiGrepTool;
pub(crate) use programs::{POSIX_SHELL, absolute_dirs, absolute_path_only};
pub use scope::{EditScope, EditScopeError};
pub use services::{
    Approval, ApprovalRequest, Approver, BudgetLimits, ChildOutcome, ChildRunError, ChildRuns,
    ChildTask, Remaining, RunServices,
};

/// What a scrubbed environment keeps of worker's: nothing else (no API keys, no GitHub App
/// material, no OTEL headers). `TMPDIR` is the sandbox's own; `--sandbox-env` and the
/// extensions' variables (the Dynamo ids, a GitHub token with `--profile`) come on top.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
];

/// Tools active unless `--tools` says otherwise, in the order the model sees them.
pub const DEFAULT_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];
/// Tools that exist but are only active when `--tools` names them.
pub const OPT_IN_TOOLS: [&str; 1] = ["hashline_edit"];

/// The future a tool call returns: its result, or the failure the model is shown.
pub type ToolFuture<'a> = BoxFuture<'a, Result<ToolResult, ToolError>>;

/// A tool as the registry and the loop see it. Implemented for every [`TypedTool`]; define
/// tools that way rather than implementing this directly.
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// What the model reads to decide when and how to call the tool.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// [`Tool::parameters`] as the JSON text requests carry (compact, keys in the schema's
    /// order). A tool whose schema is stored as text returns it without building the value.
    fn parameters_text(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Owned(self.parameters().to_string())
    }
    /// One line for the system prompt's tool list.
    fn prompt_snippet(&self) -> &str;
    /// True when the tool never changes anything; a batch of read-only calls runs concurrently.
    fn is_read_only(&self) -> bool;
    /// How long the tool needs to wind down by itself once the run is stopped (its
    /// [`ToolContext::cancel`] fires); zero for a tool that has nothing to wind down, whose
    /// call is simply dropped.
    fn stop_grace(&self) -> Duration;
    /// Parses `args` and runs the call; an `Err` becomes an `isError: true` result.
    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_>;
}

/// Called with partial output while a tool runs (throttled by the tool).
pub type Progress = Arc<dyn Fn(ToolResult) + Send + Sync>;

/// What a tool call works with, besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    /// The run's working directory: relative paths are resolved against it (`--cwd`).
    pub cwd: Arc<PathBuf>,
    /// The call being run (empty outside a call).
    pub call_id: Arc<str>,
    /// What the tool may ask of its run: whether it is stopping, its budget, approvals,
    /// child runs.
    pub run: RunServices,
    /// Reports partial output while the call runs (printed as `tool_execution_update`).
    pub progress: Progress,
    /// The per-file locks that keep concurrent calls from writing one file at once.
    pub files: FileLocks,
    /// Process groups and spill files of `bash`, cleaned up when the run ends.
    pub leftovers: Leftovers,
    /// How `bash` runs commands: timeouts, environment, sandbox runner.
    pub bash: BashSettings,
    /// Set when a sandbox confines commands: the file tools keep to the same rules.
    pub policy: Option<Arc<access::PathPolicy>>,
    /// `--edit-scope`: where the file tools may write.
    pub edit_scope: Option<Arc<EditScope>>,
}

impl ToolContext {
    /// Cancelled when the run is stopped (a signal, `--timeout`, a closed stdout).
    pub fn cancel(&self) -> &tokio_util::sync::CancellationToken {
        self.run.cancel()
    }

    /// `raw` resolved against the cwd and checked against the sandbox's rules, if any.
    pub fn path(&self, raw: &str, access: access::Access) -> Result<PathBuf, ToolError> {
        let path = paths::resolve(&self.cwd, raw)?;
        if let Some(policy) = &self.policy {
            policy.check(&path, access)?;
        }
        if access == access::Access::Write
            && let Some(scope) = &self.edit_scope
        {
            scope.check(&path)?;
        }
        Ok(path)
    }

    /// The sandbox's rules, for the opens that the kernel holds to them ([`confined`]).
    pub fn policy(&self) -> Option<&access::PathPolicy> {
        self.policy.as_deref()
    }
}

/// How a command line becomes a process, when something other than worker's own shell
/// should run it (a sandbox).
pub trait CommandRunner: Send + Sync {
    /// The process for `line`. The caller adds the pipes and the process group.
    fn command(&self, line: &CommandLine<'_>) -> std::process::Command;

    /// A process for commands like `line` that sets itself up as soon as it starts and then
    /// reads its command from stdin ([`CommandLine::standby_input`]), so that setting up is
    /// done before the model asks for the command; `line.command` is not part of it. `None`:
    /// this runner starts every command afresh.
    fn standby(&self, _line: &CommandLine<'_>) -> Option<Standby> {
        None
    }
}

/// A process a [`CommandRunner`] sets up ahead of its command.
pub struct Standby {
    /// The process, for the caller to add the pipes and the process group to and start.
    pub command: std::process::Command,
    /// What it is set up for (the runner's rules and the state of the files they name when it
    /// starts): only a command whose own standby has the same fingerprint may be handed to it.
    pub fingerprint: Vec<u8>,
}

/// A command a tool wants run: `shell -c command` in `cwd`.
pub struct CommandLine<'a> {
    /// The shell that runs the command: `/bin/bash`, else `sh`.
    pub shell: &'a str,
    /// The command line, as the model wrote it.
    pub command: &'a str,
    /// The directory the command starts in.
    pub cwd: &'a Path,
    /// Changes applied on top of the environment the runner chooses (`None` removes).
    pub env: &'a [(String, Option<String>)],
    /// A private directory for temporary files.
    pub scratch: &'a Path,
}

impl CommandLine<'_> {
    /// What a [`Standby`] reads on stdin, then the end of the input: a JSON object with the
    /// shell's arguments (`"argv": [shell, "-c", command]`) and the environment changes
    /// (`"env": [[name, value or null], …]`).
    pub fn standby_input(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "argv": [self.shell, "-c", self.command],
            "env": self.env,
        }))
        .unwrap_or_default()
    }
}

/// A [`CommandRunner`] held by the bash settings.
#[derive(Clone)]
pub struct Runner(pub Arc<dyn CommandRunner>);

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Runner")
    }
}

/// How `bash` runs commands: timeouts, environment, and what starts the shell.
#[derive(Debug, Clone)]
pub struct BashSettings {
    /// Used when the model gives no `timeout`.
    pub default_timeout: Duration,
    /// The model's `timeout` is capped to this.
    pub max_timeout: Duration,
    /// Environment changes for commands, on top of worker's own: `Some` sets, `None` removes.
    /// The run's, shared: every tool call's context is a clone, and most calls run no command.
    pub env: Arc<[(String, Option<String>)]>,
    /// This call's own changes (what the extensions'
    /// [`call_env`](crate::extension::Extension::call_env) give), applied after
    /// [`BashSettings::env`].
    pub call_env: Vec<(String, Option<String>)>,
    /// Redacted from what commands write to spill files, as from everything else.
    pub secrets: crate::secrets::Secrets,
    /// Runs commands instead of worker's own shell (a sandbox); `None`: the host shell.
    pub runner: Option<Runner>,
    /// Without a runner: each command starts contained ([`contain`]); `None`:
    /// the shell starts directly.
    pub contain: Option<contain::Containment>,
}

impl BashSettings {
    /// The environment changes a command of this call gets: the run's, then the call's own.
    pub fn command_env(&self) -> std::borrow::Cow<'_, [(String, Option<String>)]> {
        if self.call_env.is_empty() {
            return std::borrow::Cow::Borrowed(&self.env);
        }
        std::borrow::Cow::Owned(self.env.iter().chain(&self.call_env).cloned().collect())
    }

    /// A bash call's timeout when the model gives none.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    /// The longest a bash call may run unless `--bash-timeout` says otherwise.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
}

impl Default for BashSettings {
    fn default() -> Self {
        BashSettings {
            default_timeout: BashSettings::DEFAULT_TIMEOUT,
            max_timeout: BashSettings::MAX_TIMEOUT,
            env: Arc::from([]),
            call_env: Vec::new(),
            secrets: crate::secrets::Secrets::default(),
            runner: None,
            contain: None,
        }
    }
}

/// A tool failure, shown to the model as an `isError: true` result.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What the model reads: the result's text.
    pub message: String,
    /// The result's `details`; `None` when the failure carries none.
    pub details: Option<Value>,
}

impl ToolError {
    /// A failure the model reads as `message`, with no details.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            details: None,
        }
    }

    /// The failure with `details` added to its result.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The `isError: true` result the model is given.
    pub fn into_result(self) -> ToolResult {
        ToolResult {
            content: vec![TextContent::text(self.message)],
            details: self.details,
        }
    }
}

/// A successful result: one text block, and `details` when given.
pub fn text_result(text: impl Into<String>, details: Option<Value>) -> ToolResult {
    ToolResult {
        content: vec![TextContent::text(text)],
        details,
    }
}

/// `--tools` named tools that no one offers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown tool{} in --tools: {}. Available: {}",
    if unknown.len() > 1 { "s" } else { "" },
    unknown.join(", "),
    if available.is_empty() { "none".to_string() } else { available.join(", ") }
)]
pub struct UnknownTools {
    /// The names no tool has, in the order given.
    pub unknown: Vec<String>,
    /// The tools that could have been named.
    pub available: Vec<String>,
}

/// The tools a run offers the model.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolSet {
    /// Every built-in tool, opt-in ones included, in canonical order.
    pub fn all_builtin() -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(read::ReadTool),
            Arc::new(write::WriteTool),
            Arc::new(edit::EditTool),
            Arc::new(bash::BashTool),
            Arc::new(grep::GrepTool),
            Arc::new(find::FindTool),
            Arc::new(ls::LsTool),
            Arc::new(hashline_edit::HashlineEditTool),
        ]
    }

    /// Picks the active tools from `available`: the defaults (every non-opt-in tool) unless
    /// `allow` names exactly which ones. An unknown name is an error listing what exists.
    pub fn select(
        available: Vec<Arc<dyn Tool>>,
        allow: Option<&[String]>,
    ) -> Result<ToolSet, UnknownTools> {
        let tools = match allow {
            None => available
                .into_iter()
                .filter(|tool| !OPT_IN_TOOLS.contains(&tool.name()))
                .collect(),
            Some(names) => {
                let unknown: Vec<&str> = names
                    .iter()
                    .map(String::as_str)
                    .filter(|name| !available.iter().any(|tool| tool.name() == *name))
                    .collect();
                if !unknown.is_empty() {
                    return Err(UnknownTools {
                        unknown: unknown.into_iter().map(str::to_string).collect(),
                        available: available
                            .iter()
                            .map(|tool| tool.name().to_string())
                            .collect(),
                    });
                }
                available
                    .into_iter()
                    .filter(|tool| names.iter().any(|name| name == tool.name()))
                    .collect()
            }
        };
        Ok(ToolSet { tools })
    }

    /// This set followed by `late` tools (offered while the run goes on), leaving out any whose
    /// name is taken.
    pub fn with_late(&self, late: impl IntoIterator<Item = Arc<dyn Tool>>) -> ToolSet {
        let mut tools = self.tools.clone();
        for tool in late {
            if !tools.iter().any(|known| known.name() == tool.name()) {
                tools.push(tool);
            }
        }
        ToolSet { tools }
    }

    /// The active tool named `name`; `None` when the run does not offer it.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    /// The active tools, in the order the model sees them.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// The names of the active tools, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    /// Whether the run offers no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::testing;
