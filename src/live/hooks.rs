//! Pre- and post-tool hook programs (Claude Code's PreToolUse / PostToolUse contract).
//!
//! An operator names a shell command line; before a tool call it is run as `sh -c COMMAND`
//! with the call as one JSON object on stdin, and what it prints and how it exits decide the
//! call: the same contract Claude Code documents, so an existing guard script ports with only
//! the tool names changed. It is made fail-closed: a hook that crashes, hangs, cannot start,
//! or prints a JSON object the contract does not allow yields [`Verdict::Failed`], which the
//! caller turns into a denied call. A guard that is broken must not wave everything through.
//!
//! Each hook leads a process group of its own. When it times out, and when the future running
//! it is dropped because the run was aborted, the whole group gets SIGKILL, so a guard's
//! background helpers cannot outlive the call; the group is also killed as soon as the hook
//! itself exits, which releases its pipes and so lets the output be read to the end. Its stdin
//! is written while stdout and stderr are read, so neither a large input nor a chatty hook can
//! deadlock on a full pipe, and a hook that never reads its input is no failure.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};

/// How much of each of a hook's stdout and stderr is kept; the rest is read and discarded,
/// so the hook is never blocked on a full pipe.
const OUTPUT_CAP: usize = 64 * 1024;
/// How much of the command line a reason quotes.
const COMMAND_SHOWN: usize = 80;
/// How much of stderr the reason for a failed hook quotes: its last lines, within a budget.
const STDERR_TAIL_LINES: usize = 3;
const STDERR_TAIL_BYTES: usize = 1000;

/// What a PreToolUse hook reads on stdin, as one JSON object:
/// `{"session_id","cwd","hook_event_name":"PreToolUse","tool_name","tool_input","tool_use_id"}`.
#[derive(Debug, Clone, Copy)]
pub struct PreToolUse<'a> {
    /// The run's session.
    pub session_id: &'a str,
    /// The directory the run works in.
    pub cwd: &'a str,
    /// The tool about to be called.
    pub tool_name: &'a str,
    /// The call's arguments.
    pub tool_input: &'a Value,
    /// The call's id.
    pub tool_use_id: &'a str,
}

/// What a PostToolUse hook reads on stdin: the fields of [`PreToolUse`] with
/// `hook_event_name` "PostToolUse", plus `tool_response`.
#[derive(Debug, Clone, Copy)]
pub struct PostToolUse<'a> {
    /// The call, as its PreToolUse hooks saw it.
    pub call: PreToolUse<'a>,
    /// What the tool returned.
    pub tool_response: &'a Value,
}

/// The object on a hook's stdin, for both events: `hook_event_name` is not a field of the
/// public structs because each struct has exactly one.
#[derive(Serialize)]
struct HookInput<'a> {
    session_id: &'a str,
    cwd: &'a str,
    hook_event_name: &'static str,
    tool_name: &'a str,
    tool_input: &'a Value,
    tool_use_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_response: Option<&'a Value>,
}

impl<'a> HookInput<'a> {
    fn new(call: &PreToolUse<'a>, event: Event, tool_response: Option<&'a Value>) -> Self {
        HookInput {
            session_id: call.session_id,
            cwd: call.cwd,
            hook_event_name: event.name(),
            tool_name: call.tool_name,
            tool_input: call.tool_input,
            tool_use_id: call.tool_use_id,
            tool_response,
        }
    }
}

impl Serialize for PreToolUse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        HookInput::new(self, Event::Pre, None).serialize(serializer)
    }
}

impl Serialize for PostToolUse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        HookInput::new(&self.call, Event::Post, Some(self.tool_response)).serialize(serializer)
    }
}

