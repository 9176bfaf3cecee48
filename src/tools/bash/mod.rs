//! `bash {command, timeout?}`: run a shell command in the cwd.
//!
//! Unlike Pi's bash, every call has a timeout (120 s unless the model asks for another, capped
//! by `--bash-timeout`), and `details.exitCode` is always set so a consumer can tell
//! `grep`'s "no match" (1) from a crash. On timeout or abort the whole process group gets
//! SIGTERM, then SIGKILL after 2 s; output is drained at most 2 s more, so a background job
//! holding the pipe cannot hang the run. Both waits are cut to what is left of the run's
//! `--timeout`, so stopping a command that ignores SIGTERM does not overrun the budget.

use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

mod output;
mod process;
mod standby;

pub use process::Leftovers;
pub(crate) use process::die_with_worker;

use super::args::Number;
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;
use output::Output;

/// How often partial output is reported, at most.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long to keep reading after the shell is gone.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

pub(super) struct BashTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct BashArgs {
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (default 120)
    timeout: Option<Number>,
}

impl TypedTool for BashTool {
    type Args = BashArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "bash",
            description: "Execute a bash command in the current working directory. stdout and stderr are \
                          merged. Output is truncated to the last 2000 lines or 50KB; when truncated, the full \
                          output is saved to a file whose path is given. Commands time out after 120 seconds \
                          unless `timeout` (seconds) says otherwise. A non-zero exit status is reported as an \
                          error, with the exit code.",
            snippet: Some("Execute bash commands (ls, git, cargo, tests, ...)"),
            read_only: false,
        }
    }

    async fn run(&self, args: BashArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let timeout = effective_timeout(args.timeout.map(|n| n.0), &ctx);
        run(&args.command, timeout, &ctx).await
    }

    /// SIGTERM, the kill grace, SIGKILL, then the drain of what the command wrote.
    fn stop_grace(&self) -> Duration {
        KILL_GRACE + DRAIN_LIMIT
    }
}

fn effective_timeout(requested: Option<f64>, ctx: &ToolContext) -> Duration {
    let max = ctx.bash.max_timeout;
    match requested {
        Some(secs) if secs > 0.0 => Duration::try_from_secs_f64(secs).unwrap_or(max).min(max),
        _ => ctx.bash.default_timeout.min(max),
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Aborted,
}

/// `wait`, or less when the run's budget ends sooner.
fn within_budget(wait: Duration, ctx: &ToolContext) -> Duration {
    match ctx.run.deadline() {
        Some(end) => wait.min(end.saturating_duration_since(std::time::Instant::now())),
        None => wait,
    }
}

async fn run(command: &str, timeout: Duration, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
    let process::Spawned {
        mut child,
        output: mut pipe,
        pgid,
        ..
    } = start(command, ctx)?;

    let mut output = Output::new(ctx.bash.secrets.clone(), ctx.leftovers.clone());
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(UPDATE_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut eof = false;
    let mut ending: Option<Ending> = None;

    // Read until the shell exits (or is stopped), then drain what is left, briefly.
    while ending.is_none() {
        tokio::select! {
            biased;
            () = ctx.cancel().cancelled() => {
                process::terminate(&mut child, pgid, within_budget(KILL_GRACE, ctx)).await;
                ending = Some(Ending::Aborted);
            }
            () = &mut deadline => {
                process::terminate(&mut child, pgid, KILL_GRACE).await;
                ending = Some(Ending::TimedOut);
            }
            read = pipe.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => output.push(&buf[..n]),
            },
            status = child.wait() => {
                ending = Some(match status {
                    Ok(status) => Ending::Exited(status),
                    Err(_) => Ending::Aborted,
                });
            }
            _ = ticker.tick() => report(&mut output, ctx),
        }
    }
    if !eof {
        // At least a moment to collect what a killed command already wrote.
        let limit = within_budget(DRAIN_LIMIT, ctx).max(Duration::from_millis(50));
        let drained = tokio::time::timeout(limit, async {
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => output.push(&buf[..n]),
                }
            }
        });
        let _ = drained.await;
    }
    output.end();
    report(&mut output, ctx);
    ctx.leftovers.forget_if_gone(pgid);

    conclude(output, ending, timeout)
}

