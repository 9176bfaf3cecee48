//! Child runs: what a `task` call starts. A child is the same kernel as its parent
//! ([`crate::agent::run`]) with a parent link: it asks the model over the parent's connection,
//! runs a subset of the parent's tools in the same sandbox with the same edit scope, stops when
//! the parent stops, and spends from the parent's budgets (it starts with what is left of them,
//! and what it used is counted into the parent's totals at the parent's next safe point, where
//! the budgets are checked). Children of one run take turns in `--max-subagents` slots; a
//! child of depth `--max-subagent-depth` starts none of its own.
//!
//! The parent's stream shows each child as `subagent_start` and `subagent_end`; the child's
//! own events are not written (its answer is the `task` call's result).

use std::sync::{Mutex, OnceLock};

use futures_util::future::BoxFuture;

use super::*;
use crate::config::{Connected, Limits, ParentLink, PromptConfig, SubagentLimits, ToolSelection};
use crate::control::RunControl;
use crate::events::{SubagentEnd, SubagentStart};
use crate::sync::LockExt;
use crate::tools::{ChildOutcome, ChildRunError, ChildRuns, ChildTask, Tool};

/// Starts the child runs of one run.
pub(super) struct ChildHost {
    template: Template,
    /// The run's model connection, once made.
    connected: OnceLock<Connected>,
    slots: tokio::sync::Semaphore,
    /// This run's depth (0 for the top run).
    depth: u32,
    session_id: SessionId,
    stream: Emitter,
    /// The run's budgets, for what is left of them when a child starts.
    budget: RunServices,
    /// What finished children used, until the run counts it.
    used: Mutex<UsageStats>,
    /// The run's file locks, shared with its children.
    files: crate::tools::FileLocks,
}

/// What a child's configuration is made of: the parent's, narrowed.
struct Template {
    cwd: std::path::PathBuf,
    model: ModelSource,
    thinking: Option<crate::config::ThinkingLevel>,
    limits: Limits,
    prompt: PromptConfig,
    control: RunControl,
    secrets: crate::secrets::Secrets,
    sandbox: crate::sandbox::Settings,
    prices: crate::llm::pricing::PriceTable,
    price: Option<crate::llm::pricing::Price>,
    edit_scope: Option<Arc<crate::tools::EditScope>>,
    subagents: SubagentLimits,
    /// The run's tools as of now (late ones join as they come).
    tools: Mutex<Vec<Arc<dyn Tool>>>,
    /// The parent's extensions: a child's calls pass the same gates (hooks, approvals).
    gates: Vec<Arc<dyn Extension>>,
    /// Where the parent's session file is: a child's goes beside it.
    session_dir: Option<std::path::PathBuf>,
}

impl ChildHost {
    /// The host of a run configured by `config`, offering `tools`, writing to `stream`.
    pub(super) fn new(
        config: &RunConfig,
        tools: &ToolSet,
        stream: &Emitter,
        session_id: &SessionId,
        budget: RunServices,
        files: crate::tools::FileLocks,
        session_dir: Option<std::path::PathBuf>,
    ) -> ChildHost {
        ChildHost {
            template: Template {
                cwd: config.cwd.clone(),
                model: config.model.clone(),
                thinking: config.thinking,
                limits: config.limits.clone(),
                prompt: config.prompt.clone(),
                control: config.control.clone(),
                secrets: config.secrets.clone(),
                sandbox: config.sandbox.clone(),
                prices: config.prices.clone(),
                price: config.price.clone(),
                edit_scope: config.tools.edit_scope.clone(),
                subagents: config.subagents,
                tools: Mutex::new(tools.iter().cloned().collect()),
                gates: config.extensions.clone(),
                session_dir,
            },
            connected: OnceLock::new(),
            slots: tokio::sync::Semaphore::new(config.subagents.max_concurrent.max(1)),
            depth: config.parent.as_ref().map_or(0, |parent| parent.depth),
            session_id: session_id.clone(),
            stream: stream.clone(),
            budget,
            used: Mutex::new(UsageStats::default()),
            files,
        }
    }

