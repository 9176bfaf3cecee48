//! [`UsageError`]: why a run's configuration cannot be built.

use std::path::PathBuf;

use crate::github::GitHubError;
use crate::ids::{InvalidSessionId, SessionId};
use crate::input_file::InputFileError;
use crate::llm::pricing::PriceError;
use crate::output::SchemaError;
use crate::sandbox::SettingsError;
use crate::session::LoadError;
use crate::telemetry::TelemetryError;
use crate::tools::UnknownTools;
use crate::web::WebError;

use super::auth_file::AuthFileError;
use super::limits::LimitsError;
use super::model::ModelError;
use super::pi_agent::PiSettingsError;

/// A flag, variable or file that keeps the run from starting: exit 2, its message the one
/// line on stderr. Each message names the flag (or variable, or file) it is about.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// The current directory cannot be read (no `--cwd`).
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    /// `--cwd` names something other than a directory.
    #[error("--cwd {path}: not a directory")]
    CwdNotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// `--cwd` names nothing that can be resolved.
    #[error("--cwd {path}: no such directory")]
    NoSuchCwd {
        /// The path given.
        path: PathBuf,
        /// Why it could not be resolved.
        #[source]
        source: std::io::Error,
    },
    /// `--model`, `--providers` or a provider's base URL variable.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// `--auth-file`, or Pi's own auth file.
    #[error(transparent)]
    AuthFile(#[from] AuthFileError),
    /// Pi's `settings.json`.
    #[error(transparent)]
    PiSettings(#[from] PiSettingsError),
    /// A limit flag.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// `--output-schema` cannot be read.
    #[error("--output-schema {path}: {source}")]
    OutputSchemaUnreadable {
        /// The schema file.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        source: InputFileError,
    },
    /// `--output-schema` is not JSON.
    #[error("--output-schema {path}: not JSON: {source}")]
    OutputSchemaNotJson {
        /// The schema file.
        path: PathBuf,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// `--output-schema` is not a JSON Schema.
    #[error("--output-schema {path}: {source}")]
    OutputSchemaInvalid {
        /// The schema file.
        path: PathBuf,
        /// Why it did not compile.
        #[source]
        source: SchemaError,
    },
    /// `--prices-file` cannot be used.
    #[error("--prices-file {path}: {source}")]
    PricesFile {
        /// The prices file.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: PriceError,
    },
    /// `--system-prompt @FILE` or `--append-system-prompt @FILE` cannot be read.
    #[error("{flag} @{path}: {source}")]
    PromptFile {
        /// The flag.
        flag: &'static str,
        /// The file, as given after `@`.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        source: InputFileError,
    },
    /// `--record` names a file in a directory that does not exist.
    #[error("--record {path}: the directory does not exist")]
    RecordDirectory {
        /// The recording's path.
        path: PathBuf,
    },
    /// `--profile` or the GitHub settings.
    #[error(transparent)]
    Github(#[from] GitHubError),
    /// The web search settings.
    #[error(transparent)]
    WebSearch(#[from] WebError),
    /// `--edit-scope`.
    #[error(transparent)]
    EditScope(#[from] crate::tools::EditScopeError),
    /// The live-control flags (`--control`, `--approve-tools`, the hooks, `--heartbeat`).
    #[error(transparent)]
    Live(#[from] crate::live::LiveError),
    /// An `--mcp-config` file (or the project's `.mcp.json`) cannot be used.
    #[error(transparent)]
    McpConfig(#[from] crate::mcp::ConfigError),
    /// An MCP server's `network` names something that is not a host.
    #[error("MCP server '{server}': network: {source}")]
    McpNetwork {
        /// The server.
        server: String,
        /// What is wrong with the entry.
        source: crate::sandbox::proxy::InvalidHost,
    },
    /// `worker mcp check` was given no configuration.
    #[error("worker mcp check: no servers to check: give --mcp-config FILE or --mcp-project")]
    McpNothingToCheck,
    /// A `--tools` entry naming MCP tools is not a valid glob.
    #[error(transparent)]
    McpTools(#[from] crate::mcp::PatternError),
    /// A blank `--skill`.
    #[error("--skill requires a non-empty path")]
    EmptySkillPath,
    /// The telemetry settings.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
    /// `--trace-file` cannot be created.
    #[error("--trace-file {path}: {source}")]
    TraceFile {
        /// The trace file (empty when none was given).
        path: PathBuf,
        /// Why it was not created.
        #[source]
        source: std::io::Error,
    },
    /// `--sandbox-image` with `--sandbox linux`.
    #[error("--sandbox-image is for VM backends; --sandbox linux needs no image")]
    SandboxImage,
    /// `--allow-host` with `--no-network`.
    #[error(
        "--allow-host and --no-network contradict each other: choose the hosts commands may reach, or none"
    )]
    AllowHostWithoutNetwork,
    /// The process limit variable is not a count of at least 8.
    #[error(
        "{}={value}: expected a number of processes, at least 8",
        crate::sandbox::linux::MAX_PROCESSES_VAR
    )]
    MaxProcesses {
        /// The variable's value.
        value: String,
    },
    /// `--sandbox linux` cannot be set up.
    #[error(transparent)]
    Sandbox(#[from] SettingsError),
    /// `--tools` names a tool the run does not offer.
    #[error(transparent)]
    Tools(#[from] UnknownTools),
    /// No `--session-dir`, and no place for the default one.
    #[error("no session directory: set --session-dir, XDG_STATE_HOME or HOME")]
    NoSessionDir,
    /// `--resume` names neither a file nor a session in the session directory.
    #[error("--resume {target}: no such session file, and no session of that id in {dir}")]
    NoSuchSession {
        /// The value of `--resume`.
        target: String,
        /// The session directory searched.
        dir: PathBuf,
    },
    /// `--continue` finds no session of the working directory.
    #[error("--continue: no session of {cwd} to continue in {dir}")]
    NothingToContinue {
        /// The working directory.
        cwd: PathBuf,
        /// The session directory searched.
        dir: PathBuf,
    },
    /// The session to resume cannot be read.
    #[error("--resume: {0}")]
    Resume(#[source] LoadError),
    /// `--session-id` is not a session id.
    #[error("--session-id: {0}")]
    SessionId(#[source] InvalidSessionId),
    /// `--parent-session-id` is not a session id.
    #[error("--parent-session-id: {0}")]
    ParentSessionId(#[source] InvalidSessionId),
    /// `--session-id` names another session than the one resumed.
    #[error("--session-id {given} differs from the resumed session's id {resumed}")]
    SessionIdMismatch {
        /// The value of `--session-id`.
        given: SessionId,
        /// The resumed session's id.
        resumed: SessionId,
    },
    /// The resumed session file cannot be appended to.
    #[error("--resume {path}: {source}")]
    ResumeAppend {
        /// The session file.
        path: PathBuf,
        /// Why it cannot be written.
        #[source]
        source: std::io::Error,
    },
    /// The new session file cannot be created.
    #[error("session directory {dir}: {source}")]
    SessionCreate {
        /// The session directory.
        dir: PathBuf,
        /// Why the file was not created.
        #[source]
        source: std::io::Error,
    },
}