/// What a pre-tool hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Exit 0 without a deny (permissionDecision "allow", or no decision, or stdout that is
    /// not a JSON object). `updated_input` replaces the call's arguments.
    Allow {
        /// The arguments the call runs with instead (always a JSON object).
        updated_input: Option<Value>,
    },
    /// permissionDecision "ask": the call needs an approval from a controller.
    Ask {
        /// Why the hook asks, for whoever approves.
        reason: Option<String>,
    },
    /// The hook denied: hookSpecificOutput.permissionDecision "deny" (reason =
    /// permissionDecisionReason), the older `{"decision":"block","reason":…}`, or exit code 2
    /// (reason = its stderr, trimmed).
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// The hook failed: any other exit code, killed by a signal, timed out, could not be
    /// started, or its stdout is a JSON object the contract does not allow (an unknown
    /// permissionDecision value, a non-object updatedInput, stdout starting with `{` that does
    /// not parse). Fail closed: the caller denies the call with this reason.
    Failed {
        /// What went wrong, naming the hook.
        reason: String,
    },
}

/// Why a hook program failed. Each message names the hook (`pre-tool hook `CMD``).
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    /// The program could not be started (or its process could not be waited for).
    #[error("{hook} could not be run: {source}")]
    Start {
        /// The hook, as reasons name it.
        hook: String,
        /// The error from the system.
        #[source]
        source: io::Error,
    },
    /// It exited with a status other than 0 (or 2, for a pre-tool hook: that is a denial).
    #[error("{hook} exited with status {code}{}{}", shell_signal(*.code), colon_before(.stderr))]
    Exited {
        /// The hook, as reasons name it.
        hook: String,
        /// Its exit status.
        code: i32,
        /// The last lines of its stderr, trimmed (maybe empty).
        stderr: String,
    },
    /// A signal ended it.
    #[error("{hook} was killed by signal {signal}{}", signal_name(*.signal))]
    Signaled {
        /// The hook, as reasons name it.
        hook: String,
        /// The signal's number.
        signal: i32,
    },
    /// It ran past its time and was killed.
    #[error("{hook} timed out after {}", humantime::format_duration(*.after))]
    TimedOut {
        /// The hook, as reasons name it.
        hook: String,
        /// The time it had.
        after: Duration,
    },
    /// A pre-tool hook exited 0 but printed a JSON object the contract does not allow.
    #[error("{hook} printed output the hook contract does not allow: {problem}")]
    Output {
        /// The hook, as reasons name it.
        hook: String,
        /// What is wrong with it.
        problem: String,
    },
}

fn colon_before(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// `sh` does not exec a command line's last command: a command it runs that is killed by a
/// signal shows as the shell exiting with 128 + the signal.
fn shell_signal(code: i32) -> String {
    match code.checked_sub(128).map(Signal::try_from) {
        Some(Ok(signal)) if code > 128 => format!(" (128 + {signal})"),
        _ => String::new(),
    }
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| String::new(), |name| format!(" ({name})"))
}

/// Which contract a run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Pre,
    Post,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Pre => "PreToolUse",
            Event::Post => "PostToolUse",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Event::Pre => "pre-tool hook",
            Event::Post => "post-tool hook",
        }
    }
}

/// One configured hook program: a shell command line run as `sh -c COMMAND`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookProgram {
    command: String,
}

/// How a hook run ended, when it ran to the end.
struct Finished {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl HookProgram {
    /// A hook that runs `command` with `sh -c`.
    pub fn new(command: String) -> HookProgram {
        HookProgram { command }
    }

    /// The command line, as configured.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Runs the hook before a tool call and says what becomes of the call. Never fails:
    /// whatever goes wrong is a [`Verdict::Failed`] for the caller to deny the call with.
    /// Dropping the future kills the hook and everything it started.
    pub async fn pre_tool(&self, input: &PreToolUse<'_>, cwd: &Path, timeout: Duration) -> Verdict {
        let hook = self.named(Event::Pre);
        let finished = match self.run(Event::Pre, input, cwd, timeout).await {
            Ok(finished) => finished,
            Err(failure) => {
                return Verdict::Failed {
                    reason: failure.to_string(),
                };
            }
        };
        match finished.status.code() {
            Some(0) => match decide(&finished.stdout, &hook) {
                Ok(verdict) => verdict,
                Err(problem) => Verdict::Failed {
                    reason: HookFailure::Output { hook, problem }.to_string(),
                },
            },
            Some(2) => {
                let stderr = String::from_utf8_lossy(&finished.stderr);
                let reason = stderr.trim();
                Verdict::Deny {
                    reason: if reason.is_empty() {
                        format!("denied by {hook} (exit 2)")
                    } else {
                        reason.to_string()
                    },
                }
            }
            _ => Verdict::Failed {
                reason: failure_of(hook, &finished).to_string(),
            },
        }
    }

