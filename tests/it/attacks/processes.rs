//! Class 10: processes a command starts must not outlive worker, in every sandbox mode. A
//! command that leaves its process group and session (`setsid`), double-forks, or does both,
//! is still gone once worker is killed with SIGKILL, and cannot signal worker either.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::{results, run_command, spawn_quiet, worker_command};

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

/// The parent (host pid) of a process, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split(' ').nth(1)?.parse().ok()
}

/// A bash call that leaves `sleep DURATION` running in the background, writing nowhere.
fn leaves_a_job(id: &str, duration: &str) -> Reply {
    let command = format!("sleep {duration} > /dev/null 2>&1 & echo started");
    call(id, "bash", &json!({ "command": command }).to_string())
}

#[test]
fn a_background_job_that_writes_elsewhere_does_not_hold_a_contained_call() {
    // Without containment the call ends with the shell. Contained, the namespace's init stays
    // for the job, and must not keep the output pipe open either: the call would then wait
    // out the 2 s output drain for a job that never writes to it.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = format!("30.{}1", std::process::id());
    let mock = MockLlm::start(vec![leaves_a_job("c1", &mark), answer("done")]);
    let run = crate::support::run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--sandbox", "none"],
        "go",
        &[("DYNAMO_BASE_URL", mock.url.as_str())],
    );
    run.assert_code(0);
    let end = &run.all("tool_execution_end")[0];
    assert_eq!(end["result"]["content"][0]["text"], "started");
    let waited = end["durationMs"].as_u64().unwrap();
    assert!(
        waited < 1000,
        "the call took {waited} ms, waiting for a job that does not write to its output"
    );
    // The job is killed as the run ends; on a loaded machine it may take a moment to go.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sleeping(&mark).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(sleeping(&mark).is_empty(), "the job outlived the run");
}

#[test]
fn an_init_that_stays_for_a_background_job_is_a_bare_reaper_not_a_copy_of_worker() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mark = format!("300.{}2", std::process::id());
    let mock = MockLlm::start(vec![
        leaves_a_job("c1", &mark),
        call("c2", "bash", &json!({ "command": "sleep 60" }).to_string()),
    ]);
    let mut cmd = worker_command(dir.path());
    cmd.args(["run", "--model", "dynamo/m", "--sandbox", "none"])
        .env("DYNAMO_BASE_URL", &mock.url);
    let mut worker = spawn_quiet(cmd, "go");
    let job = started(&mark)[0];
    // The job's parent is the shell until the shell ends, then the namespace's init, which
    // then execs worker's binary to only reap.
    let deadline = Instant::now() + Duration::from_secs(10);
    let reaper = b"worker\0__reap\0".to_vec();
    let init = loop {
        let parent = parent_of(job);
        if let Some(init) = parent
            && std::fs::read(format!("/proc/{init}/cmdline")).ok() == Some(reaper.clone())
        {
            break init;
        }
        assert!(
            Instant::now() < deadline,
            "the job's parent ({parent:?}) never became a bare reaper"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(parent_of(job), Some(init), "the job left its init");
    worker.kill().unwrap();
    worker.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(job) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(job), "the job outlived a killed worker");
}

/// A repository cannot have worker's own processes run a program of its own. A relative
/// `PATH` entry (`bin`, resolved in the working directory) finds the repository's `bin/sh`,
/// `bin/rm`, `bin/cat` and `bin/true` before any other. The watchdog (started with the first
/// command, with worker's environment; it runs `rm` on the run's spill directory once worker
/// has exited), a tool hook (`cat`) and an MCP server (`true`) still run none of them.
#[test]
fn worker_s_own_processes_never_run_a_program_a_repository_planted() {
    use std::os::unix::fs::PermissionsExt;
    let repo = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("planted-program-ran");
    std::fs::create_dir(repo.path().join("bin")).unwrap();
    for name in ["sh", "rm", "cat", "true"] {
        let planted = repo.path().join("bin").join(name);
        std::fs::write(
            &planted,
            format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mcp = outside.path().join("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"planted": {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let planted_ran = || std::fs::read_to_string(&marker).unwrap_or_default();
    let cases: [&[&str]; 3] = [
        &[],
        &["--pre-tool-hook", "cat > /dev/null"],
        &["--mcp-config", mcp.to_str().unwrap()],
    ];
    for extra in cases {
        // Over 2,000 lines: the output spills into the run's directory, which the watchdog
        // is told of.
        let mock = MockLlm::start(vec![
            call("c1", "bash", &json!({"command": "seq 3000"}).to_string()),
            answer("done"),
        ]);
        let mut command = worker_command(repo.path());
        command
            .args(["run", "--model", "dynamo/m", "--no-session"])
            .args(extra)
            .env("DYNAMO_BASE_URL", &mock.url)
            .env(
                "PATH",
                format!("bin:{}", std::env::var("PATH").unwrap_or_default()),
            );
        let run = run_command(command, "run a command");
        run.assert_code(0);
        // The watchdog cleans up just after worker has exited.
        let exited = Instant::now();
        while planted_ran().is_empty() && exited.elapsed() < Duration::from_millis(500) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            planted_ran(),
            "",
            "with {extra:?}: the repository's program ran"
        );
        let (text, is_error) = &results(&run)[0];
        assert!(!is_error && text.contains("\n3000\n"), "the command failed");
        assert!(text.contains("Full output: "), "nothing spilled");
        if extra.first() == Some(&"--pre-tool-hook") {
            assert_eq!(run.first("hook_result")["decision"], "allow");
        }
    }
}
