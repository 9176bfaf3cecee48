//! Live control through the real binary: `--control stdin` (steer, follow_up, abort, decide
//! and the answer to each line), approvals, pre- and post-tool hooks, the limits that end a
//! stuck run, `--edit-scope` and `--heartbeat`.
//!
//! A controlled run is a child whose stdin stays open: the test writes commands while it reads
//! the event stream line by line ([`Controlled`]). Where a command must arrive while a tool
//! runs, the tool waits for a file the test creates (a gate), so no test depends on how fast
//! the machine is; every wait is bounded, and a child still running is killed on drop.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, result_text, results, run_dynamo, run_worker, worker_command};

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
            .env("DYNAMO_BASE_URL", &mock.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn worker");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        Controlled {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            cursor: 0,
            stderr: Some(stderr),
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

/// Alive and not a zombie.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
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

// ---- the prompt and the lines ---------------------------------------------------------------

#[test]
fn without_commands_the_stream_is_a_plain_runs() {
    // The same script twice: once with the prompt on stdin, once as the first command line.
    let script = || {
        MockLlm::start(vec![
            call("c1", "bash", &bash("echo hi")),
            answer("all done"),
        ])
    };
    let dir = tempfile::tempdir().unwrap();
    let mock = script();
    let plain = run_dynamo(dir.path(), &mock.url, &["--no-session"], "say hi");
    plain.assert_code(0);
    let mock = script();
    let line = format!("{}\n", prompt("say hi"));
    let controlled = run_dynamo(
        dir.path(),
        &mock.url,
        &["--no-session", "--control", "stdin"],
        &line,
    );
    controlled.assert_code(0);
    // The prompt line is the run's input, not a command: it gets no answer, and nothing else
    // is added to the stream.
    assert_eq!(controlled.outline(), plain.outline());
    assert!(controlled.all("control_ack").is_empty());
    assert_eq!(content_text(messages(&mock, 0).last().unwrap()), "say hi");
}

#[test]
fn stdin_closed_right_after_the_prompt_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("sleep 0.3; echo slept")),
        answer("finished"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("go"));
    // EOF means "no more commands", never "stop".
    run.close();
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
    assert_eq!(results(&run), vec![("slept".to_string(), false)]);
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn with_the_prompt_as_the_argument_every_line_is_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("first"),
        answer("second"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin", "the task"]);
    run.wait_for("tool_execution_start");
    run.send(&json!({"type": "follow_up", "message": "and then this", "id": "f1"}));
    let ack = run.ack();
    assert_eq!(
        ack,
        json!({"type": "control_ack", "command": "follow_up", "id": "f1", "ok": true})
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(content_text(&messages(&mock, 0)[1]), "the task");
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_first_line_that_is_not_a_prompt_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"type\":\"steer\",\"message\":\"x\"}\n",
            "worker: --control stdin: the first command must be {\"type\":\"prompt\",\"message\":…}, not \"steer\"",
        ),
        (
            "",
            "worker: --control stdin: stdin ended before the first command, {\"type\":\"prompt\",\"message\":…}",
        ),
        (
            "\n\n",
            "worker: --control stdin: stdin ended before the first command, {\"type\":\"prompt\",\"message\":…}",
        ),
        (
            "say hi\n",
            "worker: --control stdin: the first command: not JSON: expected value at line 1 column 1",
        ),
        (
            "{\"type\":\"prompt\",\"message\":\" \"}\n",
            "worker: --control stdin: the first command: prompt needs a non-empty \"message\"",
        ),
    ];
    for (stdin, line) in cases {
        // No server: a usage error must not reach the model.
        let run = run_worker(
            dir.path(),
            &["--model", "dynamo/m", "--control", "stdin"],
            stdin,
            &[("DYNAMO_BASE_URL", "http://127.0.0.1:9/v1")],
        );
        assert_eq!(run.code, 2, "{stdin:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{stdin:?}");
        assert_eq!(run.stderr.lines().next(), Some(line), "{stdin:?}");
    }
}

