//! Requests that keep the server's prefix cache warm: every request of a run extends the one
//! before it byte for byte (system prompt, tools, earlier messages as they were sent), and two
//! runs of the same task on the same day start with the same request.

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::run_worker;

/// The parts of a body that become prompt tokens, rendered as the server receives them.
fn prompt_parts(body: &Value) -> (String, String, Vec<String>) {
    let messages = body["messages"].as_array().unwrap();
    (
        messages[0].to_string(),
        body["tools"].to_string(),
        messages[1..].iter().map(Value::to_string).collect(),
    )
}

fn tour(dir: &std::path::Path) -> Vec<Value> {
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            reasoning("Look first."),
            text("Reading."),
            // Arguments with odd spacing: they must go back exactly as the model wrote them.
            tool_call(0, "c1", "read", r#"{ "path" :"a.txt"}"#),
            tool_call(1, "c2", "ls", "{}"),
            finish("tool_calls"),
            done(),
        ]),
        call("c3", "bash", r#"{"command":"echo hi"}"#),
        call("c4", "grep", r#"{"pattern":"alpha"}"#),
        answer("done"),
    ]);
    let run = run_worker(
        dir,
        &["--model", "dynamo/m", "--no-session"],
        "tour the tools",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    mock.requests().into_iter().map(|r| r.body).collect()
}

#[test]
fn every_request_extends_the_previous_one_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = tour(dir.path());
    assert_eq!(bodies.len(), 4);
    for pair in bodies.windows(2) {
        let (system, tools, messages) = prompt_parts(&pair[0]);
        let (next_system, next_tools, next_messages) = prompt_parts(&pair[1]);
        assert_eq!(system, next_system, "the system prompt changed");
        assert_eq!(tools, next_tools, "the tool definitions changed");
        assert!(messages.len() < next_messages.len());
        assert_eq!(
            messages,
            next_messages[..messages.len()],
            "an earlier message changed"
        );
    }
    let assistant = &bodies[1]["messages"][2];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!(r#"{ "path" :"a.txt"}"#),
        "arguments go back exactly as streamed"
    );
}

#[test]
fn two_runs_of_the_same_task_start_with_the_same_request() {
    // The same task in the same place (phases of one task, sibling subagents).
    let dir = tempfile::tempdir().unwrap();
    let first = tour(dir.path());
    let second = tour(dir.path());
    assert_eq!(prompt_parts(&first[0]), prompt_parts(&second[0]));
    // Nothing volatile in the prompt: no ids, no times (only the date, which a day shares).
    let system = first[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        !system.contains(":00Z") && !system.contains("session"),
        "{system}"
    );
}
