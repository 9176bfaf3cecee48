//! The real binary against a scripted OpenAI-compatible server over real HTTP: streaming,
//! tool calls, retries, failures, and the exact events and exit code each produces.

use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use crate::support::{run_dynamo, run_worker};
use serde_json::json;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

#[test]
fn streamed_text_ends_with_exit_0_and_a_usage_snapshot() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        text("Hel"),
        text("lo"),
        finish("stop"),
        usage(20, 2, 8),
        done(),
    ])]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "say hello");
    run.assert_code(0);
    assert_eq!(
        run.outline(),
        [
            "session",
            "sandbox_status",
            "extension_status",
            "extension_status",
            "extension_status",
            "trace_status",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "trace_summary",
            "usage_snapshot"
        ]
    );
    let deltas: Vec<&str> = run
        .all("message_update")
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hel", "lo"]);
    let end = &run.all("message_end")[1]["message"];
    assert_eq!(end["content"], json!([{"type": "text", "text": "Hello"}]));
    assert_eq!(end["stopReason"], "stop");
    assert_eq!(end["provider"], "dynamo");
    assert_eq!(end["model"], "mock-model");
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
    assert_eq!(
        run.stats()["tokens"],
        json!({"input": 12, "output": 2, "cacheRead": 8, "cacheWrite": 0, "total": 22})
    );
    assert_eq!(run.stats()["llmRequests"], 1);
    // Every line after the header carries the envelope.
    for event in &run.events[1..] {
        assert_eq!(event["sessionId"], run.events[0]["id"]);
        assert!(event["timestamp"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn the_request_is_a_streaming_chat_completion_with_tools_and_a_derived_request_id() {
    let dir = workspace();
    let mock = MockLlm::start(vec![call("c1", "ls", "{}"), answer("done")]);
    let run = run_dynamo(dir.path(), &mock.url, &["--max-tokens", "99"], "look");
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[0].body;
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 99);
    // The dynamo provider carries the agent identity (auto: body and header).
    let session = run.events[0]["id"].as_str().unwrap();
    assert_eq!(
        body["nvext"]["agent_context"],
        json!({"session_type_id": "worker", "session_id": session, "trajectory_id": session})
    );
    assert_eq!(requests[0].headers["x-dynamo-session-id"], session);
    let tool_names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tool_names,
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "find",
            "ls",
            "multi_grep"
        ]
    );
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "look"})
    );
    let second = &requests[1].body["messages"];
    assert_eq!(second[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["content"], "notes.txt");
    let ids: Vec<&String> = requests
        .iter()
        .map(|r| &r.headers["x-request-id"])
        .collect();
    let session = run.events[0]["id"].as_str().unwrap();
    assert_eq!(
        ids,
        [
            &format!("{session}:r0:t0:a1"),
            &format!("{session}:r0:t1:a1")
        ]
    );
    // The id the request carried is the one its turn reports.
    let turn_ends = run.all("turn_end");
    assert_eq!(turn_ends[1]["serving"]["requestId"], ids[1].as_str());
    // One keep-alive connection serves the whole run.
    assert_eq!(requests[0].peer, requests[1].peer);
}

