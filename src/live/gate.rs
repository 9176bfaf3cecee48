//! What a tool call must pass before it runs, and the audit after: the pre-tool hooks in
//! order (each sees the arguments the one before left), then an approval when the tool is
//! listed in `--approve-tools` or a hook asked for one. The post-tool hooks see the result.
//!
//! Without a controller, the hooks are the deciders of a listed tool: when every hook
//! allowed, the approval is resolved by them; a hook that asks cannot be answered and the call
//! is refused. Every way an approval can end without a yes — a no, the timeout, an abort —
//! refuses the call and says why.

use std::time::Instant;

use serde_json::Value;

use super::Shared;
use super::approval::Decision;
use super::hooks::{PostToolUse, PreToolUse, Verdict};
use crate::events::{
    ApprovalBy, ApprovalRequested, ApprovalResolved, Event, HookDecision, HookResult, ToolCall,
};
use crate::extension::{Admission, ToolEnding};
use crate::sync::LockExt;

/// Whether `call` may run, and with which arguments.
pub(super) async fn admit(shared: &Shared, call: &ToolCall, input: Value) -> Admission {
    let (input, asked) = match run_pre_hooks(shared, call, input).await {
        Ok(passed) => passed,
        Err(reason) => return Admission::Refuse(reason),
    };
    let listed = shared
        .approve
        .as_ref()
        .is_some_and(|tools| tools.is_match(&call.name));
    if !listed && asked.is_none() {
        return Admission::Run(input);
    }
    if shared.commands.is_some() {
        let subject = Subject {
            call_id: call.id.as_str(),
            tool: &call.name,
        };
        return match ask_controller(shared, subject, &input, asked.flatten()).await {
            Ok(()) => Admission::Run(input),
            Err(denied) => Admission::Refuse(denied),
        };
    }
    // No controller: the hooks decide, and a hook that asked has no one to ask.
    let (allow, reason) = match asked {
        Some(_) => (
            false,
            Some(format!(
                "{} needs an approval and this run has no controller to ask (--control stdin)",
                call.name
            )),
        ),
        None => (true, None),
    };
    let subject = Subject {
        call_id: call.id.as_str(),
        tool: &call.name,
    };
    resolve(
        shared,
        &subject,
        &next_id(shared),
        allow,
        reason.clone(),
        ApprovalBy::Hook,
    );
    match reason {
        Some(reason) if !allow => Admission::Refuse(reason),
        _ => Admission::Run(input),
    }
}

/// The approvals a tool asks for itself ([`crate::tools::RunServices::approve`]): the same
/// request to the controller as a listed tool's call; without a controller, refused.
pub(super) struct Approvals(pub std::sync::Arc<Shared>);

impl crate::tools::Approver for Approvals {
    fn approve<'a>(
        &'a self,
        request: &'a crate::tools::ApprovalRequest,
    ) -> futures_util::future::BoxFuture<'a, crate::tools::Approval> {
        use crate::tools::Approval;
        Box::pin(async move {
            if self.0.commands.is_none() {
                return Approval::Refused {
                    reason: format!(
                        "{} needs an approval and this run has no controller to ask (--control stdin)",
                        request.tool
                    ),
                };
            }
            let subject = Subject {
                call_id: &request.call_id,
                tool: &request.tool,
            };
            let input = serde_json::json!({ "action": request.action });
            match ask_controller(&self.0, subject, &input, None).await {
                Ok(()) => Approval::Granted,
                Err(reason) => Approval::Refused { reason },
            }
        })
    }
}

/// An approval resolved without a request line (the hooks decided): an id of its own.
fn next_id(shared: &Shared) -> String {
    let (id, _) = shared.approvals.open();
    shared.approvals.close(&id);
    id
}

