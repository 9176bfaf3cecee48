//! Live control through the real binary: `--control stdin` (steer, follow_up, abort, decide
//! and the answer to each line), approvals, pre- and post-tool hooks, the limits that end a
//! stuck run, `--edit-scope` and `--heartbeat`.
//!
//! A controlled run is a child whose stdin stays open: the test writes commands while it reads
//! the event stream line by line ([`Controlled`]). Where a command must arrive while a tool
//! runs, the tool waits for a file the test creates (a gate), so no test depends on how fast
//! the machine is; every wait is bounded, and a child still running is killed on drop.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{
    Run, result_text, results, run_dynamo, run_worker, running, spawn_watched, worker_command,
};

/// How long any single wait may take before the test fails instead of hanging.
const WAIT: Duration = Duration::from_secs(30);

/// A running `worker run --control stdin` (or any run whose stdin the test holds open).
struct Controlled {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every event read so far, in order.
    seen: Vec<Value>,
    /// Where the next [`Controlled::wait_for`] starts looking.
    cursor: usize,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Controlled {
    /// Starts `worker run --model dynamo/mock-model <args>` against `mock`, in `dir`.
    fn start(dir: &Path, mock: &MockLlm, args: &[&str]) -> Controlled {
        let mut cmd = worker_command(dir);
        cmd.args(["run", "--model", "dynamo/mock-model", "--no-session"])
            .args(args)
            .env("DYNAMO_BASE_URL", &mock.url);
        let watched = spawn_watched(cmd);
        Controlled {
            stdin: watched.stdin,
            child: watched.child,
            lines: watched.lines,
            seen: Vec::new(),
            cursor: 0,
            stderr: Some(watched.stderr),
        }
    }

    /// Writes `text` to the run's stdin as it is (a test adds the newlines).
    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one command line.
    fn send(&mut self, command: &Value) {
        self.write(&format!("{command}\n"));
    }

    /// Writes one command line; false when the run no longer reads (it has exited).
    fn try_send(&mut self, command: &Value) -> bool {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .is_ok()
    }

    /// EOF on the run's stdin: no more commands.
    fn close(&mut self) {
        self.stdin.take();
    }

    /// The stream so far, for failure messages.
    fn shown(&self) -> String {
        self.seen
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Reads one more line into `seen`; false when stdout closed.
    fn read_one(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                let mut event: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                // Every line carries these; the tests compare the rest whole.
                if let Some(fields) = event.as_object_mut() {
                    fields.remove("sessionId");
                    fields.remove("timestamp");
                }
                self.seen.push(event);
                true
            }
            Err(RecvTimeoutError::Disconnected) => false,
            Err(RecvTimeoutError::Timeout) => {
                panic!("nothing came within {WAIT:?}; so far:\n{}", self.shown())
            }
        }
    }

    /// The next event (after the last one waited for) that `matches`.
    fn wait_until(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(at) = (self.cursor..self.seen.len()).find(|&at| matches(&self.seen[at])) {
                self.cursor = at + 1;
                return self.seen[at].clone();
            }
            if !self.read_one(deadline) {
                let (code, stderr) = self.exit_and_stderr();
                panic!(
                    "the stream ended without {what} (exit {code}, stderr {stderr:?}):\n{}",
                    self.shown()
                );
            }
        }
    }

    /// Where the stream is now; [`Controlled::rewind`] looks from here again. For lines whose
    /// order is not promised (an ack, written by the thread that reads commands, and what the
    /// run does with the command).
    fn mark(&self) -> usize {
        self.seen.len()
    }

    /// Looks from `mark` again.
    fn rewind(&mut self, mark: usize) {
        self.cursor = mark;
    }

    /// The next event of type `kind`.
    fn wait_for(&mut self, kind: &str) -> Value {
        self.wait_until(kind, |event| event["type"] == kind)
    }

    /// The next `control_ack`.
    fn ack(&mut self) -> Value {
        self.wait_for("control_ack")
    }

    /// Waits (bounded) for the run to exit: its exit code and stderr.
    fn exit_and_stderr(&mut self) -> (i32, String) {
        self.close();
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the run did not exit; so far:\n{}",
                self.shown()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr.take().map(|reader| reader.join().unwrap());
        (status.code().unwrap_or(-1), stderr.unwrap_or_default())
    }

    /// Waits (bounded) for the run to exit; the whole stream and stderr.
    fn finish(mut self) -> Run {
        self.close();
        let deadline = Instant::now() + WAIT;
        while self.read_one(deadline) {}
        let (code, stderr) = self.exit_and_stderr();
        let stdout = self.shown();
        Run {
            code,
            stdout,
            stderr,
            events: std::mem::take(&mut self.seen),
        }
    }
}

