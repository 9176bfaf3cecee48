//! Tools: what the agent uses to touch the repository.
//!
//! Every tool is defined one way ([`define`]): a [`ToolSpec`] (name, description, prompt line,
//! read-only flag), a typed argument struct whose JSON Schema is derived from it, and an async
//! `run` that receives the parsed arguments and a [`ToolContext`] (cwd, cancellation, progress,
//! file locks). The registry and the loop see each one as a [`Tool`]. A tool never fails the
//! run: an `Err(ToolError)` becomes an `isError: true` result whose text tells the model what
//! went wrong.
//!
//! Names, parameters and result texts follow Pi's built-in tools, which models are tuned on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::{TextContent, ToolResult};

pub mod access;
pub mod args;
mod atomic;
mod bash;
mod define;
mod edit;
mod edit_match;
pub mod files;
mod find;
mod grep;
mod hashline;
mod hashline_edit;
mod locks;
mod ls;
mod multi_grep;
pub mod paths;
mod read;
pub mod truncate;
mod walk;
mod write;

pub use bash::Leftovers;
pub use define::{ToolSpec, TypedTool, invalid_args, parameters_of, parse_args};
pub use locks::FileLocks;
pub use multi_grep::MultiGrepTool;

/// Tools active unless `--tools` says otherwise, in the order the model sees them.
pub const DEFAULT_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];
/// Tools that exist but are only active when `--tools` names them.
pub const OPT_IN_TOOLS: [&str; 1] = ["hashline_edit"];

pub type ToolFuture<'a> = BoxFuture<'a, Result<ToolResult, ToolError>>;

/// A tool as the registry and the loop see it. Implemented for every [`TypedTool`]; define
/// tools that way rather than implementing this directly.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// What the model reads to decide when and how to call the tool.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// One line for the system prompt's tool list.
    fn prompt_snippet(&self) -> &str;
    /// True when the tool never changes anything; a batch of read-only calls runs concurrently.
    fn is_read_only(&self) -> bool;
    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> ToolFuture<'a>;
}

/// Called with partial output while a tool runs (throttled by the tool).
pub type Progress = Arc<dyn Fn(ToolResult) + Send + Sync>;

#[derive(Clone)]
pub struct ToolContext {
    pub cwd: Arc<PathBuf>,
    pub cancel: CancellationToken,
    pub progress: Progress,
    pub files: FileLocks,
    /// Process groups and spill files of `bash`, cleaned up when the run ends.
    pub leftovers: Leftovers,
    pub bash: BashSettings,
    /// Set when a sandbox confines commands: the file tools keep to the same rules.
    pub policy: Option<Arc<access::PathPolicy>>,
}

impl ToolContext {
    /// `raw` resolved against the cwd and checked against the sandbox's rules, if any.
    pub fn path(&self, raw: &str, access: access::Access) -> Result<PathBuf, ToolError> {
        let path = paths::resolve(&self.cwd, raw)?;
        if let Some(policy) = &self.policy {
            policy.check(&path, access)?;
        }
        Ok(path)
    }
}

/// How a command line becomes a process, when something other than worker's own shell
/// should run it (a sandbox).
pub trait CommandRunner: Send + Sync {
    /// The process for `shell -c command` in `cwd`: `env` changes apply on top of the
    /// environment the runner chooses, and `scratch` is a private directory for temporary
    /// files. The caller adds the pipes and the process group.
    fn command(
        &self,
        shell: &str,
        command: &str,
        cwd: &Path,
        env: &[(String, Option<String>)],
        scratch: &Path,
    ) -> std::process::Command;
}

/// A [`CommandRunner`] held by the bash settings.
#[derive(Clone)]
pub struct Runner(pub Arc<dyn CommandRunner>);

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Runner")
    }
}

#[derive(Debug, Clone)]
pub struct BashSettings {
    /// Used when the model gives no `timeout`.
    pub default_timeout: Duration,
    /// The model's `timeout` is capped to this.
    pub max_timeout: Duration,
    /// Environment changes for commands, on top of worker's own: `Some` sets, `None` removes.
    pub env: Vec<(String, Option<String>)>,
    /// When the run's `--timeout` runs out. Stopping a command (its SIGTERM grace, draining its
    /// output) must fit before it: the budget is a promise.
    pub budget_end: Option<std::time::Instant>,
    /// Redacted from what commands write to spill files, as from everything else.
    pub secrets: crate::secrets::Secrets,
    /// Runs commands instead of worker's own shell (a sandbox); `None`: the host shell.
    pub runner: Option<Runner>,
}

impl BashSettings {
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
            env: Vec::new(),
            budget_end: None,
            secrets: crate::secrets::Secrets::default(),
            runner: None,
        }
    }
}

/// A tool failure, shown to the model as an `isError: true` result.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn into_result(self) -> ToolResult {
        ToolResult {
            content: vec![TextContent::text(self.message)],
            details: self.details,
        }
    }
}

