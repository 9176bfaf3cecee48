//! Class 10: processes a command starts must not outlive worker, in every sandbox mode. A
//! command that leaves its process group and session (`setsid`), double-forks, or does both,
//! is still gone once worker is killed with SIGKILL, and cannot signal worker either.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::{spawn_quiet, worker_command};

fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

/// Host pids of live processes whose command line is `sleep DURATION` (the pid a command sees
/// of itself is its pid in its own namespace, so the host finds it by what it runs).
fn sleeping(duration: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{duration}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline == wanted.as_bytes())
        })
        .filter(|pid| running(*pid))
        .collect()
}

/// Waits until a process runs `sleep DURATION`; its pids.
fn started(duration: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = sleeping(duration);
        if !pids.is_empty() {
            return pids;
        }
        assert!(Instant::now() < deadline, "sleep {duration} never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn nothing_a_command_starts_survives_a_sigkill_of_worker_in_any_sandbox_mode() {
    let escapes = [
        // Its own session, then a double fork: reparented away from everything.
        "setsid sh -c '(exec sleep MARK) &' ; sleep 300",
        // Its own session and group, as a daemon would.
        "setsid -f sleep MARK; sleep 300",
        // A nohup'd, disowned job in a new group.
        "(set -m; nohup sleep MARK >/dev/null 2>&1 &) ; sleep 300",
    ];
    for (case, sandbox) in ["none", "linux"].iter().enumerate() {
        for (i, escape) in escapes.iter().enumerate() {
            let mark = format!("300.{}{case}{i}", std::process::id());
            let escape = escape.replace("MARK", &mark);
            let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let mock = MockLlm::start(vec![call(
                "c1",
                "bash",
                &json!({ "command": escape }).to_string(),
            )]);
            let mut cmd = worker_command(dir.path());
            cmd.args(["run", "--model", "dynamo/m", "--sandbox", sandbox])
                .env("DYNAMO_BASE_URL", &mock.url);
            let mut worker = spawn_quiet(cmd, "go");
            let pids = started(&mark);
            worker.kill().unwrap();
            worker.wait().unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while pids.iter().any(|pid| running(*pid)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let survivors: Vec<&i32> = pids.iter().filter(|pid| running(**pid)).collect();
            for pid in &survivors {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(**pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            assert!(
                survivors.is_empty(),
                "{sandbox}: {escape}: {survivors:?} survived"
            );
        }
    }
}

#[test]
fn a_command_cannot_kill_worker_through_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "bash",
            &json!({"command": "kill -9 $PPID; echo still-here"}).to_string(),
        ),
        answer("done"),
    ]);
    let run = crate::support::run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "go",
        &[("DYNAMO_BASE_URL", mock.url.as_str())],
    );
    run.assert_code(0);
    let result = &run.all("tool_execution_end")[0]["result"]["content"][0]["text"];
    assert_eq!(result, "still-here");
}

#[test]
fn a_command_that_traps_sigterm_gets_its_grace_in_every_sandbox_mode() {
    use std::io::{BufRead, BufReader};
    for sandbox in ["none", "linux"] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let command = "trap 'sleep 0.3; echo cleaned > cleaned.txt; exit 0' TERM; echo ready; sleep 60 & wait";
        let mock = MockLlm::start(vec![call(
            "c1",
            "bash",
            &json!({ "command": command }).to_string(),
        )]);
        let mut cmd = worker_command(dir.path());
        cmd.args(["run", "--model", "dynamo/m", "--sandbox", sandbox])
            .env("DYNAMO_BASE_URL", &mock.url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut worker = cmd.spawn().unwrap();
        use std::io::Write;
        worker.stdin.take().unwrap().write_all(b"go").unwrap();
        let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
        for line in lines.by_ref() {
            if line.unwrap().contains("\"tool_execution_update\"") {
                break;
            }
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(worker.id().cast_signed()),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        assert_eq!(worker.wait().unwrap().code(), Some(130), "{sandbox}");
        assert!(rest.last().unwrap().contains("usage_snapshot"), "{sandbox}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cleaned.txt")).unwrap_or_default(),
            "cleaned\n",
            "{sandbox}: the command's TERM trap did not get to run"
        );
    }
}
