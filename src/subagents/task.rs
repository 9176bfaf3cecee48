//! `task {description, prompt, agent?}`: runs a child agent and returns its final answer.
//!
//! The child is started through the run's services ([`crate::tools::RunServices::start_child`]),
//! so this tool knows nothing of how: the run's kernel starts it with a parent link. The tool's
//! description lists the agent definitions the run found, so the model can choose one; an
//! unknown name is an error listing them.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::definitions::Definitions;
use crate::events::{TextContent, ToolResult};
use crate::tools::{
    ChildTask, Tool, ToolContext, ToolError, ToolFuture, parameters_of, parse_args,
};

/// The tool's name.
pub const NAME: &str = "task";

/// The `task` tool of a run.
pub(super) struct TaskTool {
    definitions: Arc<Definitions>,
    description: String,
}

#[derive(Deserialize, JsonSchema)]
struct TaskArgs {
    /// A short description of the task (3 to 5 words)
    description: String,
    /// The task for the subagent: everything it needs, since it sees nothing of this conversation
    prompt: String,
    /// The agent to run, one of those listed; omit it for a general agent with your tools
    agent: Option<String>,
}

impl TaskTool {
    pub(super) fn new(definitions: Arc<Definitions>) -> TaskTool {
        let mut description = String::from(
            "Launch a subagent: a new agent with its own conversation that works on one task with \
             tools and returns its final answer. Use it for independent pieces of work (explore a \
             module, review a file, try a fix); several task calls in one message run at the same \
             time. The subagent sees only the prompt you give it.",
        );
        if !definitions.all().is_empty() {
            description.push_str("\n\nAvailable agents:");
            for agent in definitions.all() {
                description.push_str(&format!("\n- {}: {}", agent.name, agent.description));
            }
        }
        TaskTool {
            definitions,
            description,
        }
    }

    fn child_task(&self, args: TaskArgs, call_id: &str) -> Result<ChildTask, ToolError> {
        let mut task = ChildTask {
            prompt: args.prompt,
            call_id: call_id.to_string(),
            description: args.description,
            ..ChildTask::default()
        };
        let Some(name) = args.agent.filter(|name| !name.trim().is_empty()) else {
            return Ok(task);
        };
        let Some(agent) = self.definitions.get(name.trim()) else {
            let known: Vec<&str> = self
                .definitions
                .all()
                .iter()
                .map(|agent| agent.name.as_str())
                .collect();
            return Err(ToolError::new(match known.as_slice() {
                [] => format!(
                    "No agent named {name:?}: this run has no agent definitions; omit agent for a general subagent"
                ),
                known => format!(
                    "No agent named {name:?}; the agents are: {}",
                    known.join(", ")
                ),
            }));
        };
        task.agent = Some(agent.name.clone());
        task.tools.clone_from(&agent.tools);
        task.max_turns = agent.max_turns;
        task.model.clone_from(&agent.model);
        task.thinking.clone_from(&agent.thinking);
        task.output_schema.clone_from(&agent.output_schema);
        task.instructions = Some(agent.instructions.clone()).filter(|text| !text.is_empty());
        Ok(task)
    }
}

impl Tool for TaskTool {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        parameters_of::<TaskArgs>()
    }

    fn prompt_snippet(&self) -> &str {
        "Run a subagent on an independent task"
    }

    /// Task calls of one message run at the same time: what a child changes, it changes
    /// through its own calls, each checked and locked like any other.
    fn is_read_only(&self) -> bool {
        true
    }

    fn stop_grace(&self) -> std::time::Duration {
        // A child winds its own calls down when the run stops; it gets their grace.
        std::time::Duration::from_secs(3)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: TaskArgs =
                parse_args(NAME, &args, |field| format!("missing field `{field}`"))?;
            let task = self.child_task(args, &ctx.call_id)?;
            let outcome = ctx
                .run
                .start_child(task)
                .await
                .map_err(|err| ToolError::new(format!("The subagent failed: {err}")))?;
            let text = match &outcome.structured_output {
                Some(value) => value.to_string(),
                None => outcome
                    .final_text
                    .unwrap_or_else(|| "(the subagent finished without an answer)".to_string()),
            };
            let mut details = json!({
                "sessionId": outcome.session_id,
                "tokens": outcome.stats.tokens.total,
                "cost": outcome.stats.cost,
            });
            if let Some(value) = outcome.structured_output {
                details["structuredOutput"] = value;
            }
            Ok(ToolResult {
                content: vec![TextContent::text(text)],
                details: Some(details),
            })
        })
    }
}