pub fn text_result(text: impl Into<String>, details: Option<Value>) -> ToolResult {
    ToolResult {
        content: vec![TextContent::text(text)],
        details,
    }
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
    ) -> Result<ToolSet, String> {
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
                    let known: Vec<&str> = available.iter().map(|tool| tool.name()).collect();
                    return Err(format!(
                        "unknown tool{} in --tools: {}. Available: {}",
                        if unknown.len() > 1 { "s" } else { "" },
                        unknown.join(", "),
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
                available
                    .into_iter()
                    .filter(|tool| names.iter().any(|name| name == tool.name()))
                    .collect()
            }
        };
        Ok(ToolSet { tools })
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Running a tool directly, as the loop would.

    use super::*;
    use std::sync::Mutex;

    /// Arbitrary JSON for property tests: scalars (numbers also as digit strings), and
    /// arrays and objects of them, with keys tools use among random ones.
    pub fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        use serde_json::json;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "\\PC{0,12}".prop_map(Value::String),
            "[0-9]{1,25}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("oldText".to_string()),
                        Just("newText".to_string()),
                        Just("op".to_string()),
                        Just("pos".to_string()),
                        Just("lines".to_string()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    pub struct Harness {
        pub dir: tempfile::TempDir,
        pub updates: Arc<Mutex<Vec<ToolResult>>>,
        pub ctx: ToolContext,
    }

    impl Harness {
        pub fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let updates: Arc<Mutex<Vec<ToolResult>>> = Arc::default();
            let sink = updates.clone();
            let ctx = ToolContext {
                cwd: Arc::new(dir.path().to_path_buf()),
                cancel: CancellationToken::new(),
                progress: Arc::new(move |update| sink.lock().unwrap().push(update)),
                files: FileLocks::default(),
                leftovers: Leftovers::default(),
                bash: BashSettings::default(),
                policy: None,
            };
            Harness { dir, updates, ctx }
        }

        pub fn path(&self, rel: &str) -> PathBuf {
            self.dir.path().join(rel)
        }

        pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
            let path = self.path(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(path, content).unwrap();
        }

        pub fn read(&self, rel: &str) -> String {
            std::fs::read_to_string(self.path(rel)).unwrap()
        }

        pub async fn run(&self, tool: &dyn Tool, args: Value) -> Result<ToolResult, ToolError> {
            tool.execute(args, self.ctx.clone()).await
        }

        /// The text of a successful call; panics with the error text otherwise.
        pub async fn ok(&self, tool: &dyn Tool, args: Value) -> String {
            match self.run(tool, args).await {
                Ok(result) => result.text(),
                Err(err) => panic!("tool failed: {err}"),
            }
        }

        /// The text of a failed call; panics when it succeeded.
        pub async fn err(&self, tool: &dyn Tool, args: Value) -> String {
            match self.run(tool, args).await {
                Ok(result) => panic!("tool succeeded: {}", result.text()),
                Err(err) => err.message,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_exclude_opt_in_tools_and_allowlists_can_name_them() {
        let set = ToolSet::select(ToolSet::all_builtin(), None).unwrap();
        assert_eq!(set.names(), DEFAULT_TOOLS.to_vec());
        let allow = vec!["hashline_edit".to_string(), "read".to_string()];
        let set = ToolSet::select(ToolSet::all_builtin(), Some(&allow)).unwrap();
        assert_eq!(set.names(), vec!["read", "hashline_edit"]);
    }

    #[test]
    fn unknown_tool_names_are_listed_with_what_exists() {
        let allow = vec!["read".to_string(), "nope".to_string()];
        let err = ToolSet::select(ToolSet::all_builtin(), Some(&allow))
            .err()
            .unwrap();
        assert_eq!(
            err,
            "unknown tool in --tools: nope. Available: read, write, edit, bash, grep, find, ls, hashline_edit"
        );
    }

    #[test]
    fn every_tool_schema_is_an_object_with_required_fields_declared() {
        for tool in ToolSet::all_builtin() {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}", tool.name());
            let props = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap() {
                assert!(
                    props.contains_key(required.as_str().unwrap()),
                    "{}",
                    tool.name()
                );
            }
        }
    }

    #[test]
    fn validation_errors_name_the_tool_and_echo_the_arguments() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Params {
            path: String,
        }
        let err = parse_args::<Params>("read", &json!({"file": "x"}), |field| {
            format!("missing field `{field}`")
        })
        .unwrap_err();
        assert_eq!(
            err.message,
            "Validation failed for tool \"read\":\n  - missing field `path`\n\nReceived arguments:\n{\n  \"file\": \"x\"\n}"
        );
    }
}

#[cfg(test)]
mod props {
    //! Arbitrary arguments for every built-in tool parse or are rejected, never panic.

    use super::*;
    use proptest::prelude::*;
    use serde::de::DeserializeOwned;
    use serde_json::Map;

    use super::testing::json_value;

    /// An object using the tool's own parameter names, with arbitrary values.
    fn arguments(tool: &dyn Tool) -> impl Strategy<Value = Value> + use<> {
        let names: Vec<String> = tool.parameters()["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        proptest::collection::vec((proptest::sample::select(names), json_value()), 0..6)
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>()))
    }

    fn parses<A: DeserializeOwned>(args: &Value) {
        let _ = parse_args::<A>("t", args, |field| field.to_string());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn built_in_tool_arguments_never_panic(
            read in arguments(&read::ReadTool),
            write in arguments(&write::WriteTool),
            edit in arguments(&edit::EditTool),
            bash in arguments(&bash::BashTool),
            grep in arguments(&grep::GrepTool),
            find in arguments(&find::FindTool),
            ls in arguments(&ls::LsTool),
            hashline in arguments(&hashline_edit::HashlineEditTool),
        ) {
            parses::<read::ReadArgs>(&read);
            parses::<write::WriteArgs>(&write);
            parses::<edit::EditArgs>(&edit);
            parses::<bash::BashArgs>(&bash);
            parses::<grep::GrepArgs>(&grep);
            parses::<find::FindArgs>(&find);
            parses::<ls::LsArgs>(&ls);
            parses::<hashline_edit::HashlineEditArgs>(&hashline);
        }
    }
}