#[test]
fn every_line_gets_an_answer_and_garbage_does_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("done"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    // A blank line is no command and gets no answer; each other line gets one, in order.
    run.write(concat!(
        "not json\n",
        "[1]\n",
        "\n",
        "{\"type\":\"dance\",\"id\":\"g1\"}\n",
        "{\"type\":\"steer\",\"id\":7}\n",
        "{\"type\":\"steer\",\"id\":\"s7\"}\n",
        "{\"type\":\"steer\",\"message\":\"  \"}\n",
        "{\"type\":\"prompt\",\"message\":\"again\",\"id\":\"p2\"}\n",
        "{\"type\":\"decide\",\"id\":\"approval-9\",\"allow\":true}\n",
        "{\"id\":\"n1\"}\n",
    ));
    let acks: Vec<Value> = (0..9).map(|_| run.ack()).collect();
    assert!(acks.iter().all(|ack| ack["ok"] == false), "{acks:?}");
    let error = |n: usize| acks[n]["error"].as_str().unwrap().to_string();
    assert!(error(0).starts_with("not JSON: "), "{}", error(0));
    assert_eq!(acks[0].get("command"), None);
    assert_eq!(error(1), "a command is a JSON object with a \"type\"");
    assert_eq!(
        (&acks[2]["command"], &acks[2]["id"]),
        (&json!("dance"), &json!("g1"))
    );
    assert_eq!(
        error(2),
        "unknown command \"dance\": the commands are prompt, steer, follow_up, abort, decide"
    );
    // An id is text; a numeric one is refused, and still echoed (as text) in the answer.
    assert_eq!(
        (&acks[3]["command"], &acks[3]["id"]),
        (&json!("steer"), &json!("7"))
    );
    assert_eq!(
        error(3),
        "invalid steer: invalid type: integer `7`, expected a string"
    );
    assert_eq!(acks[4]["id"], "s7");
    assert_eq!(error(4), "invalid steer: missing field `message`");
    assert_eq!(error(5), "steer needs a non-empty \"message\"");
    assert_eq!(acks[6]["id"], "p2");
    assert_eq!(
        error(6),
        "the run already has its prompt: send steer or follow_up"
    );
    assert_eq!(error(7), "no approval \"approval-9\" was requested");
    assert_eq!(acks[8]["id"], "n1");
    assert_eq!(
        error(8),
        "a command needs a string \"type\": one of prompt, steer, follow_up, abort, decide"
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    assert_eq!(run.all("control_ack").len(), 9);
    assert_eq!(results(&run), vec![("opened".to_string(), false)]);
    // None of it reached the model.
    assert!(!request_mentions(&mock, 1, "again"));
    assert_eq!(mock.requests().len(), 2);
}

// ---- steer and follow_up --------------------------------------------------------------------

#[test]
fn a_steer_during_a_bash_call_skips_the_calls_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        two_bash_calls(&gated("go", "first done"), "echo second > second.txt"),
        answer("changed course"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    let start = run.wait_for("tool_execution_start");
    assert_eq!(start["toolCallId"], "c1");
    // The command itself runs (its start line alone is written a moment before).
    wait_running(dir.path(), "go");
    run.send(&json!({"type": "steer", "message": "Stop: use the other approach", "id": "s1"}));
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "steer", "id": "s1", "ok": true})
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    // The running call finished; the one not yet started was skipped with Pi's words.
    assert_eq!(
        results(&run),
        vec![
            ("first done".to_string(), false),
            ("Skipped due to queued user message.".to_string(), true),
        ]
    );
    assert!(!dir.path().join("second.txt").exists());
    // The next request ends with the two results and then the steer, as a user message.
    assert_eq!(mock.requests().len(), 2);
    assert!(!request_mentions(&mock, 0, "other approach"));
    let sent = messages(&mock, 1);
    let last = sent.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(content_text(last), "Stop: use the other approach");
    let before: Vec<&Value> = sent[sent.len() - 3..sent.len() - 1].iter().collect();
    assert_eq!(before[0]["role"], "tool");
    assert_eq!(before[1]["role"], "tool");
    assert_eq!(before[1]["tool_call_id"], "c2");
    assert_eq!(
        content_text(before[1]),
        "Skipped due to queued user message."
    );
}

#[test]

fn a_call_announced_as_started_is_never_skipped_by_a_steer() {
    // A steer sent the moment `tool_execution_start` of the first call is read: that call has
    // started as far as the controller can tell, so only the second may be skipped. Repeated,
    // because the window is narrow.
    for round in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![
            two_bash_calls("echo first done", "echo second"),
            answer("changed course"),
            // When the steer lands after the answer, the run goes on once more.
            answer("read the steer"),
        ]);
        let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
        run.send(&prompt("task"));
        run.wait_for("tool_execution_start");
        // The run may be over by now; then the write fails and nothing is left to check.
        let _ = run.try_send(&json!({"type": "steer", "message": "Stop"}));
        let run = run.finish();
        run.assert_code(0);
        let ends = results(&run);
        assert_eq!(
            ends[0],
            ("first done".to_string(), false),
            "round {round}: {ends:?}"
        );
    }
}

