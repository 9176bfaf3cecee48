//! Running the real `worker` binary in tests and reading its event stream.

#![allow(dead_code)]

pub(crate) mod mock_llm;
pub(crate) mod stalling;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The binary under test, with a clean environment (nothing leaks in from the host shell).
pub(crate) fn worker_command(cwd: &Path) -> Command {
    clean(Command::new(env!("CARGO_BIN_EXE_worker")), cwd)
}

/// `cmd` with only PATH, HOME (the test's directory), LANG and XDG_STATE_HOME set, running in
/// `cwd`. Session files go to a state directory of the test process, not into `cwd`, where a
/// tool listing the directory would see them.
fn clean(mut cmd: Command, cwd: &Path) -> Command {
    cmd.env_clear()
        .env(
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        )
        .env("HOME", cwd)
        .env("LANG", "C.UTF-8")
        .env("XDG_STATE_HOME", state_home())
        .current_dir(cwd);
    cmd
}

/// `cmd` started in the background with `prompt` on its stdin and its output discarded (for
/// runs a test kills).
pub(crate) fn spawn_quiet(mut cmd: Command, prompt: &str) -> std::process::Child {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    child
}

/// The tests' shared state directory, removed with the test process.
pub(crate) fn state_home() -> &'static Path {
    static STATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    STATE
        .get_or_init(|| tempfile::tempdir().expect("state directory"))
        .path()
}

pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub events: Vec<Value>,
}

impl Run {
    pub(crate) fn from_output(output: Output) -> Run {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let events = stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            events,
        }
    }

    pub(crate) fn types(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }

    /// Event types without the message_update noise.
    pub(crate) fn outline(&self) -> Vec<String> {
        self.types()
            .into_iter()
            .filter(|t| t != "message_update")
            .collect()
    }

    pub(crate) fn first(&self, kind: &str) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} event in:\n{}", self.stdout))
    }

    /// The `trace_summary` line's tool-event counts: sent, dropped, unconfirmed.
    pub(crate) fn tool_event_counts(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        let summary = self.first("trace_summary");
        (
            summary["toolEventsSent"].as_u64(),
            summary["toolEventsDropped"].as_u64(),
            summary["toolEventsUnconfirmed"].as_u64(),
        )
    }

    /// The `extension_status` line of one extension (`github`, `telemetry`, ...).
    pub(crate) fn extension(&self, name: &str) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == "extension_status" && e["extension"] == name)
            .unwrap_or_else(|| panic!("no extension_status for {name}:\n{}", self.stdout))
    }

    /// Whether an extension printed a status line.
    pub(crate) fn has_extension(&self, name: &str) -> bool {
        self.events
            .iter()
            .any(|e| e["type"] == "extension_status" && e["extension"] == name)
    }

    pub(crate) fn all(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    pub(crate) fn last(&self) -> &Value {
        self.events.last().expect("no events")
    }

    pub(crate) fn stats(&self) -> &Value {
        &self.last()["stats"]
    }

    pub(crate) fn assert_code(&self, code: i32) {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
    }
}

/// The lines of a JSONL file (a trace), parsed.
pub(crate) fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Runs `worker run <args>` with `stdin`, in `cwd`, with extra environment.
pub(crate) fn run_worker(cwd: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = worker_command(cwd);
    cmd.arg("run").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, stdin)
}

/// Runs `cmd` (a worker, or what execs one) to its end with `stdin` as its input.
pub(crate) fn run_command(mut cmd: Command, stdin: &str) -> Run {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn worker");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        // A run that fails early may not read stdin at all; a broken pipe is not a test error.
        let _ = input.write_all(stdin.as_bytes());
    }
    Run::from_output(child.wait_with_output().expect("wait worker"))
}

/// Runs against a mock server as the `dynamo` provider.
pub(crate) fn run_dynamo(cwd: &Path, url: &str, extra: &[&str], prompt: &str) -> Run {
    let mut args = vec!["--model", "dynamo/mock-model", "--retry-base-delay", "10ms"];
    args.extend_from_slice(extra);
    run_worker(cwd, &args, prompt, &[("DYNAMO_BASE_URL", url)])
}

/// Like [`run_worker`], and the worker's peak resident set size in KiB.
///
/// Measured by GNU time (`/usr/bin/time`, in the machine image), which forks the worker from
/// its own small process: a child spawned straight from this large, busy test process inherits
/// the parent's high-water mark in its `ru_maxrss`, so `wait4` here would measure the tests.
pub(crate) fn run_worker_measured(
    cwd: &Path,
    args: &[&str],
    stdin: &str,
    env: &[(&str, &str)],
) -> (Run, u64) {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let mut cmd = clean(Command::new("/usr/bin/time"), cwd);
    cmd.args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg(env!("CARGO_BIN_EXE_worker"))
        .arg("run")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn /usr/bin/time (package time)");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        let _ = input.write_all(stdin.as_bytes());
    }
    let run = Run::from_output(child.wait_with_output().expect("wait worker"));
    let text = std::fs::read_to_string(report.path()).expect("time's report");
    let peak = text
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or_else(|| panic!("time's report: {text:?}"));
    (run, peak)
}

/// The text of a `tool_execution_end`'s result.
pub(crate) fn result_text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The text of every tool call's result, in the order they ended, and whether each is an error.
pub(crate) fn results(run: &Run) -> Vec<(String, bool)> {
    run.all("tool_execution_end")
        .iter()
        .map(|end| (result_text(end), end["isError"] == true))
        .collect()
}

/// A child the test watches while it runs: its stdout lines arrive on `lines` (read by a
/// thread of their own), its stderr is collected whole by `stderr`.
pub(crate) struct Watched {
    pub child: std::process::Child,
    pub stdin: Option<std::process::ChildStdin>,
    pub lines: std::sync::mpsc::Receiver<String>,
    pub stderr: std::thread::JoinHandle<String>,
}

/// Starts `cmd` with every stream piped, its stdout read line by line as it comes.
pub(crate) fn spawn_watched(mut cmd: Command) -> Watched {
    use std::io::BufRead;
    cmd.stdin(Stdio::piped())
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
    Watched {
        stdin: child.stdin.take(),
        child,
        lines,
        stderr,
    }
}

/// Whether process `pid` exists and is not a zombie.
pub(crate) fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// The running processes whose `/proc/PID/<file>` (`cmdline`, `environ`: NUL-separated) has
/// `entry` as one of its parts.
pub(crate) fn pids_with(file: &str, entry: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for dir in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = dir.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(parts) = std::fs::read(format!("/proc/{pid}/{file}")) else {
            continue;
        };
        if parts
            .split(|b| *b == 0)
            .any(|part| part == entry.as_bytes())
            && running(pid)
        {
            pids.push(pid);
        }
    }
    pids
}