/// The pre-tool hooks in order: the arguments they leave, and whether one asked for an
/// approval (with its reason); or the reason one refused.
async fn run_pre_hooks(
    shared: &Shared,
    call: &ToolCall,
    mut input: Value,
) -> Result<(Value, Option<Option<String>>), String> {
    let mut asked = None;
    let cwd = shared.cwd.display().to_string();
    for hook in &shared.pre_hooks {
        let started = Instant::now();
        let verdict = hook
            .pre_tool(
                &hook_call(shared, &cwd, call, &input),
                &shared.cwd,
                shared.hook_timeout,
            )
            .await;
        let (decision, reason, updated) = match &verdict {
            Verdict::Allow { updated_input } => (HookDecision::Allow, None, updated_input.clone()),
            Verdict::Ask { reason } => (HookDecision::Ask, reason.clone(), None),
            Verdict::Deny { reason } => (HookDecision::Deny, Some(reason.clone()), None),
            Verdict::Failed { reason } => (HookDecision::Failed, Some(reason.clone()), None),
        };
        shared.emit(&Event::HookResult(&HookResult {
            tool_call_id: call.id.as_str().to_string(),
            tool_name: call.name.clone(),
            hook: hook.command().to_string(),
            decision,
            reason: reason.clone(),
            updated_input: updated.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
        }));
        match verdict {
            Verdict::Allow { .. } => {
                if let Some(updated) = updated {
                    input = updated;
                }
            }
            Verdict::Ask { reason } => asked = Some(reason),
            Verdict::Deny { reason } | Verdict::Failed { reason } => return Err(reason),
        }
    }
    Ok((input, asked))
}

/// What an approval is for: a call of a tool.
pub(super) struct Subject<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
}

/// Asks the controller and waits for its `decide`, the timeout or an abort; `Err` is the
/// denial, as the model reads it.
pub(super) async fn ask_controller(
    shared: &Shared,
    subject: Subject<'_>,
    input: &Value,
    reason: Option<String>,
) -> Result<(), String> {
    let (id, decision) = shared.approvals.open();
    shared.emit(&Event::ApprovalRequested(&ApprovalRequested {
        id: id.clone(),
        tool_call_id: subject.call_id.to_string(),
        tool_name: subject.tool.to_string(),
        input: input.clone(),
        timeout_ms: shared.approval_timeout.as_millis() as u64,
        reason,
    }));
    let waited = tokio::select! {
        decided = decision => decided.ok(),
        () = tokio::time::sleep(shared.approval_timeout) => None,
        () = shared.control.aborted() => None,
    };
    let (allow, reason, by) = match waited {
        Some(Decision { allow, reason }) => (allow, reason, ApprovalBy::Control),
        None => {
            shared.approvals.close(&id);
            if shared.control.is_aborted() {
                (
                    false,
                    Some("the run was stopped".to_string()),
                    ApprovalBy::Abort,
                )
            } else {
                let waited = humantime::format_duration(shared.approval_timeout);
                (
                    false,
                    Some(format!("no decision came within {waited}")),
                    ApprovalBy::Timeout,
                )
            }
        }
    };
    resolve(shared, &subject, &id, allow, reason.clone(), by);
    if allow {
        return Ok(());
    }
    Err(match reason {
        Some(reason) => format!("The {} call was denied: {reason}", subject.tool),
        None => format!("The {} call was denied by the operator", subject.tool),
    })
}

fn resolve(
    shared: &Shared,
    subject: &Subject<'_>,
    id: &str,
    allow: bool,
    reason: Option<String>,
    by: ApprovalBy,
) {
    shared.emit(&Event::ApprovalResolved(&ApprovalResolved {
        id: id.to_string(),
        tool_call_id: subject.call_id.to_string(),
        allow,
        reason,
        by,
    }));
}

/// What a hook is told of `call`, with `input` as its arguments.
fn hook_call<'a>(
    shared: &'a Shared,
    cwd: &'a str,
    call: &'a ToolCall,
    input: &'a Value,
) -> PreToolUse<'a> {
    PreToolUse {
        session_id: &shared.session_id,
        cwd,
        tool_name: &call.name,
        tool_input: input,
        tool_use_id: call.id.as_str(),
    }
}

/// The post-tool hooks, one after the other; a failure is a warning at the end.
pub(super) async fn after_call(shared: &Shared, call: &ToolCall, ending: ToolEnding<'_>) {
    if shared.post_hooks.is_empty() {
        return;
    }
    let cwd = shared.cwd.display().to_string();
    let response = serde_json::json!({
        "content": ending.result.content,
        "details": ending.result.details,
        "isError": ending.is_error,
    });
    let arguments = call.arguments();
    for hook in &shared.post_hooks {
        let input = PostToolUse {
            call: hook_call(shared, &cwd, call, &arguments),
            tool_response: &response,
        };
        let ran = tokio::select! {
            ran = hook.post_tool(&input, &shared.cwd, shared.hook_timeout) => ran,
            () = shared.control.aborted() => return,
        };
        if let Err(failure) = ran {
            shared
                .warnings
                .lock_or_recover()
                .push(format!("post-tool hook: {failure}"));
        }
    }
}