#[test]
fn several_tool_calls_with_sparse_indices_run_and_answer_in_call_order() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(2, "call_read", "read", "{\"path\":"),
            tool_call(5, "call_grep", "grep", "{\"pattern\":\"beta\"}"),
            tool_args(2, "\"notes.txt\"}"),
            finish("tool_calls"),
            done(),
        ]),
        answer("ok"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "inspect");
    run.assert_code(0);
    let starts: Vec<&str> = run
        .all("tool_execution_start")
        .iter()
        .map(|e| e["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["call_read", "call_grep"]);
    let read_end = run
        .all("tool_execution_end")
        .into_iter()
        .find(|e| e["toolCallId"] == "call_read")
        .unwrap();
    assert_eq!(read_end["result"]["content"][0]["text"], "alpha\nbeta");
    assert_eq!(read_end["isError"], false);
    let results = &run.first("turn_end")["toolResults"];
    assert_eq!(results[0]["toolCallId"], "call_read");
    assert_eq!(results[1]["toolCallId"], "call_grep");
    assert_eq!(results[1]["content"][0]["text"], "notes.txt:2: beta");
    let wire = &mock.requests()[1].body["messages"];
    assert_eq!(
        wire[2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"notes.txt\"}"
    );
    assert_eq!(wire[3]["tool_call_id"], "call_read");
    assert_eq!(wire[4]["tool_call_id"], "call_grep");
    assert_eq!(run.stats()["toolCalls"], 2);
    assert_eq!(run.stats()["toolResults"], 2);
}

#[test]
fn reasoning_deltas_become_a_thinking_block() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        reasoning("Let me "),
        reasoning("think."),
        text("42"),
        finish("stop"),
        done(),
    ])]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    let kinds: Vec<&str> = run
        .all("message_update")
        .iter()
        .map(|e| e["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end"
        ]
    );
    assert_eq!(
        run.all("message_end")[1]["message"]["content"],
        json!([{"type": "thinking", "thinking": "Let me think."}, {"type": "text", "text": "42"}])
    );
}

#[test]
fn invalid_tool_arguments_and_unknown_tools_are_results_not_crashes() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "bad_json", "read", "{\"path\": \"notes"),
            tool_call(1, "no_tool", "teleport", "{}"),
            tool_call(2, "bad_args", "read", "{\"file\": \"x\"}"),
            finish("tool_calls"),
            done(),
        ]),
        answer("sorry"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    let results = &run.first("turn_end")["toolResults"];
    assert!(
        results
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["isError"] == true)
    );
    assert_eq!(
        results[0]["content"][0]["text"],
        "Invalid arguments for tool \"read\": the arguments are not valid JSON (EOF while parsing a string at line 1 column 15). Send the arguments as one JSON object that matches the tool's schema.\n\nReceived:\n{\"path\": \"notes"
    );
    assert_eq!(results[1]["content"][0]["text"], "Tool teleport not found");
    assert_eq!(
        results[2]["content"][0]["text"],
        "Validation failed for tool \"read\":\n  - missing field `path`\n\nReceived arguments:\n{\n  \"file\": \"x\"\n}"
    );
    // The raw (invalid) arguments go back to the model verbatim.
    assert_eq!(
        mock.requests()[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\": \"notes"
    );
}

#[test]
fn max_turns_stops_with_limit_reached_and_exit_3() {
    let dir = workspace();
    let mock = MockLlm::start(vec![call("c1", "ls", "{}"), call("c2", "ls", "{}")]);
    let run = run_dynamo(dir.path(), &mock.url, &["--max-turns", "2"], "loop forever");
    run.assert_code(3);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_turns");
    assert_eq!(limit["maxTurns"], 2);
    assert_eq!(limit["turns"], 2);
    assert_eq!(run.first("agent_end")["stopReason"], "max_turns");
    assert_eq!(
        &run.outline()[run.outline().len() - 4..],
        [
            "limit_reached",
            "agent_end",
            "trace_summary",
            "usage_snapshot"
        ]
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn the_timeout_stops_a_running_tool_with_exit_3() {
    let dir = workspace();
    let mock = MockLlm::start(vec![call("c1", "bash", "{\"command\":\"sleep 30\"}")]);
    let started = Instant::now();
    let run = run_dynamo(dir.path(), &mock.url, &["--timeout", "1s"], "q");
    run.assert_code(3);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let end = run.first("tool_execution_end");
    assert_eq!(end["isError"], true);
    assert_eq!(
        end["result"]["content"][0]["text"],
        "(no output)\n\nCommand aborted"
    );
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "timeout");
    assert_eq!(limit["timeoutMs"], 1000);
    assert_eq!(run.first("agent_end")["stopReason"], "timeout");
    assert_eq!(run.last()["type"], "usage_snapshot");
}

#[test]
fn model_discovery_picks_the_first_listed_model() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/default"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert_eq!(mock.models_requests(), 1);
    assert_eq!(mock.requests()[0].body["model"], "mock-model");
    // The script is spent: the 500 that says so ends the run at once.
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo", "--max-retries", "0"],
        "q",
        &[("DYNAMO_BASE_URL", &format!("{}/", mock.url))],
    );
    assert_eq!(mock.models_requests(), 2);
    assert_eq!(
        run.first("fatal_error")["error"]["message"],
        "HTTP 500 Internal Server Error: mock script exhausted"
    );
}

