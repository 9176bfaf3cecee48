//! The README's guardian (`examples/guardian.py`) against the real binary: the flow an
//! orchestrator runs with `--control stdin` (prompt first, steer, decide, abort with the cost,
//! an answer per command) works end to end.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::mock_llm::{MockLlm, call};
use crate::support::{Run, state_home};

#[test]
fn the_guardian_steers_denies_a_push_and_aborts_over_budget() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    // Each answer costs $1 at this price: 10 prompt tokens at $100,000 per million.
    let mock = MockLlm::start(vec![
        call("c1", "write", r#"{"path":"notes.txt","content":"scratch"}"#),
        call("c2", "bash", r#"{"command":"git push origin main"}"#),
        call("c3", "bash", r#"{"command":"echo fine"}"#),
    ]);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/guardian.py");
    let output = Command::new("python3")
        .args([
            example,
            "--prompt",
            "Fix the failing test",
            "--budget-usd",
            "2.5",
            "--scope",
            "src/",
            "--",
            env!("CARGO_BIN_EXE_worker"),
            "run",
            "--model",
            "dynamo/mock-model",
            "--control",
            "stdin",
            "--approve-tools",
            "bash",
            "--price",
            "input=100000,output=0",
            "--no-session",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("XDG_STATE_HOME", state_home())
        .env("DYNAMO_BASE_URL", &mock.url)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs the guardian");
    let run = Run::from_output(output);
    let stderr = run.stderr.clone();
    run.assert_code(5);

    // The steer: sent when the write outside src/ started, delivered with the next request.
    assert!(
        stderr.contains("guardian: steer: notes.txt is outside src/"),
        "{stderr}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "no request after the abort");
    let second: &Value = &requests[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        last["content"],
        "Only change files under src/. Leave notes.txt as it was."
    );

    // The push: denied, with the reason the model reads.
    let push = run
        .all("tool_execution_end")
        .into_iter()
        .find(|end| end["toolCallId"] == "c2")
        .unwrap()
        .clone();
    assert_eq!(push["isError"], true);
    assert_eq!(
        crate::support::result_text(&push),
        "The bash call was denied: pushing is the orchestrator's job, not the agent's"
    );
    let denied = run
        .all("approval_resolved")
        .into_iter()
        .find(|resolved| resolved["toolCallId"] == "c2")
        .unwrap()
        .clone();
    assert_eq!(
        (denied["allow"].clone(), denied["by"].clone()),
        (Value::Bool(false), "control".into())
    );

    // The abort: after the third answer took the cost to $3, with every command answered.
    assert_eq!(
        run.first("control_abort")["reason"],
        "over the $2.50 budget"
    );
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    assert_eq!(run.last()["type"], "usage_snapshot");
    assert!((run.stats()["cost"].as_f64().unwrap() - 3.0).abs() < 1e-9);
    let acks = run.all("control_ack");
    assert!(acks.iter().all(|ack| ack["id"].is_string()), "{acks:?}");
    assert!(
        acks.iter()
            .any(|ack| ack["command"] == "abort" && ack["ok"] == true),
        "{acks:?}"
    );
    assert!(
        stderr.contains("worker: stopped by an abort command: over the $2.50 budget\n"),
        "{stderr}"
    );
}