#[test]
fn a_steer_never_joins_the_first_request_and_keeps_an_ending_run_going() {
    let dir = tempfile::tempdir().unwrap();
    // The first answer has no tool calls: without the steer the run would end with it.
    let mock = MockLlm::start(vec![
        slow_answer(Duration::from_secs(2), "I think I am done"),
        answer("done, the other way"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    // The steer comes with the prompt, before the first request is made.
    run.write(&format!(
        "{}\n{}\n",
        prompt("task"),
        json!({"type": "steer", "message": "Also check the docs"})
    ));
    assert_eq!(run.ack()["ok"], true);
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(mock.requests().len(), 2);
    // The first request carries the prompt alone.
    let first = messages(&mock, 0);
    assert_eq!(content_text(first.last().unwrap()), "task");
    assert!(!request_mentions(&mock, 0, "Also check the docs"));
    let second = messages(&mock, 1);
    let last = second.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), content_text(last).as_str()),
        (Some("user"), "Also check the docs")
    );
    assert_eq!(second[second.len() - 2]["role"], "assistant");
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
}

#[test]
fn a_follow_up_is_the_next_user_message_when_the_model_would_end() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("first answer"),
        answer("second answer"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    run.send(&json!({"type": "follow_up", "message": "Now write the changelog", "id": "f1"}));
    assert_eq!(run.ack()["ok"], true);
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    // A follow-up does not skip anything: the call ran.
    assert_eq!(results(&run), vec![("opened".to_string(), false)]);
    assert_eq!(mock.requests().len(), 3);
    // Not delivered early: the request after the tool result does not carry it.
    assert!(!request_mentions(&mock, 1, "changelog"));
    let third = messages(&mock, 2);
    let last = third.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(content_text(last), "Now write the changelog");
    assert_eq!(content_text(&third[third.len() - 2]), "first answer");
    assert_eq!(run.all("turn_start").len(), 3);
}

// ---- abort ----------------------------------------------------------------------------------

#[test]
fn an_abort_during_a_model_stream_stops_the_run_with_exit_5_and_the_cost_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "bash", &bash("echo one")),
            finish("tool_calls"),
            usage(1000, 100, 0),
            done(),
        ]),
        // The second request never finishes.
        Reply::Sse(vec![role(), text("thinking about it"), Frame::Stall]),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--price", "input=1,output=2"],
    );
    run.send(&prompt("task"));
    run.wait_until("the stalled stream", |event| {
        event["type"] == "message_update" && event.to_string().contains("thinking about it")
    });
    let asked = Instant::now();
    run.send(&json!({"type": "abort", "reason": "operator said stop", "id": "a1"}));
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "abort", "id": "a1", "ok": true})
    );
    assert_eq!(
        run.wait_for("control_abort"),
        json!({"type": "control_abort", "reason": "operator said stop"})
    );
    let run = run.finish();
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    run.assert_code(5);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command: operator said stop"
    );
    // The ack, then control_abort, then the terminal lines.
    let outline = run.outline();
    let at = |kind: &str| outline.iter().position(|t| t == kind).unwrap();
    assert!(at("control_ack") < at("control_abort"));
    assert!(at("control_abort") < at("agent_end"));
    // What the first answer cost is in the snapshot: 1000 in at $1/M, 100 out at $2/M.
    let stats = run.stats();
    assert_eq!(stats["tokens"]["input"], 1000, "{stats}");
    assert_eq!(stats["tokens"]["output"], 100, "{stats}");
    let cost = stats["cost"].as_f64().unwrap();
    assert!((cost - 0.0012).abs() < 1e-9, "{stats}");
    assert_eq!(stats["llmRequests"], 2, "{stats}");
}

#[test]
fn an_abort_during_a_bash_call_kills_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(SLEEPER))]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    let pid = sleeper_pid(dir.path());
    assert!(running(pid));
    run.send(&json!({"type": "abort", "reason": "enough"}));
    // An ack without an id has no id.
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "abort", "ok": true})
    );
    let run = run.finish();
    run.assert_code(5);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command: enough"
    );
    let ends = results(&run);
    assert_eq!(ends.len(), 1);
    assert!(ends[0].1, "the stopped call is an error: {ends:?}");
    assert!(gone_soon(pid), "process {pid} outlived the abort");
    // Nothing was asked of the model after the abort.
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn an_abort_without_a_reason_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![Reply::Sse(vec![role(), text("hm"), Frame::Stall])]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("message_update");
    run.send(&json!({"type": "abort"}));
    assert_eq!(
        run.wait_for("control_abort"),
        json!({"type": "control_abort"})
    );
    let run = run.finish();
    run.assert_code(5);
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command"
    );
}

#[test]
fn a_second_abort_ends_the_process_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // The command ignores SIGTERM, so the first abort waits out the kill grace.
    let command = format!("trap '' TERM; {SLEEPER}");
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(&command))]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    let pid = sleeper_pid(dir.path());
    run.send(&json!({"type": "abort", "reason": "first"}));
    run.wait_for("control_abort");
    run.send(&json!({"type": "abort", "reason": "second", "id": "a2"}));
    let second = run.ack();
    assert_eq!(second["id"], "a2");
    let run = run.finish();
    run.assert_code(5);
    // It did not wind down: no terminal lines were written.
    assert!(run.all("agent_end").is_empty(), "{}", run.stdout);
    assert!(run.all("control_abort").len() == 1, "{}", run.stdout);
    assert!(gone_soon(pid), "process {pid} outlived the worker");
}