    /// Runs the hook after a tool call. Audit only: the result cannot change anything.
    /// `Err` says why it failed (for a warning). Dropping the future kills the hook and
    /// everything it started.
    pub async fn post_tool(
        &self,
        input: &PostToolUse<'_>,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<(), HookFailure> {
        let finished = self.run(Event::Post, input, cwd, timeout).await?;
        if finished.status.success() {
            Ok(())
        } else {
            Err(failure_of(self.named(Event::Post), &finished))
        }
    }

    /// The hook as reasons name it: `pre-tool hook `guard.sh``, the command cut short.
    fn named(&self, event: Event) -> String {
        let command = crate::text::excerpt(&self.command, COMMAND_SHOWN).replace('\n', " ");
        format!("{} `{command}`", event.label())
    }

    /// Starts the hook, feeds it `input`, and collects its exit and output within `timeout`.
    async fn run(
        &self,
        event: Event,
        input: &impl Serialize,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Finished, HookFailure> {
        let start_failed = |source| HookFailure::Start {
            hook: self.named(event),
            source,
        };
        let input = serde_json::to_vec(input).map_err(|err| start_failed(err.into()))?;
        let mut command = std::process::Command::new(crate::tools::POSIX_SHELL);
        command
            .arg("-c")
            .arg(&self.command)
            .current_dir(cwd)
            // Claude Code scripts find the project through it.
            .env("CLAUDE_PROJECT_DIR", cwd)
            .env("WORKER_HOOK_EVENT", event.name())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // A hook runs with worker's environment.
        crate::tools::absolute_path_only(&mut command);
        crate::tools::die_with_worker(&mut command);
        let mut command = Command::from(command);
        command.kill_on_drop(true);
        let mut child = command.spawn().map_err(start_failed)?;
        let Some(pid) = child.id() else {
            return Err(start_failed(io::Error::other("the hook has no process id")));
        };
        // Armed before anything can be awaited: from here, dropping this future kills the group.
        let group = Group::new(Pid::from_raw(pid.cast_signed()));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let exchange = async {
            let ((), stdout, stderr, status) = tokio::join!(
                feed(stdin, &input),
                read_capped(stdout),
                read_capped(stderr),
                async {
                    let status = child.wait().await;
                    // What the hook left running would hold the pipes open.
                    group.kill();
                    status
                },
            );
            (status, stdout, stderr)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok((Ok(status), stdout, stderr)) => Ok(Finished {
                status,
                stdout,
                stderr,
            }),
            Ok((Err(source), _, _)) => Err(start_failed(source)),
            Err(_) => {
                group.kill();
                let _ = child.wait().await;
                Err(HookFailure::TimedOut {
                    hook: self.named(event),
                    after: timeout,
                })
            }
        }
    }
}

/// The failure of a hook that ran to the end without success.
fn failure_of(hook: String, finished: &Finished) -> HookFailure {
    match (finished.status.code(), finished.status.signal()) {
        (Some(code), _) => HookFailure::Exited {
            hook,
            code,
            stderr: stderr_tail(&finished.stderr),
        },
        (None, Some(signal)) => HookFailure::Signaled { hook, signal },
        (None, None) => HookFailure::Start {
            hook,
            source: io::Error::other("the hook ended without an exit status"),
        },
    }
}

/// The last lines of stderr, trimmed, within [`STDERR_TAIL_BYTES`]: where a failing script
/// says what went wrong.
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let from = text
        .rmatch_indices('\n')
        .nth(STDERR_TAIL_LINES - 1)
        .map_or(0, |(at, _)| at + 1);
    let from = from.max(crate::text::ceil_char_boundary(
        text,
        text.len().saturating_sub(STDERR_TAIL_BYTES),
    ));
    let tail = text[from..].trim();
    if from > 0 {
        format!("…{tail}")
    } else {
        tail.to_string()
    }
}

/// The verdict of a hook that exited 0, from its stdout; `Err` says why the output breaks the
/// contract.
fn decide(stdout: &[u8], hook: &str) -> Result<Verdict, String> {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if !text.starts_with('{') {
        return Ok(Verdict::Allow {
            updated_input: None,
        });
    }
    let output: Map<String, Value> =
        serde_json::from_str(text).map_err(|err| format!("stdout is not a JSON object: {err}"))?;
    let mut decision = Decision::None;
    let mut reason = None;
    let mut updated_input = None;
    match output.get("hookSpecificOutput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(specific)) => {
            decision = match specific.get("permissionDecision") {
                None | Some(Value::Null) => Decision::None,
                Some(Value::String(value)) => match value.as_str() {
                    "allow" => Decision::Allow,
                    "ask" => Decision::Ask,
                    "deny" => Decision::Deny,
                    other => {
                        return Err(format!(
                            "unknown permissionDecision {other:?} (allow, deny or ask)"
                        ));
                    }
                },
                Some(other) => return Err(format!("permissionDecision is not a string: {other}")),
            };
            reason = text_field(specific, "permissionDecisionReason")?;
            updated_input = match specific.get("updatedInput") {
                None | Some(Value::Null) => None,
                Some(input @ Value::Object(_)) => Some(input.clone()),
                Some(_) => return Err("updatedInput is not a JSON object".to_string()),
            };
        }
        Some(_) => return Err("hookSpecificOutput is not a JSON object".to_string()),
    }
    // The older top-level form; when both are given, the stricter decision holds.
    let legacy = match output.get("decision") {
        None | Some(Value::Null) => Decision::None,
        Some(Value::String(value)) if value == "approve" => Decision::Allow,
        Some(Value::String(value)) if value == "block" => Decision::Deny,
        Some(other) => return Err(format!("unknown decision {other} (approve or block)")),
    };
    if legacy > decision {
        decision = legacy;
        reason = text_field(&output, "reason")?;
    }
    let denied = || format!("denied by {hook}");
    Ok(match decision {
        Decision::None | Decision::Allow => Verdict::Allow { updated_input },
        // The approver would see, and approve, arguments other than those the hook wants run.
        Decision::Ask if updated_input.is_some() => {
            return Err("updatedInput together with permissionDecision \"ask\"".to_string());
        }
        Decision::Ask => Verdict::Ask { reason },
        Decision::Deny => Verdict::Deny {
            reason: reason
                .filter(|text| !text.trim().is_empty())
                .unwrap_or_else(denied),
        },
    })
}

/// A decision, ordered from the most permissive to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Decision {
    None,
    Allow,
    Ask,
    Deny,
}

/// An optional string field; any other type breaks the contract.
fn text_field(object: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("{key} is not a string")),
    }
}

/// Writes the input and closes stdin. A hook that exits without reading it is no failure: the
/// broken pipe is ignored (the worker ignores SIGPIPE, so it is an error, not a signal).
async fn feed(stdin: Option<ChildStdin>, input: &[u8]) {
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(input).await;
    }
}

/// Reads `pipe` to its end, keeping the first [`OUTPUT_CAP`] bytes.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buffer = vec![0; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
    kept
}

/// A hook's process group, killed with SIGKILL when dropped unless already killed: the hook
/// and everything it started go with the call that ran it.
struct Group {
    pgid: Pid,
    // Killed once only: after that the id may belong to another group.
    live: AtomicBool,
}

impl Group {
    fn new(pgid: Pid) -> Group {
        Group {
            pgid,
            live: AtomicBool::new(true),
        }
    }

    fn kill(&self) {
        if self.live.swap(false, Ordering::Relaxed) {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests;