    /// The run's tools changed (late tools came or went): children started from now on may
    /// use them.
    pub(super) fn offer(&self, tools: &ToolSet) {
        *self.template.tools.lock_or_recover() = tools.iter().cloned().collect();
    }

    /// The run is connected: children ask the model over the same connection.
    pub(super) fn connected(&self, connected: Connected) {
        let _ = self.connected.set(connected);
    }

    /// What children used since the last call.
    pub(super) fn take_used(&self) -> UsageStats {
        std::mem::take(&mut *self.used.lock_or_recover())
    }

    /// The child's configuration: the parent's, narrowed to the task's tools, with what is
    /// left of the parent's budgets, stopped when the parent stops.
    fn child_config(
        &self,
        task: &ChildTask,
        depth: u32,
        mut connected: Connected,
        control: RunControl,
    ) -> Result<RunConfig, ChildRunError> {
        let t = &self.template;
        if let Some(model) = &task.model {
            connected.model = other_model(model, &connected.provider)?;
        }
        let thinking = match &task.thinking {
            None => t.thinking,
            Some(level) => Some(
                <crate::config::ThinkingLevel as clap::ValueEnum>::from_str(level, true).map_err(
                    |_| ChildRunError::Failed(format!("unknown thinking level {level:?}")),
                )?,
            ),
        };
        let tools = self.child_tools(task.tools.as_deref())?;
        let left = self.budget.remaining();
        let mut config = RunConfig::new(t.cwd.clone(), t.model.clone());
        config.thinking = thinking;
        config.session = self.child_session(&config.session_id)?;
        config.limits = Limits {
            max_turns: task.max_turns.or(t.limits.max_turns),
            timeout: left.time,
            max_tool_calls: left.tool_calls.map(|n| n.max(1)),
            max_total_tokens: left.tokens.map(|n| n.max(1)),
            max_cost: left.cost.map(|c| c.max(f64::MIN_POSITIVE)),
            ..t.limits.clone()
        };
        config.prompt = PromptConfig {
            append: match (&t.prompt.append, &task.instructions) {
                (Some(own), Some(more)) => Some(format!("{own}\n\n{more}")),
                (own, more) => more.clone().or_else(|| own.clone()),
            },
            ..t.prompt.clone()
        };
        config.output_schema = match &task.output_schema {
            None => None,
            Some(schema) => Some(Arc::new(
                crate::output::OutputSchema::new(schema.clone()).map_err(|err| {
                    ChildRunError::Failed(format!("the agent's output schema: {err}"))
                })?,
            )),
        };
        config.control = control;
        config.retain_records = false;
        config.secrets = t.secrets.clone();
        config.sandbox = t.sandbox.clone();
        config.prices = t.prices.clone();
        config.price.clone_from(&t.price);
        config.tools = ToolSelection {
            builtin: false,
            allow: None,
            edit_scope: t.edit_scope.clone(),
        };
        let child = crate::extension::ChildOf {
            session_id: config.session_id.as_str(),
            depth,
            call_id: &task.call_id,
        };
        let riders: Vec<Arc<dyn Extension>> =
            t.gates.iter().filter_map(|e| e.for_child(child)).collect();
        config.extensions = vec![
            Arc::new(ParentTools(tools)),
            Arc::new(ParentGates(t.gates.clone())),
        ];
        config.extensions.extend(riders);
        config.subagents = t.subagents;
        config.parent = Some(ParentLink {
            session_id: self.session_id.clone(),
            depth,
            connected,
            files: self.files.clone(),
        });
        Ok(config)
    }