#[test]
fn commands_after_an_abort_are_refused_as_stopping() {
    let dir = tempfile::tempdir().unwrap();
    // The command ignores SIGTERM: the run winds down for the kill grace, so the lines after
    // the abort are read while it stops, not after it ended (then they go unanswered).
    let command = format!("trap '' TERM; {SLEEPER}");
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(&command))]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    let pid = sleeper_pid(dir.path());
    // In one write: the later lines are answered while the run winds down.
    run.write(&format!(
        "{}\n{}\n{}\n",
        json!({"type": "abort", "reason": "stop", "id": "a1"}),
        json!({"type": "steer", "message": "wait", "id": "s1"}),
        json!({"type": "follow_up", "message": "later", "id": "f1"}),
    ));
    assert_eq!(run.ack()["ok"], true);
    for id in ["s1", "f1"] {
        let ack = run.ack();
        assert_eq!(ack["id"], id);
        assert_eq!(ack["ok"], false);
        assert_eq!(ack["error"], "the run is stopping");
    }
    let run = run.finish();
    run.assert_code(5);
    assert_complete(&run);
    assert!(gone_soon(pid));
    assert_eq!(mock.requests().len(), 1);
}

// ---- approvals ------------------------------------------------------------------------------

#[test]
fn an_allowed_call_runs_and_a_decision_is_taken_once() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("echo approved-ran")),
        // Slow, so the stream is still open for the late decisions below.
        slow_answer(Duration::from_secs(3), "done"),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--approve-tools", "bash"],
    );
    run.send(&prompt("task"));
    let requested = run.wait_for("approval_requested");
    assert_eq!(
        requested,
        json!({
            "type": "approval_requested",
            "id": "approval-1",
            "toolCallId": "c1",
            "toolName": "bash",
            "input": {"command": "echo approved-ran"},
            "timeoutMs": 60000,
        })
    );
    // Nothing ran while the call waited.
    assert!(run.seen.iter().all(|e| e["type"] != "tool_execution_end"));
    let decided = run.mark();
    run.send(&json!({"type": "decide", "id": "approval-1", "allow": true, "reason": "looks safe"}));
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "decide", "id": "approval-1", "ok": true})
    );
    assert_eq!(
        {
            run.rewind(decided);
            run.wait_for("approval_resolved")
        },
        json!({
            "type": "approval_resolved",
            "id": "approval-1",
            "toolCallId": "c1",
            "allow": true,
            "reason": "looks safe",
            "by": "control",
        })
    );
    let end = run.wait_for("tool_execution_end");
    assert_eq!(result_text(&end), "approved-ran");
    assert_eq!(end["isError"], false);
    run.send(&json!({"type": "decide", "id": "approval-1", "allow": false}));
    let twice = run.ack();
    assert_eq!(twice["ok"], false);
    assert_eq!(
        twice["error"],
        "approval \"approval-1\" was already resolved"
    );
    run.send(&json!({"type": "decide", "id": "x", "allow": true}));
    let unknown = run.ack();
    assert_eq!(
        (&unknown["ok"], &unknown["id"]),
        (&json!(false), &json!("x"))
    );
    assert_eq!(unknown["error"], "no approval \"x\" was requested");
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(run.all("approval_resolved").len(), 1);
}

#[test]
fn a_denied_call_does_not_run_and_the_model_reads_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        // Only bash is listed: the ls call runs without asking.
        call("c0", "ls", "{}"),
        call("c1", "bash", &bash("touch made.txt")),
        // Slow, so the decision's answer is written before the run ends.
        slow_answer(Duration::from_secs(2), "ok"),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--approve-tools", "bash"],
    );
    run.send(&prompt("task"));
    let requested = run.wait_for("approval_requested");
    assert_eq!(requested["toolCallId"], "c1");
    let decided = run.mark();
    run.send(
        &json!({"type": "decide", "id": "approval-1", "allow": false, "reason": "no files today"}),
    );
    assert_eq!(run.ack()["ok"], true);
    run.rewind(decided);
    let resolved = run.wait_for("approval_resolved");
    assert_eq!(
        (&resolved["allow"], &resolved["by"]),
        (&json!(false), &json!("control"))
    );
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(run.all("approval_requested").len(), 1);
    let denial = "The bash call was denied: no files today";
    assert_eq!(results(&run)[1], (denial.to_string(), true));
    assert!(!dir.path().join("made.txt").exists());
    assert_eq!(content_text(messages(&mock, 2).last().unwrap()), denial);
}