/// Starts the command (in the sandbox's private temp directory when there is a sandbox),
/// registered with the run's leftovers so nothing it starts outlives the run.
fn start(command: &str, ctx: &ToolContext) -> Result<process::Spawned, ToolError> {
    if !Path::new(ctx.cwd.as_path()).is_dir() {
        return Err(ToolError::new(format!(
            "Working directory does not exist: {}",
            ctx.cwd.display()
        )));
    }
    let sandbox = sandbox_of(ctx).map_err(|err| {
        ToolError::new(format!(
            "Failed to prepare the sandbox's temp directory: {err}"
        ))
    })?;
    let env = ctx.bash.command_env();
    let spawned = ctx.leftovers.with_watchdog(|watchdog| {
        let runner = sandbox
            .as_ref()
            .map(|(runner, scratch)| (*runner, scratch.as_path()));
        process::spawn(
            command,
            &ctx.cwd,
            &env,
            runner,
            ctx.bash.contain.as_ref(),
            watchdog,
            ctx.leftovers.standbys(),
        )
    });
    let spawned =
        spawned.map_err(|err| ToolError::new(format!("Failed to start command: {err}")))?;
    ctx.leftovers.add(spawned.pgid, spawned.told);
    Ok(spawned)
}

/// The sandbox's runner and the private temp directory it gives what it starts, inside the
/// run's own; `None` without a sandbox.
fn sandbox_of(ctx: &ToolContext) -> std::io::Result<Option<(&super::Runner, std::path::PathBuf)>> {
    let Some(runner) = &ctx.bash.runner else {
        return Ok(None);
    };
    let scratch = ctx.leftovers.spill_dir()?.join("tmp");
    std::fs::create_dir_all(&scratch)?;
    Ok(Some((runner, scratch)))
}

/// A long-lived process the run talks to over stdin and stdout (an MCP server), started in
/// `cwd` as commands are (the run's sandbox, or contained) but with a scrubbed environment plus
/// `env`. The caller ends it (its group, [`Leftovers::forget_if_gone`] after); the watchdog
/// kills it if worker dies first. Returns the process and its process group.
pub(crate) fn start_service(
    command: &str,
    cwd: &Path,
    env: &[(String, Option<String>)],
    ctx: &ToolContext,
) -> std::io::Result<(tokio::process::Child, nix::unistd::Pid)> {
    let sandbox = sandbox_of(ctx)?;
    let (started, told) = ctx.leftovers.with_watchdog(|watchdog| {
        let runner = sandbox
            .as_ref()
            .map(|(runner, scratch)| (*runner, scratch.as_path()));
        (
            process::spawn_service(
                command,
                cwd,
                env,
                runner,
                ctx.bash.contain.as_ref(),
                watchdog,
            ),
            watchdog.is_some(),
        )
    });
    let (child, pgid) = started?;
    // Its owner stops it (a grace to exit, then SIGKILL); the watchdog if worker dies first.
    ctx.leftovers.watch(pgid, told);
    Ok((child, pgid))
}

/// The tool's result: the output, `exitCode` (and `timedOut`) in the details, and an error
/// line for anything but a clean exit.
fn conclude(
    output: Output,
    ending: Option<Ending>,
    timeout: Duration,
) -> Result<ToolResult, ToolError> {
    let (text, details) = output.finish();
    let mut details = match details {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let (exit_code, suffix) = match ending {
        Some(Ending::Exited(status)) => exit_summary(status),
        Some(Ending::TimedOut) => (
            None,
            Some(format!(
                "Command timed out after {} seconds",
                format_secs(timeout)
            )),
        ),
        Some(Ending::Aborted) | None => (None, Some("Command aborted".to_string())),
    };
    details.insert("exitCode".into(), json!(exit_code));
    if matches!(ending, Some(Ending::TimedOut)) {
        details.insert("timedOut".into(), json!(true));
    }
    let details = Value::Object(details);
    match suffix {
        None => Ok(text_result(text, Some(details))),
        Some(suffix) => Err(ToolError::new(format!("{text}\n\n{suffix}")).with_details(details)),
    }
}

/// The exit code (128 + signal when killed) and the error line for anything but success.
fn exit_summary(status: std::process::ExitStatus) -> (Option<i32>, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => (Some(0), None),
        (Some(code), _) => (Some(code), Some(format!("Command exited with code {code}"))),
        (None, Some(signal)) => (
            Some(128 + signal),
            Some(format!("Command terminated by signal {signal}")),
        ),
        (None, None) => (
            None,
            Some("Command ended without an exit status".to_string()),
        ),
    }
}

fn report(output: &mut Output, ctx: &ToolContext) {
    if let Some(text) = output.take_pending() {
        (ctx.progress)(text_result(
            text,
            Some(json!({"totalBytes": output.total_bytes()})),
        ));
    }
}

fn format_secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
mod tests;