impl Drop for Controlled {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first command line: the prompt.
fn prompt(message: &str) -> Value {
    json!({"type": "prompt", "message": message})
}

/// A bash command that creates `<name>.running`, waits (at most 20 s) for `name` to exist in
/// its directory, then prints `said`: a tool call that lasts exactly as long as the test wants.
fn gated(name: &str, said: &str) -> String {
    format!(
        ": > {name}.running; for i in $(seq 400); do [ -e {name} ] && break; sleep 0.05; done; echo {said}"
    )
}

/// Waits until the command made by [`gated`] runs.
fn wait_running(dir: &Path, name: &str) {
    let marker = dir.join(format!("{name}.running"));
    let deadline = Instant::now() + WAIT;
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the gated command never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Opens a gate made by [`gated`].
fn open(dir: &Path, name: &str) {
    std::fs::write(dir.join(name), "").unwrap();
}

/// A bash call's JSON arguments.
fn bash(command: &str) -> String {
    json!({"command": command}).to_string()
}

/// One assistant message calling bash twice.
fn two_bash_calls(first: &str, second: &str) -> Reply {
    Reply::Sse(vec![
        role(),
        tool_call(0, "c1", "bash", &bash(first)),
        tool_call(1, "c2", "bash", &bash(second)),
        finish("tool_calls"),
        usage(10, 5, 0),
        done(),
    ])
}

/// An answer that takes `delay` before its first byte.
fn slow_answer(delay: Duration, t: &str) -> Reply {
    Reply::Sse(vec![
        Frame::Delay(delay),
        role(),
        text(t),
        finish("stop"),
        usage(10, 5, 0),
        done(),
    ])
}

/// The messages of the `n`th model request.
fn messages(mock: &MockLlm, n: usize) -> Vec<Value> {
    mock.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

/// Whether any message of the `n`th request mentions `text`.
fn request_mentions(mock: &MockLlm, n: usize, text: &str) -> bool {
    messages(mock, n)
        .iter()
        .any(|message| message.to_string().contains(text))
}

/// The content of a chat message as text (a string, or the text of its parts).
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

/// The stream ended properly: `agent_end`, then `usage_snapshot` last; no panic.
fn assert_complete(run: &Run) {
    assert_eq!(run.last()["type"], "usage_snapshot", "{}", run.stdout);
    assert!(!run.all("agent_end").is_empty(), "{}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// The last line of stderr.
fn last_stderr_line(run: &Run) -> &str {
    run.stderr.trim_end().lines().last().unwrap_or_default()
}

/// A command that records its host pid in `pid` (`$$` would be the pid inside the command's
/// own PID namespace), then sleeps 30 s in that same process.
const SLEEPER: &str = "sh -c 'read -r p _ < /proc/self/stat; echo $p > pid; exec sleep 30'";

/// The pid [`SLEEPER`] wrote, once it has.
fn sleeper_pid(dir: &Path) -> i32 {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(pid) = std::fs::read_to_string(dir.join("pid"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone within a few seconds (and kills it if not, so nothing leaks).
fn gone_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = running(pid);
    if survived {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    !survived
}

mod abort;
mod approvals;
mod heartbeat;
mod hooks;
mod limits;
mod prompt;
mod steer;