#[test]

fn a_decide_that_lets_the_run_end_is_still_answered() {
    // Repeated: the answer goes missing only now and then (more often on a loaded machine).
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![call("c1", "bash", &bash("echo ran")), answer("ok")]);
        let mut run = Controlled::start(
            dir.path(),
            &mock,
            &["--control", "stdin", "--approve-tools", "bash"],
        );
        run.send(&prompt("task"));
        run.wait_for("approval_requested");
        // A denial: nothing runs, so the run ends as soon as it can.
        run.send(&json!({"type": "decide", "id": "approval-1", "allow": false}));
        let run = run.finish();
        run.assert_code(0);
        assert_eq!(
            run.all("control_ack").len(),
            1,
            "round {round}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn an_undecided_call_is_denied_when_the_approval_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("touch made.txt")),
        slow_answer(Duration::from_secs(3), "ok"),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &[
            "--control",
            "stdin",
            "--approve-tools",
            "b*",
            "--approval-timeout",
            "300ms",
        ],
    );
    run.send(&prompt("task"));
    assert_eq!(run.wait_for("approval_requested")["timeoutMs"], 300);
    assert_eq!(
        run.wait_for("approval_resolved"),
        json!({
            "type": "approval_resolved",
            "id": "approval-1",
            "toolCallId": "c1",
            "allow": false,
            "reason": "no decision came within 300ms",
            "by": "timeout",
        })
    );
    let end = run.wait_for("tool_execution_end");
    assert_eq!(
        result_text(&end),
        "The bash call was denied: no decision came within 300ms"
    );
    assert_eq!(end["isError"], true);
    // A decision that comes too late is told so.
    run.send(&json!({"type": "decide", "id": "approval-1", "allow": true}));
    assert_eq!(
        run.ack()["error"],
        "approval \"approval-1\" was already resolved"
    );
    let run = run.finish();
    run.assert_code(0);
    assert!(!dir.path().join("made.txt").exists());
}

#[test]
fn an_abort_while_a_call_waits_for_approval_stops_the_run_without_running_it() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![call("c1", "bash", &bash("touch made.txt"))]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--approve-tools", "bash"],
    );
    run.send(&prompt("task"));
    run.wait_for("approval_requested");
    run.send(&json!({"type": "abort", "reason": "no"}));
    let run = run.finish();
    run.assert_code(5);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    let ends = results(&run);
    assert_eq!(ends.len(), 1);
    assert!(ends[0].1, "{ends:?}");
    assert!(!dir.path().join("made.txt").exists());
}

#[test]

fn every_approval_requested_gets_an_approval_resolved_also_on_abort() {
    // Repeated: the line goes missing only now and then.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![call("c1", "bash", &bash("touch made.txt"))]);
        let mut run = Controlled::start(
            dir.path(),
            &mock,
            &["--control", "stdin", "--approve-tools", "bash"],
        );
        run.send(&prompt("task"));
        run.wait_for("approval_requested");
        run.send(&json!({"type": "abort", "reason": "no"}));
        let run = run.finish();
        run.assert_code(5);
        let resolved = run.all("approval_resolved");
        assert_eq!(resolved.len(), 1, "round {round}:\n{}", run.stdout);
        assert_eq!(resolved[0]["id"], "approval-1");
        assert_eq!(
            (&resolved[0]["allow"], &resolved[0]["by"]),
            (&json!(false), &json!("abort"))
        );
        assert_eq!(resolved[0]["reason"], "the run was stopped");
        assert_eq!(
            results(&run),
            vec![(
                "The bash call was denied: the run was stopped".to_string(),
                true
            )],
            "round {round}"
        );
    }
}

#[test]
fn approvals_without_anyone_to_decide_are_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--approve-tools", "bash,github_*"],
        "task",
        &[("DYNAMO_BASE_URL", "http://127.0.0.1:9/v1")],
    );
    run.assert_code(2);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr.lines().next(),
        Some(
            "worker: --approve-tools needs someone to decide: add --control stdin (decide commands) or a --pre-tool-hook"
        )
    );
}

// ---- hooks ----------------------------------------------------------------------------------

/// A one-call run with `hook_args`; the run, and the mock for its requests.
fn hooked(dir: &Path, command: &str, hook_args: &[&str]) -> (Run, MockLlm) {
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(command)), answer("ok")]);
    let mut args = vec!["--no-session"];
    args.extend_from_slice(hook_args);
    let run = run_dynamo(dir, &mock.url, &args, "task");
    (run, mock)
}

/// A hook that writes `output` (a JSON value) on stdout.
fn printing(output: &Value) -> String {
    let text = output.to_string().replace('\'', "'\\''");
    format!("cat > /dev/null; printf '%s' '{text}'")
}