    /// The parent's tools a child may use: all of them, or the named ones, every one of which
    /// the parent must have.
    fn child_tools(&self, names: Option<&[String]>) -> Result<Vec<Arc<dyn Tool>>, ChildRunError> {
        let tools = self.template.tools.lock_or_recover().clone();
        let Some(names) = names else {
            return Ok(tools.clone());
        };
        let missing: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|name| !tools.iter().any(|tool| tool.name() == *name))
            .collect();
        if !missing.is_empty() {
            return Err(ChildRunError::Failed(format!(
                "a subagent cannot have tools its parent does not: {}",
                missing.join(", ")
            )));
        }
        Ok(tools
            .iter()
            .filter(|tool| names.iter().any(|name| name == tool.name()))
            .cloned()
            .collect())
    }

    /// A child's session file, beside the parent's and naming it; none when the parent has
    /// none.
    fn child_session(
        &self,
        child: &SessionId,
    ) -> Result<Option<crate::config::SessionSetup>, ChildRunError> {
        let t = &self.template;
        let Some(dir) = &t.session_dir else {
            return Ok(None);
        };
        let writer = crate::session::SessionWriter::create(
            dir,
            child.as_str(),
            &t.cwd,
            Some(self.session_id.as_str()),
            t.secrets.clone(),
        )
        .map_err(|err| {
            ChildRunError::Failed(format!("cannot create the subagent's session file: {err}"))
        })?;
        Ok(Some(crate::config::SessionSetup {
            writer: Some(writer),
            history: Vec::new(),
            resumed: None,
            prior_entries: 0,
            torn: None,
        }))
    }

    async fn run_child(&self, task: ChildTask) -> Result<ChildOutcome, ChildRunError> {
        let depth = self.depth + 1;
        let max = self.template.subagents.max_depth;
        if depth > max {
            return Err(ChildRunError::Failed(format!(
                "subagents nest at most {max} deep (--max-subagent-depth); this one would be {depth} deep"
            )));
        }
        let connected = self
            .connected
            .get()
            .cloned()
            .ok_or(ChildRunError::Unavailable)?;
        let parent = &self.template.control;
        let _slot = tokio::select! {
            slot = self.slots.acquire() => slot.map_err(|_| ChildRunError::Unavailable)?,
            () = parent.aborted() => return Err(ChildRunError::Failed("the run was stopped".into())),
        };
        // The child stops when the parent does, for the same reason.
        let control = RunControl::new();
        let link = {
            let (parent, child) = (parent.clone(), control.clone());
            tokio::spawn(async move {
                parent.aborted().await;
                child.abort(
                    parent
                        .reason()
                        .unwrap_or(crate::control::AbortReason::Terminate),
                );
            })
        };
        let config = self.child_config(&task, depth, connected, control)?;
        let child_id = config.session_id.clone();
        let session_file = config
            .session
            .as_ref()
            .and_then(|setup| setup.writer.as_ref())
            .map(|writer| writer.path().display().to_string());
        self.stream.emit(&Event::SubagentStart(&SubagentStart {
            tool_call_id: task.call_id.clone(),
            child_session_id: child_id.as_str().to_string(),
            parent_session_id: self.session_id.as_str().to_string(),
            agent: task.agent.clone(),
            description: task.description.clone(),
            depth,
            session_file,
        }));
        let started = Instant::now();
        let sink: Box<dyn EventSink> = match self.template.subagents.events {
            crate::config::SubagentEvents::Summary => Box::new(Unwritten),
            crate::config::SubagentEvents::Full => Box::new(Forwarded {
                parent: self.stream.clone(),
                tag: serde_json::json!({
                    "toolCallId": task.call_id,
                    "childSessionId": child_id.as_str(),
                    "depth": depth,
                }),
            }),
        };
        let result = Box::pin(run(config, task.prompt, sink)).await;
        link.abort();
        self.count(child_id.as_str(), task.agent.clone(), &result.stats);
        self.stream.emit(&Event::SubagentEnd(&SubagentEnd {
            tool_call_id: task.call_id,
            child_session_id: child_id.as_str().to_string(),
            stop_reason: result.stop_reason,
            usage: result.stats.tokens.clone(),
            cost: result.stats.cost,
            duration_ms: started.elapsed().as_millis() as u64,
        }));
        if result.ok() {
            Ok(ChildOutcome {
                session_id: child_id.as_str().to_string(),
                final_text: result.final_text,
                structured_output: result.structured_output,
                stats: result.stats,
            })
        } else {
            Err(ChildRunError::Failed(result.failure.unwrap_or_else(|| {
                format!("the subagent stopped ({:?})", result.stop_reason)
            })))
        }
    }

    /// Adds what a child used to what the run will count.
    fn count(&self, child_session_id: &str, agent: Option<String>, child: &UsageStats) {
        let mut used = self.used.lock_or_recover();
        used.subagents.push(crate::events::SubagentUsage {
            child_session_id: child_session_id.to_string(),
            agent,
            tokens: child.tokens.clone(),
            cost: child.cost,
            llm_requests: child.llm_requests,
        });
        add_spending(&mut used, child);
    }
}

