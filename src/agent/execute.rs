//! Running the tool calls of one assistant message.
//!
//! A batch of read-only calls runs concurrently; if any call may change something, the batch
//! runs one call at a time, in order. `tool_execution_start` lines come in call order,
//! `tool_execution_end` lines as calls finish, and the tool-result messages in call order.
//! Nothing a tool does can fail the run: unknown tools, bad arguments, errors and even panics
//! become `isError: true` results the model reads.
//!
//! Nor can a tool outlive the run's budget. This is the one place every call runs, built-in,
//! web, GitHub or any other extension's, so the bound lives here rather than in each tool:
//! once the run is stopped (`--timeout` ran out, a signal, a closed stdout) a call still
//! running gets its tool's [`Tool::stop_grace`] to wind down by itself, cut to what is left of
//! the budget, and is then dropped: its request is cancelled, its process killed. A tool that
//! keeps nothing to wind down (a web or GitHub request) is dropped at once. The run then ends
//! the way it would have without the call.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::join_all;
use serde_json::Value;

use crate::control::{AbortReason, RunControl};
use crate::events::{
    Emitter, Event, Message, TextContent, ToolCall, ToolResult, ToolResultMessage, now_millis,
};
use crate::extension::{Admission, Extension, ToolEnding};
use crate::secrets::{Secrets, StreamRedactor};
use crate::tools::{Tool, ToolContext, ToolSet};

/// Time on top of a tool's own stop for it to hand back what it collected (a killed command's
/// output), also when the budget has nothing left.
const STOP_MARGIN: Duration = Duration::from_millis(500);

pub(super) struct ExecContext<'a> {
    pub emitter: &'a Emitter,
    pub tools: &'a ToolSet,
    /// The context each call gets (its progress callback is replaced per call).
    pub base: &'a ToolContext,
    pub control: &'a RunControl,
    pub extensions: &'a [Arc<dyn Extension>],
    pub secrets: &'a Secrets,
    /// When the run's `--timeout` runs out, if it has one.
    pub deadline: Option<Instant>,
}

/// Runs the calls and returns their result messages, in call order.
pub(super) async fn execute_calls(
    ctx: &ExecContext<'_>,
    calls: &[ToolCall],
) -> Vec<ToolResultMessage> {
    let concurrent = calls.len() > 1
        && calls.iter().all(|call| {
            ctx.tools
                .get(&call.name)
                .is_none_or(|tool| tool.is_read_only())
        });
    // A steer skips what has not started yet, decided before a call is announced: a call whose
    // `tool_execution_start` was printed runs. A batch starts at once, so it is skipped whole
    // or not at all.
    let results = if concurrent {
        let run = !steering_waiting(ctx);
        for call in calls {
            start(ctx, call);
        }
        join_all(calls.iter().map(|call| run_call(ctx, call, run))).await
    } else {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let run = !steering_waiting(ctx);
            start(ctx, call);
            results.push(run_call(ctx, call, run).await);
        }
        results
    };
    for result in &results {
        let message = Message::ToolResult(result.clone());
        ctx.emitter.emit(&Event::MessageStart { message: &message });
        ctx.emitter.emit(&Event::MessageEnd { message: &message });
    }
    results
}

fn start(ctx: &ExecContext<'_>, call: &ToolCall) {
    ctx.emitter.emit(&Event::ToolExecutionStart {
        tool_call_id: call.id.as_str(),
        tool_name: &call.name,
        args: &call.arguments(),
    });
    for extension in ctx.extensions {
        extension.tool_started(call);
    }
}

fn steering_waiting(ctx: &ExecContext<'_>) -> bool {
    ctx.extensions.iter().any(|e| e.steering_waiting())
}

