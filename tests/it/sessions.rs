//! Sessions through the binary: a phase persists its conversation, the next phase resumes it
//! under the same session id (which Dynamo sees), and a run killed mid-tool resumes without
//! running that tool again.

use std::io::{BufRead, Write};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{run_worker, worker_command};

fn session_dir(dir: &std::path::Path) -> String {
    dir.join("sessions").display().to_string()
}

#[test]
fn a_phase_resumes_the_last_one_under_the_same_session_id() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = session_dir(dir.path());
    let mock = MockLlm::start(vec![
        call("c1", "ls", "{}"),
        answer("planned"),
        answer("implemented"),
    ]);
    let phase = |args: &[&str], prompt: &str| {
        let mut all = vec!["--model", "dynamo/m", "--session-dir", sessions.as_str()];
        all.extend_from_slice(args);
        run_worker(dir.path(), &all, prompt, &[("DYNAMO_BASE_URL", &mock.url)])
    };
    let plan = phase(&["--session-id", "task-7.plan"], "plan it");
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let header = &plan.events[0];
    assert_eq!(header["id"], "task-7.plan");
    let file = header["sessionFile"].as_str().unwrap().to_string();
    assert!(file.ends_with("_task-7.plan.jsonl"), "{file}");
    // user, assistant (call), tool result, assistant (answer)
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        1 + 4
    );

    let implement = phase(&["--resume", "task-7.plan"], "now implement it");
    assert_eq!(implement.code, 0, "{}", implement.stderr);
    let header = &implement.events[0];
    assert_eq!(header["id"], "task-7.plan", "the same session");
    assert_eq!(header["sessionFile"], file.as_str(), "the same file");
    assert_eq!(
        header["resumedFrom"],
        json!({"path": file, "entries": 4, "interrupted": 0})
    );
    let requests = mock.requests();
    let last = requests.last().unwrap();
    let roles: Vec<&str> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(last.headers["x-dynamo-session-id"], "task-7.plan");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        1 + 6
    );

    // --continue finds the newest session of the directory; a mismatched id is refused. The
    // script is spent from here on: its 500 ends each run at once.
    let again = phase(&["--continue", "--max-retries", "0"], "and test it");
    assert_eq!(again.events[0]["id"], "task-7.plan");
    let clash = phase(&["--resume", "task-7.plan", "--session-id", "other"], "q");
    assert_eq!(clash.code, 2);
    assert!(
        clash
            .stderr
            .contains("differs from the resumed session's id"),
        "{}",
        clash.stderr
    );
    let missing = phase(&["--resume", "nope"], "q");
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .contains("--resume nope: no such session file"),
        "{}",
        missing.stderr
    );
    let bad = phase(&["--session-id", "../escape"], "q");
    assert_eq!(bad.code, 2);

    // --no-session writes nothing.
    let count = std::fs::read_dir(&sessions).unwrap().count();
    let unsaved = phase(&["--no-session", "--max-retries", "0"], "q");
    assert!(unsaved.events[0].get("sessionFile").is_none());
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), count);
}

