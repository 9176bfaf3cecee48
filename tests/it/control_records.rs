//! Control records beyond stdout: every answer, approval and hook decision is kept in the
//! session file (Pi's custom entries, left out of a resumed conversation), in the trace file
//! (`event_type: control` rows, drawn by `worker trace perfetto`) and never with a secret.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::Value;

use crate::support::mock_llm::{MockLlm, answer, call};
use crate::support::{Run, read_jsonl, worker_command};

const KEY: &str = "sk-live-control-0123456789";

#[test]
fn approvals_and_answers_are_kept_in_the_session_file_and_the_trace_file_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mock = MockLlm::start(vec![
        call("c1", "bash", r#"{"command":"echo hi"}"#),
        answer("done"),
    ]);
    let mut cmd = worker_command(dir.path());
    cmd.args(["run", "--model", "dynamo/mock-model", "--control", "stdin"])
        .args(["--approve-tools", "bash", "--trace-file"])
        .arg(&trace)
        .arg("--session-dir")
        .arg(sessions.path())
        .env("DYNAMO_BASE_URL", &mock.url)
        .env("DYNAMO_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"type":"prompt","message":"say hi"}}"#).unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    let mut decided = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        stdout.push_str(&line);
        stdout.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "approval_requested" && !decided {
            decided = true;
            let id = event["id"].as_str().unwrap();
            writeln!(
                stdin,
                r#"{{"type":"decide","id":"{id}","allow":true,"reason":"fine, key {KEY}"}}"#
            )
            .unwrap();
        }
        if event["type"] == "usage_snapshot" {
            break;
        }
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let run = Run::from_output(std::process::Output {
        stdout: stdout.into_bytes(),
        ..output
    });
    run.assert_code(0);
    assert!(!run.stdout.contains(KEY), "{}", run.stdout);
    let resolved = run.first("approval_resolved");
    assert_eq!(resolved["reason"], "fine, key [REDACTED]");

    // The session file: custom entries, in the order they happened, around the messages.
    let session_file = run.events[0]["sessionFile"].as_str().unwrap().to_string();
    let session = std::fs::read_to_string(&session_file).unwrap();
    assert!(!session.contains(KEY), "{session}");
    let entries = read_jsonl(std::path::Path::new(&session_file));
    let kinds: Vec<String> = entries
        .iter()
        .filter(|e| e["type"] == "custom")
        .map(|e| e["customType"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "worker.approval_requested",
            "worker.control_ack",
            "worker.approval_resolved"
        ]
    );
    let kept = entries
        .iter()
        .find(|e| e["customType"] == "worker.approval_resolved")
        .unwrap();
    assert_eq!(kept["data"]["record"]["by"], "control");
    assert_eq!(kept["data"]["record"]["toolCallId"], "c1");
    // The tool result follows its approval in the file, as it did in the run.
    let position = |pred: &dyn Fn(&Value) -> bool| entries.iter().position(pred).unwrap();
    assert!(
        position(&|e| e["customType"] == "worker.approval_resolved")
            < position(&|e| e["message"]["role"] == "toolResult")
    );

    // The trace file: one control row per record, beside the tool rows.
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains(KEY), "{text}");
    let rows: Vec<Value> = read_jsonl(&trace)
        .into_iter()
        .map(|row| row["event"].clone())
        .filter(|row| row["event_type"] == "control")
        .collect();
    let types: Vec<&str> = rows
        .iter()
        .map(|row| row["control"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["approval_requested", "control_ack", "approval_resolved"]
    );
    assert_eq!(rows[0]["schema"], "dynamo.agent.trace.v1");
    assert_eq!(rows[0]["event_source"], "harness");

    // `worker trace perfetto` draws them as instant events.
    let perfetto = dir.path().join("trace.json");
    let converted = worker_command(dir.path())
        .args(["trace", "perfetto"])
        .arg(&trace)
        .arg("-o")
        .arg(&perfetto)
        .output()
        .unwrap();
    assert!(converted.status.success());
    let chrome: Value = serde_json::from_slice(&std::fs::read(&perfetto).unwrap()).unwrap();
    let instants = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "control")
        .count();
    assert_eq!(instants, 3);

    // Resuming the session: the records are not part of the conversation.
    let mock = MockLlm::start(vec![answer("again")]);
    let resumed = crate::support::run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/mock-model",
            "--session-dir",
            sessions.path().to_str().unwrap(),
            "--resume",
            &session_file,
        ],
        "and now?",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    resumed.assert_code(0);
    let sent = &mock.requests()[0].body["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
}