impl ChildRuns for ChildHost {
    fn start(&self, task: ChildTask) -> BoxFuture<'_, Result<ChildOutcome, ChildRunError>> {
        Box::pin(self.run_child(task))
    }
}

/// The model id of `model` (`provider/id`), which must be one the run's `provider` serves:
/// a child asks over the parent's connection.
fn other_model(model: &str, provider: &str) -> Result<String, ChildRunError> {
    match model.split_once('/') {
        Some((named, id)) if named == provider && !id.is_empty() => Ok(id.to_string()),
        _ => Err(ChildRunError::Failed(format!(
            "a subagent's model must be one the run's provider serves ({provider}/<id>), not {model:?}"
        ))),
    }
}

/// A child's tools: the parent's, narrowed (offered as an extension's, since a child has no
/// built-in set of its own).
struct ParentTools(Vec<Arc<dyn Tool>>);

impl Extension for ParentTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0.clone()
    }
}

/// The parent's gates on a child's calls: every call a child makes must be admitted by the
/// parent's extensions (its hooks and approvals, asked on the parent's stream) and is audited
/// by them; a child has no more rights than its parent.
struct ParentGates(Vec<Arc<dyn Extension>>);

impl Extension for ParentGates {
    fn admit<'a>(
        &'a self,
        call: &'a crate::events::ToolCall,
        input: Value,
    ) -> BoxFuture<'a, crate::extension::Admission> {
        Box::pin(async move {
            let mut input = input;
            for gate in &self.0 {
                match gate.admit(call, input).await {
                    crate::extension::Admission::Run(admitted) => input = admitted,
                    refused @ crate::extension::Admission::Refuse(_) => return refused,
                }
            }
            crate::extension::Admission::Run(input)
        })
    }

    fn after_call<'a>(
        &'a self,
        call: &'a crate::events::ToolCall,
        ending: crate::extension::ToolEnding<'a>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for gate in &self.0 {
                gate.after_call(call, ending).await;
            }
        })
    }

    fn approver(&self) -> Option<Arc<dyn crate::tools::Approver>> {
        self.0.iter().find_map(|gate| gate.approver())
    }
}

/// A child's own stream, written into the parent's as it happens (`--subagent-events full`),
/// each line tagged with the child it comes from; the child's header is left out
/// (`subagent_start` stands for it).
struct Forwarded {
    parent: Emitter,
    tag: Value,
}

impl EventSink for Forwarded {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let Ok(Value::Object(mut record)) = serde_json::from_slice::<Value>(line) else {
            return Ok(());
        };
        if record.get("type").and_then(Value::as_str) == Some("session") {
            return Ok(());
        }
        record.insert("subagent".to_string(), self.tag.clone());
        self.parent.forward(&Value::Object(record));
        Ok(())
    }
}

/// A child's own stream: not written (its answer is the task's result; `subagent_start` and
/// `subagent_end` show it in the parent's).
struct Unwritten;

impl EventSink for Unwritten {
    fn write_line(&mut self, _line: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

impl Session {
    /// Counts what finished children used into the run's totals (where the budgets see it).
    pub(super) fn count_children(&mut self) {
        let used = self.children.take_used();
        add_spending(&mut self.state.stats, &used);
        self.state.stats.subagents.extend(used.subagents);
    }
}

/// Adds what `from` spent (tokens, cost, model requests) to `into`.
fn add_spending(into: &mut UsageStats, from: &UsageStats) {
    into.tokens.input += from.tokens.input;
    into.tokens.output += from.tokens.output;
    into.tokens.cache_read += from.tokens.cache_read;
    into.tokens.cache_write += from.tokens.cache_write;
    into.tokens.total += from.tokens.total;
    into.cost += from.cost;
    into.llm_requests += from.llm_requests;
}