#[test]
fn an_allowing_hook_sees_the_call_and_lets_it_run() {
    let dir = tempfile::tempdir().unwrap();
    let hook = "cat > hook-input.json";
    let (run, _mock) = hooked(dir.path(), "echo ran", &["--pre-tool-hook", hook]);
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["toolCallId"], "c1");
    assert_eq!(result["toolName"], "bash");
    assert_eq!(result["hook"], hook);
    assert_eq!(result["decision"], "allow");
    assert!(result["durationMs"].is_u64(), "{result}");
    assert_eq!(result.get("reason"), None);
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
    // Claude Code's PreToolUse input.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("hook-input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"], json!({"command": "echo ran"}));
    assert_eq!(input["tool_use_id"], "c1");
    assert!(input["session_id"].is_string());
    let cwd = PathBuf::from(input["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
    // The hook ran before the call.
    let outline = run.outline();
    let at = |kind: &str| outline.iter().position(|t| t == kind).unwrap();
    assert!(at("tool_execution_start") < at("hook_result"));
    assert!(at("hook_result") < at("tool_execution_end"));
}

#[test]
fn a_denying_hook_refuses_the_call_with_its_reason_for_the_model() {
    let deny = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "no deleting here",
    }});
    let legacy = json!({"decision": "block", "reason": "blocked the old way"});
    let cases = [
        (printing(&deny), "no deleting here"),
        (printing(&legacy), "blocked the old way"),
        (
            "cat > /dev/null; echo 'exit two says no' >&2; exit 2".to_string(),
            "exit two says no",
        ),
    ];
    for (hook, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (run, mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", &hook]);
        run.assert_code(0);
        let result = run.first("hook_result");
        assert_eq!(result["decision"], "deny", "{hook}");
        assert_eq!(result["reason"], reason, "{hook}");
        assert_eq!(results(&run), vec![(reason.to_string(), true)], "{hook}");
        assert!(!dir.path().join("made.txt").exists(), "{hook}");
        assert_eq!(content_text(messages(&mock, 1).last().unwrap()), reason);
    }
}

#[test]
fn a_hook_that_fails_refuses_the_call() {
    let cases = [
        (
            "cat > /dev/null; exit 3",
            "pre-tool hook `cat > /dev/null; exit 3` exited with status 3",
        ),
        (
            "kill -9 $$",
            "pre-tool hook `kill -9 $$` was killed by signal 9 (SIGKILL)",
        ),
        (
            "cat > /dev/null; echo '{not json'",
            "pre-tool hook `cat > /dev/null; echo '{not json'` printed output the hook contract does not allow: stdout is not a JSON object",
        ),
    ];
    for (hook, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (run, _mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", hook]);
        run.assert_code(0);
        let result = run.first("hook_result");
        assert_eq!(result["decision"], "failed", "{hook}");
        let said = result["reason"].as_str().unwrap();
        assert!(said.starts_with(reason), "{hook}: {said}");
        assert!(results(&run)[0].1, "{hook}");
        assert!(results(&run)[0].0.starts_with(reason), "{hook}");
        assert!(!dir.path().join("made.txt").exists(), "{hook}");
    }
}

#[test]
fn a_hook_past_its_timeout_is_killed_and_the_call_refused() {
    let dir = tempfile::tempdir().unwrap();
    // The sleep records its pid (the shell's, which it then becomes).
    let hook = "cat > /dev/null; read -r p _ < /proc/self/stat; echo $p > pid; exec sleep 20";
    let started = Instant::now();
    let (run, _mock) = hooked(
        dir.path(),
        "touch made.txt",
        &["--pre-tool-hook", hook, "--hook-timeout", "300ms"],
    );
    run.assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(15));
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "failed");
    let reason = format!("pre-tool hook `{hook}` timed out after 300ms");
    assert_eq!(result["reason"], reason.as_str());
    assert_eq!(results(&run), vec![(reason, true)]);
    assert!(!dir.path().join("made.txt").exists());
    let pid = sleeper_pid(dir.path());
    assert!(
        gone_soon(pid),
        "the hook's process {pid} outlived its timeout"
    );
}

#[test]
fn a_slow_hook_within_its_timeout_allows() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo ran",
        &[
            "--pre-tool-hook",
            "cat > /dev/null; sleep 0.5",
            "--hook-timeout",
            "10s",
        ],
    );
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "allow");
    assert!(result["durationMs"].as_u64().unwrap() >= 500, "{result}");
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
}

#[test]
fn a_hooks_updated_input_replaces_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "echo rewritten"},
    }});
    let (run, _mock) = hooked(
        dir.path(),
        "echo original",
        &["--pre-tool-hook", &printing(&output)],
    );
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "allow");
    assert_eq!(result["updatedInput"], json!({"command": "echo rewritten"}));
    assert_eq!(results(&run), vec![("rewritten".to_string(), false)]);
}

