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

pub use process::Leftovers;

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

pub struct BashTool;

#[derive(Deserialize, JsonSchema)]
pub struct BashArgs {
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
    match ctx.bash.budget_end {
        Some(end) => wait.min(end.saturating_duration_since(std::time::Instant::now())),
        None => wait,
    }
}

async fn run(command: &str, timeout: Duration, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
    if !Path::new(ctx.cwd.as_path()).is_dir() {
        return Err(ToolError::new(format!(
            "Working directory does not exist: {}",
            ctx.cwd.display()
        )));
    }
    // A sandbox gives commands a private temp directory inside the run's own.
    let sandbox = match &ctx.bash.runner {
        Some(runner) => {
            let scratch = ctx
                .leftovers
                .spill_dir()
                .map(|dir| dir.join("tmp"))
                .and_then(|dir| std::fs::create_dir_all(&dir).map(|()| dir))
                .map_err(|err| {
                    ToolError::new(format!(
                        "Failed to prepare the sandbox's temp directory: {err}"
                    ))
                })?;
            Some((runner, scratch))
        }
        None => None,
    };
    let (spawned, told) = ctx.leftovers.with_watchdog(|watchdog| {
        let runner = sandbox
            .as_ref()
            .map(|(runner, scratch)| (*runner, scratch.as_path()));
        (
            process::spawn(command, &ctx.cwd, &ctx.bash.env, runner, watchdog),
            watchdog.is_some(),
        )
    });
    let spawned =
        spawned.map_err(|err| ToolError::new(format!("Failed to start command: {err}")))?;
    let process::Spawned {
        mut child,
        output: mut pipe,
        pgid,
    } = spawned;
    ctx.leftovers.add(pgid, told);

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
            _ = ctx.cancel.cancelled() => {
                process::terminate(&mut child, pgid, within_budget(KILL_GRACE, ctx)).await;
                ending = Some(Ending::Aborted);
            }
            _ = &mut deadline => {
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
    report(&mut output, ctx);
    ctx.leftovers.forget_if_gone(pgid);

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
        format!("{}", secs as u64)
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Harness;
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn runs_in_the_cwd_and_merges_streams_in_order() {
        let h = Harness::new();
        h.write("marker", "");
        let result = h
            .run(
                &BashTool,
                json!({"command": "ls; echo out; echo err >&2; echo out2"}),
            )
            .await
            .unwrap();
        assert_eq!(result.text(), "marker\nout\nerr\nout2");
        assert_eq!(result.details.unwrap()["exitCode"], 0);
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_with_the_code() {
        let h = Harness::new();
        let err = h
            .run(&BashTool, json!({"command": "echo no match; exit 1"}))
            .await
            .unwrap_err();
        assert_eq!(err.message, "no match\n\nCommand exited with code 1");
        assert_eq!(err.details.unwrap()["exitCode"], 1);
    }

    #[tokio::test]
    async fn a_missing_command_reports_127() {
        let h = Harness::new();
        let err = h
            .run(
                &BashTool,
                json!({"command": "definitely-not-a-command-xyz"}),
            )
            .await
            .unwrap_err();
        assert!(
            err.message
                .contains("definitely-not-a-command-xyz: command not found"),
            "{}",
            err.message
        );
        assert!(err.message.ends_with("\n\nCommand exited with code 127"));
    }

    #[tokio::test]
    async fn empty_output_says_so() {
        let h = Harness::new();
        assert_eq!(
            h.ok(&BashTool, json!({"command": "true"})).await,
            "(no output)"
        );
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group_promptly() {
        let h = Harness::new();
        let started = Instant::now();
        let err = h
            .run(
                &BashTool,
                json!({"command": "echo started; sleep 30 & sleep 30", "timeout": 0.3}),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            "started\n\nCommand timed out after 0.3 seconds"
        );
        let details = err.details.unwrap();
        assert_eq!(details["timedOut"], true);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_background_job_holding_the_pipe_cannot_hang_the_call() {
        let h = Harness::new();
        let started = Instant::now();
        let text = h
            .ok(&BashTool, json!({"command": "sleep 20 & echo done"}))
            .await;
        assert_eq!(text, "done");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        h.ctx.leftovers.clean_up();
    }

    #[tokio::test]
    async fn abort_stops_the_command() {
        let h = Harness::new();
        let cancel = h.ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let err = h
            .run(&BashTool, json!({"command": "sleep 30"}))
            .await
            .unwrap_err();
        assert_eq!(err.message, "(no output)\n\nCommand aborted");
    }

    #[tokio::test]
    async fn the_model_cannot_exceed_the_configured_maximum() {
        let mut h = Harness::new();
        h.ctx.bash.max_timeout = Duration::from_millis(200);
        let err = h
            .run(&BashTool, json!({"command": "sleep 5", "timeout": 1000}))
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            "(no output)\n\nCommand timed out after 0.2 seconds"
        );
    }

    #[tokio::test]
    async fn progress_arrives_as_deltas() {
        let h = Harness::new();
        h.ok(
            &BashTool,
            json!({"command": "echo one; sleep 0.3; echo two"}),
        )
        .await;
        let updates = h.updates.lock().unwrap();
        let joined: String = updates.iter().map(|u| u.text()).collect();
        assert_eq!(joined, "one\ntwo\n");
        assert!(updates.len() >= 2, "{}", updates.len());
    }

    #[tokio::test]
    async fn two_hundred_megabytes_of_output_stay_bounded() {
        let h = Harness::new();
        let result = h
            // 2,097,152 lines of 100 bytes; fold leaves the last one unterminated.
            .run(
                &BashTool,
                json!({"command": "head -c 209715200 /dev/zero | tr '\\0' 'a' | fold -w 100"}),
            )
            .await
            .unwrap();
        let text = result.text();
        let details = result.details.unwrap();
        let path = details["fullOutputPath"].as_str().unwrap().to_string();
        let omitted = details["fullOutputOmittedBytes"].as_u64().unwrap();
        assert!(text.starts_with(&format!("{}\n", "a".repeat(100))),);
        assert!(
            text.contains(&format!(
                "[Showing lines 2096647-2097152 of 2097152. Output saved to {path}: the first 16.0MB and the last "
            )),
            "{}",
            &text[text.len() - 250..]
        );
        // The file is bounded: 16 MiB of head, a note, and the tail the run still held.
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 16 * 1024 * 1024 + 300 * 1024, "{size}");
        assert_eq!(
            size + omitted,
            209_715_200
                + 2_097_151
                + format!("\n[... {omitted} bytes of output not kept ...]\n").len() as u64
        );
        std::fs::remove_file(path).unwrap();
    }
}
