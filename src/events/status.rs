//! The status lines: what the optional subsystems, the sandbox and the skills are doing, and
//! inputs that were cut to their limits. Part of the wire contract of [`super`].

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Startup status of an optional subsystem.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionStatus {
    /// The subsystem: `github`, `web-search`, `file-search` or `telemetry`.
    pub extension: String,
    /// Whether the subsystem is in use this run.
    pub status: ExtensionState,
    /// Why it was skipped, as a short code (`no-profile`, `no-credentials`, `disabled-by-flag`,
    /// `unavailable`, ...); absent when it is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A line for people: why it was skipped, or a note on how it is set up; absent when there is
    /// nothing to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Extension-specific fields (`profile`, `toolCount`, `auth`, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// `sandbox_status`: where tools run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    /// `none`: on the host, as worker's user.
    pub backend: &'static str,
    /// The sandbox as set up for this run.
    pub status: SandboxState,
}

/// `sandbox_status.status`: the sandbox's settings as in effect.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxState {
    /// The backend, as in `sandbox_status.backend`: `none` or `linux`.
    pub backend: &'static str,
    /// Where tools start.
    pub cwd: String,
    /// What network commands have: `host` (no restriction), `none`, or `proxy` (only the
    /// `--allow-host` hosts, through worker's egress proxy; `linux` backend).
    pub network: &'static str,
    /// `linux`: preflight and setup time, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_ms: Option<f64>,
    /// `linux`: the variables commands get from worker (names only, never values), before
    /// the extensions' own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_keys: Option<Vec<String>>,
    /// `linux` with `--allow-host`: the hosts commands may reach over HTTP and HTTPS through
    /// worker's egress proxy, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_http_hosts: Option<Vec<String>>,
}

/// `skills_status`: the Agent Skills offered to the model (name and description in the
/// system prompt; the model reads a skill's file when it needs it).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsStatus {
    /// `default` (discovery only), `configured` (`--skill` given) or `disabled`
    /// (`--no-skills` and no `--skill`).
    pub status: SkillsState,
    /// How many skills were found and offered.
    pub discovered: u32,
    /// Each skill found, in the order found (the first one found wins a name).
    pub skills: Vec<SkillEntry>,
    /// The `--skill` paths that were loaded.
    pub mapped_paths: Vec<String>,
    /// True with `--no-skills`: only the `--skill` paths were searched.
    pub no_skills: bool,
    /// Skills that could not be loaded (bad frontmatter, a missing `--skill` path), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<SkillProblem>,
}

/// How skills were asked for (`skills_status.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillsState {
    /// Neither `--skill` nor `--no-skills`: the usual places were searched.
    Default,
    /// At least one `--skill` path exists and was loaded (the usual places were also searched
    /// unless `--no-skills`).
    Configured,
    /// `--no-skills` and no `--skill` path that exists: nothing was searched.
    Disabled,
}

/// One skill found (`skills_status.skills[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    /// The skill's name: its frontmatter's `name`, else the name of its directory.
    pub name: String,
    /// The skill's SKILL.md.
    pub source: String,
    /// `false` when the frontmatter sets `disable-model-invocation: true`: it is not listed
    /// in the system prompt.
    pub model_invocable: bool,
}

/// A skill that could not be loaded (`skills_status.problems[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillProblem {
    /// The skill file or `--skill` path at fault.
    pub path: String,
    /// What is wrong with it (`invalid frontmatter: no description`, ...).
    pub message: String,
}

/// `input_truncated`: what was left out of an input, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputTruncated {
    /// Which kind of input was cut.
    pub input: TruncatedInput,
    /// The file that was cut.
    pub path: String,
    /// Why it was cut.
    pub reason: TruncationReason,
    /// Bytes used, from the start of the file.
    pub kept_bytes: u64,
    /// Bytes left out after them.
    pub dropped_bytes: u64,
    /// The cap that cut it (absent for a torn line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_bytes: Option<u64>,
    /// The same, as one line.
    pub message: String,
}

/// The kind of input `input_truncated` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncatedInput {
    /// An `AGENTS.md` / `CLAUDE.md`.
    ContextFile,
    /// The session file being resumed.
    Session,
}

/// Why `input_truncated` left part of an input out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncationReason {
    /// The file is larger than the cap for one context file.
    FileCap,
    /// The context files together reached their total cap (the nearest ones are kept).
    TotalCap,
    /// The last line has no newline: the run writing it died mid-write. Resuming starts
    /// from the last whole entry; the cut bytes are removed from the file before it is
    /// appended to.
    TornLastLine,
}

/// Whether a subsystem is in use (`extension_status.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionState {
    /// Set up and in use; its tools, if it has any, are offered to the model.
    Configured,
    /// Not in use this run; `reason` says why.
    Skipped,
}