#[test]
fn an_updated_input_that_does_not_fit_the_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": 42},
    }});
    let (run, _mock) = hooked(
        dir.path(),
        "echo original",
        &["--pre-tool-hook", &printing(&output)],
    );
    run.assert_code(0);
    assert_eq!(run.first("hook_result")["decision"], "allow");
    let ends = results(&run);
    assert_eq!(ends.len(), 1);
    assert!(ends[0].1);
    assert!(
        ends[0].0.starts_with(
            "A pre-tool hook replaced the arguments of this bash call with ones that do not match its schema: "
        ),
        "{}",
        ends[0].0
    );
    assert!(!ends[0].0.contains("original"), "neither command ran");
}

#[test]
fn a_post_hook_records_the_tool_response() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo audited",
        &["--post-tool-hook", "cat >> post.jsonl; echo >> post.jsonl"],
    );
    run.assert_code(0);
    // A post hook decides nothing: no hook_result line.
    assert!(run.all("hook_result").is_empty());
    let text = std::fs::read_to_string(dir.path().join("post.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    let record = &records[0];
    assert_eq!(record["hook_event_name"], "PostToolUse");
    assert_eq!(record["tool_name"], "bash");
    assert_eq!(record["tool_use_id"], "c1");
    assert_eq!(record["tool_input"], json!({"command": "echo audited"}));
    assert_eq!(record["tool_response"]["isError"], false);
    assert_eq!(record["tool_response"]["content"][0]["text"], "audited");
}

#[test]
fn without_a_controller_the_hooks_decide_a_listed_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo ran",
        &[
            "--approve-tools",
            "bash",
            "--pre-tool-hook",
            "cat > /dev/null",
        ],
    );
    run.assert_code(0);
    // Nobody is asked: the hooks' allow resolves the approval.
    assert!(run.all("approval_requested").is_empty());
    let resolved = run.first("approval_resolved");
    assert_eq!(resolved["id"], "approval-1");
    assert_eq!(resolved["toolCallId"], "c1");
    assert_eq!(
        (&resolved["allow"], &resolved["by"]),
        (&json!(true), &json!("hook"))
    );
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
}

#[test]
fn a_hook_that_asks_without_a_controller_refuses_and_with_one_waits_for_decide() {
    let ask = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "a human should look",
    }});
    let hook = printing(&ask);
    // No controller: nobody can answer, so the call is refused.
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", &hook]);
    run.assert_code(0);
    assert_eq!(run.first("hook_result")["decision"], "ask");
    let resolved = run.first("approval_resolved");
    assert_eq!(
        (&resolved["allow"], &resolved["by"]),
        (&json!(false), &json!("hook"))
    );
    assert_eq!(
        results(&run),
        vec![(
            "bash needs an approval and this run has no controller to ask (--control stdin)"
                .to_string(),
            true
        )]
    );
    assert!(!dir.path().join("made.txt").exists());

    // With a controller, the hook's reason goes with the request.
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("touch made.txt")),
        answer("ok"),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--pre-tool-hook", &hook],
    );
    run.send(&prompt("task"));
    let requested = run.wait_for("approval_requested");
    assert_eq!(requested["reason"], "a human should look");
    run.send(&json!({"type": "decide", "id": requested["id"], "allow": true}));
    let run = run.finish();
    run.assert_code(0);
    assert!(dir.path().join("made.txt").exists());
}

// ---- limits and scope -----------------------------------------------------------------------