/// Runs `call` (or, when `run` is false, answers it as skipped for steering) and reports it.
async fn run_call(ctx: &ExecContext<'_>, call: &ToolCall, run: bool) -> ToolResultMessage {
    let started = Instant::now();
    let (mut result, is_error) = if run {
        outcome(ctx, call).await
    } else {
        (error_text(SKIPPED_FOR_STEERING), true)
    };
    // The model never sees a secret, even one a command printed.
    for block in &mut result.content {
        let TextContent::Text { text } = block;
        if let std::borrow::Cow::Owned(clean) = ctx.secrets.redact(text) {
            *text = clean;
        }
    }
    if let Some(details) = &mut result.details {
        ctx.secrets.redact_value(details);
    }
    let ending = ToolEnding {
        result: &result,
        is_error,
        aborted: is_error && ctx.control.is_aborted(),
        timed_out: result
            .details
            .as_ref()
            .is_some_and(|d| d.get("timedOut") == Some(&serde_json::Value::Bool(true))),
    };
    ctx.emitter.emit(&Event::ToolExecutionEnd {
        tool_call_id: call.id.as_str(),
        tool_name: &call.name,
        result: &result,
        is_error,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    for extension in ctx.extensions {
        extension.tool_ended(call, ending);
    }
    for extension in ctx.extensions {
        extension.after_call(call, ending).await;
    }
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: result.content,
        details: result.details,
        is_error,
        timestamp: now_millis(),
    }
}

async fn outcome(ctx: &ExecContext<'_>, call: &ToolCall) -> (ToolResult, bool) {
    if ctx.control.is_aborted() {
        return (error_text("Operation aborted"), true);
    }
    let Some(tool) = ctx.tools.get(&call.name) else {
        return (error_text(&format!("Tool {} not found", call.name)), true);
    };
    if let Some(problem) = &call.arguments_error {
        return (
            error_text(&format!(
                "Invalid arguments for tool \"{}\": {problem}. Send the arguments as one JSON object that matches the tool's schema.\n\nReceived:\n{}",
                call.name, call.raw_arguments
            )),
            true,
        );
    }
    let arguments = match admit(ctx, call, tool.as_ref()).await {
        Ok(arguments) => arguments,
        Err(reason) => return (error_text(&reason), true),
    };
    // Progress text is a stream (bash sends what was printed since the last update): it is
    // redacted across updates, so a secret printed in two reads is still replaced. Updates
    // come back here over a channel to be printed with the call's arguments, which live here.
    let mut updates = Updates {
        emitter: ctx.emitter,
        secrets: ctx.secrets,
        call,
        redactor: StreamRedactor::default(),
    };
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel::<ToolResult>();
    let mut tool_ctx = ToolContext {
        call_id: Arc::from(call.id.as_str()),
        progress: Arc::new(move |partial: ToolResult| {
            let _ = sender.send(partial);
        }),
        ..ctx.base.clone()
    };
    for extension in ctx.extensions {
        tool_ctx.bash.call_env.extend(extension.call_env(call));
    }
    let mut run = Box::pin(AssertUnwindSafe(tool.execute(arguments, tool_ctx)).catch_unwind());
    let stopped = async {
        ctx.control.aborted().await;
        tokio::time::sleep(stop_grace(tool.as_ref(), ctx.deadline)).await;
    };
    tokio::pin!(stopped);
    let ended = loop {
        tokio::select! {
            biased;
            ended = &mut run => break Some(ended),
            () = &mut stopped => break None,
            Some(partial) = received.recv() => updates.send(partial),
        }
    };
    // Dropping the call cancels what it was waiting on and kills what it started.
    drop(run);
    while let Ok(partial) = received.try_recv() {
        updates.send(partial);
    }
    updates.flush();
    let Some(run) = ended else {
        return (stopped_text(ctx.control.reason(), &call.name), true);
    };
    match run {
        Ok(Ok(result)) => (result, false),
        Ok(Err(err)) => (err.into_result(), true),
        Err(panic) => {
            let reason = panic_message(panic.as_ref());
            (
                error_text(&format!("Tool {} failed internally: {reason}", call.name)),
                true,
            )
        }
    }
}

/// How long an extension deciding on a call has to conclude once the run is stopped.
const ADMIT_STOP_GRACE: Duration = Duration::from_millis(200);

/// The result of a call skipped because steering is waiting (Pi's words).
const SKIPPED_FOR_STEERING: &str = "Skipped due to queued user message.";

/// Every extension's admission of `call`: the arguments it runs with, or why it does not run.
/// Arguments an extension replaced must still fit the tool's schema. A stop while an
/// extension decides refuses the call.
async fn admit(ctx: &ExecContext<'_>, call: &ToolCall, tool: &dyn Tool) -> Result<Value, String> {
    let original = call.arguments();
    let mut arguments = original.clone();
    for extension in ctx.extensions {
        let admission = extension.admit(call, arguments);
        tokio::pin!(admission);
        // An extension that watches the stop itself concludes at once (an approval it asked
        // for is resolved as aborted); one that does not is dropped after a moment.
        let stopped = async {
            ctx.control.aborted().await;
            tokio::time::sleep(ADMIT_STOP_GRACE).await;
        };
        let admitted = tokio::select! {
            biased;
            admitted = &mut admission => admitted,
            () = stopped => return Err("Operation aborted".to_string()),
        };
        arguments = match admitted {
            Admission::Run(arguments) => arguments,
            Admission::Refuse(reason) => return Err(reason),
        };
    }
    if arguments != original {
        let schema = crate::output::OutputSchema::new(tool.parameters()).map_err(|err| {
            format!(
                "Tool {} has a schema that cannot check replaced arguments: {err}",
                call.name
            )
        })?;
        schema.validate(&arguments).map_err(|problems| {
            format!(
                "A pre-tool hook replaced the arguments of this {} call with ones that do not match its schema: {problems}",
                call.name
            )
        })?;
    }
    Ok(arguments)
}

/// How long a call may go on once the run is stopped: its tool's own stop, cut to what is left
/// of the budget, and the margin to return; nothing for a tool with nothing to stop.
fn stop_grace(tool: &dyn Tool, deadline: Option<Instant>) -> Duration {
    let own = tool.stop_grace();
    if own.is_zero() {
        return Duration::ZERO;
    }
    let left = deadline.map_or(own, |end| end.saturating_duration_since(Instant::now()));
    own.min(left) + STOP_MARGIN
}

/// The result of a call that was dropped because the run stopped.
fn stopped_text(reason: Option<AbortReason>, tool: &str) -> ToolResult {
    match reason {
        Some(AbortReason::Timeout) => error_text(&format!(
            "Tool {tool} stopped: the run's --timeout ran out before it finished"
        )),
        _ => error_text("Operation aborted"),
    }
}

/// A tool call's progress updates, redacted as one stream.
struct Updates<'a> {
    emitter: &'a Emitter,
    secrets: &'a Secrets,
    call: &'a ToolCall,
    redactor: StreamRedactor,
}

impl Updates<'_> {
    fn send(&mut self, partial: ToolResult) {
        let text: String = partial.content.iter().map(TextContent::as_str).collect();
        let shown = self.redactor.push(self.secrets, &text);
        if !shown.is_empty() {
            self.emit(shown, partial.details);
        }
    }

    /// What was held back, once the call is over.
    fn flush(&mut self) {
        let rest = self.redactor.flush(self.secrets);
        if !rest.is_empty() {
            self.emit(rest, None);
        }
    }

    fn emit(&self, text: String, details: Option<serde_json::Value>) {
        let partial = ToolResult {
            content: vec![TextContent::text(text)],
            details,
        };
        self.emitter.emit(&Event::ToolExecutionUpdate {
            tool_call_id: self.call.id.as_str(),
            tool_name: &self.call.name,
            args: &self.call.arguments(),
            partial_result: &partial,
        });
    }
}

/// The text a panic was raised with.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(std::string::ToString::to_string)
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

fn error_text(text: &str) -> ToolResult {
    ToolResult {
        content: vec![TextContent::text(text)],
        details: None,
    }
}

#[cfg(test)]
mod tests;