#[test]
fn model_discovery_failure_is_fatal_names_the_url_and_does_not_hang() {
    let dir = workspace();
    // A server that accepts connections and never answers.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", hole.local_addr().unwrap());
    let started = Instant::now();
    // Discovery retries like a chat request; one retry here.
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/default",
            "--max-retries",
            "1",
            "--retry-base-delay",
            "10ms",
        ],
        "q",
        &[("DYNAMO_BASE_URL", &url)],
    );
    run.assert_code(1);
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        run.first("fatal_error")["error"],
        json!({"kind": "model_discovery", "name": "ModelDiscoveryError", "message": format!("model discovery failed: GET {url}/models: no answer within 2 s (2 attempts)")})
    );
    assert_eq!(
        run.outline(),
        [
            "session",
            "sandbox_status",
            "extension_status",
            "extension_status",
            "extension_status",
            "trace_status",
            "fatal_error",
            "trace_summary",
            "usage_snapshot"
        ]
    );
}

#[test]
fn connection_refused_is_retried_then_fatal() {
    let dir = workspace();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", free.local_addr().unwrap());
    drop(free);
    let run = run_dynamo(dir.path(), &url, &["--max-retries", "1"], "q");
    run.assert_code(1);
    assert_eq!(run.all("auto_retry_start").len(), 1);
    let fatal = &run.first("fatal_error")["error"];
    assert_eq!(fatal["kind"], "transport");
    assert!(
        fatal["message"]
            .as_str()
            .unwrap()
            .contains("Connection refused"),
        "{fatal}"
    );
}

#[test]
fn the_openai_provider_uses_its_own_env_and_token_field_and_thinking_becomes_reasoning_effort() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "openai/gpt-x",
            "--max-tokens",
            "50",
            "--thinking",
            "high",
        ],
        "q",
        &[
            ("OPENAI_BASE_URL", &mock.url),
            ("OPENAI_API_KEY", "sk-test-key"),
            ("DYNAMO_BASE_URL", "http://127.0.0.1:1"),
        ],
    );
    run.assert_code(0);
    let request = &mock.requests()[0];
    assert_eq!(request.headers["authorization"], "Bearer sk-test-key");
    assert_eq!(request.body["max_completion_tokens"], 50);
    assert!(request.body.get("max_tokens").is_none());
    assert_eq!(request.body["reasoning_effort"], "high");
    assert!(request.body.get("nvext").is_none());
    assert_eq!(run.all("message_end")[1]["message"]["provider"], "openai");
}

#[test]
fn a_large_write_produces_output_linear_in_its_size() {
    let dir = workspace();
    let content = "x".repeat(100 * 1024);
    let args = serde_json::to_string(&json!({"path": "big.txt", "content": content})).unwrap();
    // Streamed in 1 KB pieces, as a model would.
    let mut frames = vec![role(), tool_call(0, "w1", "write", "")];
    for piece in args.as_bytes().chunks(1024) {
        frames.push(tool_args(0, std::str::from_utf8(piece).unwrap()));
    }
    frames.extend([finish("tool_calls"), done()]);
    let mock = MockLlm::start(vec![Reply::Sse(frames), answer("written")]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "write it");
    run.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("big.txt"))
            .unwrap()
            .len(),
        100 * 1024
    );
    let bytes = run.stdout.len();
    assert!(
        bytes < 1024 * 1024,
        "{bytes} bytes of JSONL for a 100 KB write"
    );
}

mod failures;
