//! The records of live control (`--control stdin`, `--approve-tools`, tool hooks,
//! `--heartbeat`). Part of the wire contract of [`super`]; the commands they answer are
//! described in `docs/events.md`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `control_ack`: the answer to one line of `--control stdin`, in the order the lines came.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlAck {
    /// The command's `type` (`prompt`, `steer`, `follow_up`, `abort`, `decide`); absent when
    /// the line was not a JSON object with a `type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's `id`, echoed so the caller can match the answer (for `decide`, the
    /// approval's id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// True when the command was taken.
    pub ok: bool,
    /// Why the command was not taken; absent when `ok` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `control_abort`: an `abort` command stopped the run; the terminal events follow.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlAbort {
    /// The reason the command gave (absent when it gave none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `approval_requested`: a tool call waits for a `decide` command (or its hooks, or the
/// timeout) before it runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequested {
    /// The approval's id; `decide` names it.
    pub id: String,
    /// The call waiting, as in `tool_execution_start`.
    pub tool_call_id: String,
    /// The tool called.
    pub tool_name: String,
    /// The arguments the call would run with (after any hook's `updatedInput`).
    pub input: Value,
    /// How long the call waits before it is denied, in milliseconds (`--approval-timeout`).
    pub timeout_ms: u64,
    /// Why the approval is asked: the reason a hook gave with `permissionDecision: "ask"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Who resolved an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalBy {
    /// A `decide` command.
    Control,
    /// The pre-tool hooks, in a run without `--control`.
    Hook,
    /// No decision came within `--approval-timeout`: denied.
    Timeout,
    /// The run was stopped while the call waited: denied.
    Abort,
}

/// `approval_resolved`: how an approval ended; every `approval_requested` gets one, and so
/// does a call a hook decided for `--approve-tools` without a controller.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResolved {
    /// The approval's id.
    pub id: String,
    /// The call it was for.
    pub tool_call_id: String,
    /// Whether the call runs.
    pub allow: bool,
    /// The reason given (a denial's reason is the tool error the model reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who decided.
    pub by: ApprovalBy,
}

/// What a pre-tool hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// The call may run (it must still pass the other hooks and any approval).
    Allow,
    /// The call needs an approval.
    Ask,
    /// The hook refused the call.
    Deny,
    /// The hook failed (an unexpected exit, a crash, a timeout, output it may not give): the
    /// call is refused.
    Failed,
}

/// `hook_result`: one `--pre-tool-hook` program ran for a call.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookResult {
    /// The call, as in `tool_execution_start`.
    pub tool_call_id: String,
    /// The tool called.
    pub tool_name: String,
    /// The hook's command line.
    pub hook: String,
    /// What it decided.
    pub decision: HookDecision,
    /// Its reason (a denial's reason is the tool error the model reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments it replaced the call's with (`updatedInput`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// `heartbeat`: nothing else was written for `--heartbeat`; the run is alive.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    /// Time since the run started, in milliseconds.
    pub elapsed_ms: u64,
    /// Time since the previous line, in milliseconds.
    pub quiet_ms: u64,
}