#[test]
fn max_cost_usd_stops_the_run_as_budget_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    // Each answer costs $0.60: 1,000,000 prompt tokens at $0.60 per million.
    let costly = |id: &str| {
        Reply::Sse(vec![
            role(),
            tool_call(0, id, "ls", "{}"),
            finish("tool_calls"),
            usage(1_000_000, 0, 0),
            done(),
        ])
    };
    let mock = MockLlm::start(vec![costly("c1"), costly("c2"), costly("c3"), answer("x")]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--price", "input=0.6,output=0", "--max-cost-usd", "1"],
        "task",
    );
    run.assert_code(3);
    assert_complete(&run);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_cost");
    assert_eq!(limit["budgetLimit"].as_f64(), Some(1.0));
    assert_eq!(run.first("agent_end")["stopReason"], "budget_exceeded");
    assert_eq!(
        last_stderr_line(&run),
        "worker: limit reached: max cost 1 USD (spent 1.2000)"
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn the_same_failing_call_repeated_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start_cycling(vec![call("c", "read", r#"{"path":"missing.txt"}"#)]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--max-repeated-failures", "3"],
        "task",
    );
    run.assert_code(3);
    assert_complete(&run);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "repeated_failures");
    assert_eq!(limit["used"].as_f64(), Some(3.0));
    assert_eq!(limit["budgetLimit"].as_f64(), Some(3.0));
    assert_eq!(limit["toolName"], "read");
    assert_eq!(run.first("agent_end")["stopReason"], "repeated_failures");
    assert_eq!(
        last_stderr_line(&run),
        "worker: limit reached: the same read call failed 3 times in a row (--max-repeated-failures)"
    );
    assert_eq!(results(&run).len(), 3);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_success_of_the_call_in_between_starts_the_count_over() {
    let dir = tempfile::tempdir().unwrap();
    let read = r#"{"path":"missing.txt"}"#;
    let mock = MockLlm::start(vec![
        call("c1", "read", read),
        call("c2", "read", read),
        call(
            "c3",
            "write",
            r#"{"path":"missing.txt","content":"now here"}"#,
        ),
        call("c4", "read", read),
        call("c5", "bash", &bash("rm missing.txt")),
        call("c6", "read", read),
        call("c7", "read", read),
        // Another call failing does not count for this one.
        call("c8", "read", r#"{"path":"other.txt"}"#),
        answer("gave up on it"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--max-repeated-failures", "3"],
        "task",
    );
    run.assert_code(0);
    let failed: Vec<bool> = results(&run).iter().map(|(_, error)| *error).collect();
    assert_eq!(
        failed,
        vec![true, true, false, false, false, true, true, true]
    );
    assert!(run.all("limit_reached").is_empty());
}

#[test]
fn a_write_outside_the_edit_scope_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "write", r#"{"path":"notes.txt","content":"x"}"#),
        call("c2", "write", r#"{"path":"src/lib.txt","content":"y"}"#),
        answer("ok"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--edit-scope", "src", "--edit-scope", "docs/*.md"],
        "task",
    );
    run.assert_code(0);
    let ends = results(&run);
    assert!(ends[0].1);
    assert!(ends[0].0.starts_with("Write refused: "), "{}", ends[0].0);
    assert!(ends[0].0.contains("notes.txt"), "{}", ends[0].0);
    assert!(ends[0].0.contains("src"), "{}", ends[0].0);
    assert!(ends[0].0.contains("docs/*.md"), "{}", ends[0].0);
    assert!(!dir.path().join("notes.txt").exists());
    assert!(!ends[1].1, "{}", ends[1].0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.txt")).unwrap(),
        "y"
    );
}

// ---- heartbeat ------------------------------------------------------------------------------

#[test]
fn a_quiet_run_gets_heartbeats_only_when_asked() {
    let script = || {
        MockLlm::start(vec![
            call("c1", "bash", &bash("sleep 2; echo slept")),
            answer("ok"),
        ])
    };
    let dir = tempfile::tempdir().unwrap();
    let mock = script();
    let run = run_dynamo(dir.path(), &mock.url, &["--heartbeat", "300ms"], "task");
    run.assert_code(0);
    assert_complete(&run);
    let beats = run.all("heartbeat");
    assert!(!beats.is_empty(), "{}", run.stdout);
    for beat in &beats {
        assert!(beat["quietMs"].as_u64().unwrap() >= 300, "{beat}");
        assert!(
            beat["elapsedMs"].as_u64().unwrap() >= beat["quietMs"].as_u64().unwrap(),
            "{beat}"
        );
    }
    // They came while the command ran, the quiet part of the run.
    let types = run.types();
    let start = types
        .iter()
        .position(|t| t == "tool_execution_start")
        .unwrap();
    let end = types
        .iter()
        .position(|t| t == "tool_execution_end")
        .unwrap();
    let inside = types[start..end]
        .iter()
        .filter(|t| *t == "heartbeat")
        .count();
    assert!(inside >= 1, "{types:?}");
    // Nothing follows the closing line.
    assert_eq!(run.last()["type"], "usage_snapshot");

    let mock = script();
    let run = run_dynamo(dir.path(), &mock.url, &[], "task");
    run.assert_code(0);
    assert!(run.all("heartbeat").is_empty(), "{}", run.stdout);
}

#[test]
fn a_busy_stream_gets_no_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    // A token every 100 ms for about 3 s: never a second of silence.
    let mut frames = vec![role()];
    for n in 0..30 {
        frames.push(text(&format!("{n} ")));
        frames.push(Frame::Delay(Duration::from_millis(100)));
    }
    frames.extend([finish("stop"), usage(10, 5, 0), done()]);
    let mock = MockLlm::start(vec![Reply::Sse(frames)]);
    let run = run_dynamo(dir.path(), &mock.url, &["--heartbeat", "1s"], "task");
    run.assert_code(0);
    assert!(run.all("heartbeat").is_empty(), "{}", run.stdout);
}
