//! What a tool may ask of the run it belongs to: whether the run is stopping, how much of its
//! budget is left, an approval, a child run.
//!
//! Every tool gets the same [`RunServices`] in its [`super::ToolContext`], built-in or an
//! extension's (GitHub, web, file search, skills, and MCP servers and subagents to come), so
//! the loop has no special case for any tool. The run owns the state behind the handles; a tool
//! only reads it or asks. What no one has set up fails closed: without an approver every
//! approval is refused, and without a child-run host no child run starts.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::control::RunControl;
use crate::events::UsageStats;
use crate::sync::LockExt;

/// The handles a tool has on its run. Clones share the run's state.
#[derive(Clone)]
pub struct RunServices {
    control: RunControl,
    deadline: Option<Instant>,
    budget: Arc<Budget>,
    approver: Arc<dyn Approver>,
    children: Arc<dyn ChildRuns>,
}

/// The budgets of a run and what it has used of them, updated by the loop.
struct Budget {
    limits: BudgetLimits,
    used: Mutex<Used>,
}

/// The budgets a tool can see the rest of (turns and time are the loop's own); `None` where
/// the run has no such limit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
    /// `--max-tool-calls`.
    pub tool_calls: Option<u32>,
    /// `--max-total-tokens`.
    pub tokens: Option<u64>,
    /// `--max-cost`, in US dollars.
    pub cost: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Used {
    tool_calls: u32,
    tokens: u64,
    cost: f64,
}

/// What is left of each budget the run has; `None` where it has no such limit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Remaining {
    /// Until `--timeout` runs out.
    pub time: Option<Duration>,
    /// Tool calls before `--max-tool-calls`.
    pub tool_calls: Option<u32>,
    /// Tokens before `--max-total-tokens`.
    pub tokens: Option<u64>,
    /// US dollars before `--max-cost`.
    pub cost: Option<f64>,
}

/// Something a tool wants to do that needs a yes first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The tool asking.
    pub tool: String,
    /// The call it asks for (`ToolCall::id`).
    pub call_id: String,
    /// What would happen, in one line a person can judge.
    pub action: String,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Granted,
    /// Do not; the reason is for the model.
    Refused {
        /// Why, in one line.
        reason: String,
    },
}

/// Decides approvals for a run (a controller attached to it, a policy).
pub trait Approver: Send + Sync {
    /// The answer to `request`; waits as long as the approver needs, and is dropped when the
    /// run stops.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
}

/// The approver of a run that has none: every request is refused, saying so.
struct NoApprover;

impl Approver for NoApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let reason = format!(
            "{} needs an approval and this run has no approver attached",
            request.tool
        );
        Box::pin(async move { Approval::Refused { reason } })
    }
}

/// A task for a child run: the same kernel, linked to this run as its parent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChildTask {
    /// The child's prompt.
    pub prompt: String,
    /// The tools it may use, of the parent's; `None`: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// The call asking for it (its `subagent_start` names it).
    pub call_id: String,
    /// What it is for, in a few words.
    pub description: String,
    /// The agent definition it runs, by name; `None`: the general agent.
    pub agent: Option<String>,
    /// The definition's instructions, added to the child's system prompt.
    pub instructions: Option<String>,
    /// The definition's turn limit.
    pub max_turns: Option<u32>,
    /// The definition's model, `provider/id`; `None`: the parent's.
    pub model: Option<String>,
    /// The definition's reasoning effort (`off` … `xhigh`); `None`: the parent's.
    pub thinking: Option<String>,
    /// A JSON Schema the child's final answer must be valid against.
    pub output_schema: Option<serde_json::Value>,
}

/// How a child run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildOutcome {
    /// The child's session id.
    pub session_id: String,
    /// Its last assistant text.
    pub final_text: Option<String>,
    /// Its final answer as JSON, valid against the task's output schema, when it had one.
    pub structured_output: Option<serde_json::Value>,
    /// What it used, counted into the parent's budget.
    pub stats: UsageStats,
}

/// Why a child run did not start or did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChildRunError {
    /// This run cannot start child runs.
    #[error("this run cannot start child runs")]
    Unavailable,
    /// The child run started and failed.
    #[error("the child run failed: {0}")]
    Failed(String),
}

/// Starts child runs for a run.
pub trait ChildRuns: Send + Sync {
    /// Runs `task` to its end as a child of this run.
    fn start(&self, task: ChildTask) -> BoxFuture<'_, Result<ChildOutcome, ChildRunError>>;
}

/// The child-run host of a run that has none.
struct NoChildRuns;

impl ChildRuns for NoChildRuns {
    fn start(&self, _task: ChildTask) -> BoxFuture<'_, Result<ChildOutcome, ChildRunError>> {
        Box::pin(async { Err(ChildRunError::Unavailable) })
    }
}

impl RunServices {
    /// The services of a run stopped by `control`, ending at `deadline`, within `limits`.
    pub fn new(control: RunControl, deadline: Option<Instant>, limits: BudgetLimits) -> Self {
        RunServices {
            control,
            deadline,
            budget: Arc::new(Budget {
                limits,
                used: Mutex::new(Used::default()),
            }),
            approver: Arc::new(NoApprover),
            children: Arc::new(NoChildRuns),
        }
    }

    /// Services for a tool called outside a run (tests, an embedding program): never
    /// stopped, no budget, approvals refused, no child runs.
    pub fn detached() -> Self {
        RunServices::new(RunControl::new(), None, BudgetLimits::default())
    }

    /// The same services, with `approver` deciding approvals.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// The same services, with `children` starting child runs.
    pub fn with_child_runs(mut self, children: Arc<dyn ChildRuns>) -> Self {
        self.children = children;
        self
    }

    /// Cancelled once the run is stopped (a signal, `--timeout`, a closed stdout).
    pub fn cancel(&self) -> &CancellationToken {
        self.control.token()
    }

    /// When the run's `--timeout` runs out, if it has one. Stopping a command (its SIGTERM
    /// grace, draining its output) must fit before it: the budget is a promise.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// What is left of each budget now.
    pub fn remaining(&self) -> Remaining {
        let used = *self.budget.used.lock_or_recover();
        let limits = self.budget.limits;
        Remaining {
            time: self
                .deadline
                .map(|end| end.saturating_duration_since(Instant::now())),
            tool_calls: limits
                .tool_calls
                .map(|max| max.saturating_sub(used.tool_calls)),
            tokens: limits.tokens.map(|max| max.saturating_sub(used.tokens)),
            cost: limits.cost.map(|max| (max - used.cost).max(0.0)),
        }
    }

    /// Records what the run has used so far (the loop calls this as its totals change).
    pub fn record_usage(&self, stats: &UsageStats) {
        *self.budget.used.lock_or_recover() = Used {
            tool_calls: stats.tool_calls,
            tokens: stats.tokens.total,
            cost: stats.cost,
        };
    }

    /// Asks for an approval; refused, with the reason, when the run has no approver.
    pub async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.approver.approve(request).await
    }

    /// Runs `task` as a child run of this one.
    pub async fn start_child(&self, task: ChildTask) -> Result<ChildOutcome, ChildRunError> {
        self.children.start(task).await
    }
}

#[cfg(test)]
mod tests;