/// Kills a multi-tool run at pseudo-random moments, 50 times: every session file reads back,
/// the resumed run completes the task, and no command ran twice.
#[test]
fn a_run_killed_at_any_moment_resumes_without_running_a_tool_twice() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for attempt in 0..50 {
        let dir = tempfile::tempdir().unwrap();
        let sessions = session_dir(dir.path());
        // Three steps, each leaving one mark; then the answer.
        let step = |n: u32| {
            let command =
                json!({"command": format!("echo step{n} >> marks; sleep 0.02")}).to_string();
            call(&format!("c{n}"), "bash", &command)
        };
        // The resumed run picks up wherever the replies stopped, and needs one more answer.
        let mock = MockLlm::start(vec![
            step(1),
            step(2),
            step(3),
            answer("all done"),
            answer("all done, resumed"),
        ]);
        let mut command = worker_command(dir.path());
        command
            .args(["run", "--model", "dynamo/m", "--session-id", "crash"])
            .args(["--session-dir", &sessions])
            .env("DYNAMO_BASE_URL", &mock.url);
        let mut child = crate::support::spawn_quiet(command, "do the three steps");
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_millis(seed % 120));
        let killed = child.id();
        let _ = child.kill();
        child.wait().unwrap();
        // A staging file left behind names its writer, so a later lookup can tell it is gone.
        for entry in std::fs::read_dir(&sessions).into_iter().flatten() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                assert!(
                    name.starts_with(&format!(".session-{killed}-")),
                    "attempt {attempt}: {name}"
                );
            }
        }

        // A session file, not the header's staging file (`.session-*.tmp`), which a kill
        // while the header is written leaves behind under its temporary name.
        let file = std::fs::read_dir(&sessions).ok().and_then(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        });
        let Some(file) = file else {
            // Killed before the session file existed: nothing to resume, nothing ran.
            assert!(!dir.path().join("marks").exists(), "attempt {attempt}");
            continue;
        };
        let model = mock.remaining();
        let resumed = run_worker(
            dir.path(),
            &[
                "--model",
                "dynamo/m",
                "--resume",
                file.to_str().unwrap(),
                "--session-dir",
                &sessions,
            ],
            "carry on",
            &[("DYNAMO_BASE_URL", &mock.url)],
        );
        assert_eq!(
            resumed.code, 0,
            "attempt {attempt} ({model} replies left): {}",
            resumed.stderr
        );
        assert_eq!(resumed.last()["type"], "usage_snapshot");
        let marks = std::fs::read_to_string(dir.path().join("marks")).unwrap_or_default();
        for n in 1..=3 {
            let runs = marks.lines().filter(|l| *l == format!("step{n}")).count();
            assert!(runs <= 1, "attempt {attempt}: step{n} ran {runs} times");
        }
    }
}

#[test]
fn a_run_killed_mid_tool_resumes_without_running_the_tool_again() {
    for attempt in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let sessions = session_dir(dir.path());
        // The command leaves a mark, then takes its time: the kill lands while it runs.
        let command = json!({"command": "echo ran >> marks; sleep 30"}).to_string();
        let mock = MockLlm::start(vec![call("c1", "bash", &command), answer("recovered")]);
        let mut child = worker_command(dir.path())
            .args(["run", "--model", "dynamo/m", "--session-id", "crashy"])
            .args(["--session-dir", &sessions])
            .env("DYNAMO_BASE_URL", &mock.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"do it").unwrap();
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        for line in lines {
            if line.unwrap().contains("\"tool_execution_start\"") {
                break;
            }
        }
        // Vary the moment a little between attempts.
        std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
        child.kill().unwrap();
        child.wait().unwrap();

        let resumed = run_worker(
            dir.path(),
            &[
                "--model",
                "dynamo/m",
                "--continue",
                "--session-dir",
                &sessions,
            ],
            "carry on",
            &[("DYNAMO_BASE_URL", &mock.url)],
        );
        assert_eq!(resumed.code, 0, "{}", resumed.stderr);
        assert_eq!(resumed.events[0]["resumedFrom"]["interrupted"], 1);
        let request = mock.requests().last().unwrap().body.clone();
        let messages = request["messages"].as_array().unwrap();
        let interrupted: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        assert_eq!(interrupted.len(), 1);
        assert_eq!(interrupted[0]["tool_call_id"], "c1");
        assert!(
            interrupted[0]["content"]
                .as_str()
                .unwrap()
                .contains("was not run again")
        );
        let marks = std::fs::read_to_string(dir.path().join("marks")).unwrap_or_default();
        assert!(marks.lines().count() <= 1, "ran twice: {marks:?}");
        assert!(
            resumed.all("tool_execution_start").is_empty(),
            "nothing re-run"
        );
    }
}
