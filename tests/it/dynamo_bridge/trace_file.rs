//! `--trace-file`: request and tool records in Dynamo's format, and linked trajectories.

use super::*;
use crate::support::read_jsonl;

#[test]
fn the_trace_file_has_a_request_end_per_model_request_and_the_tool_records() {
    let dir = workspace();
    let trace = dir.path().join("trace.jsonl");
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "read", "{\"path\":\"a.txt\"}"),
            finish("tool_calls"),
            usage(100, 7, 64),
            done(),
        ]),
        answer("done"),
    ]);
    let run = dynamo(
        dir.path(),
        &mock.url,
        &["--trace-file", trace.to_str().unwrap()],
        &[("DYN_AGENT_TRAJECTORY_ID", "traj-f")],
    );
    run.assert_code(0);
    let lines = read_jsonl(&trace);
    let kinds: Vec<&str> = lines
        .iter()
        .map(|l| l["event"]["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["request_end", "tool_start", "tool_end", "request_end"]
    );
    let first = &lines[0];
    assert!(first["timestamp"].is_u64());
    let request = &first["event"]["request"];
    assert_eq!(first["event"]["schema"], "dynamo.agent.trace.v1");
    assert_eq!(request["request_id"], "mock", "chatcmpl- prefix stripped");
    assert_eq!(
        request["x_request_id"],
        mock.requests()[0].headers["x-request-id"].as_str()
    );
    assert_eq!(
        (
            request["input_tokens"].as_u64(),
            request["output_tokens"].as_u64(),
            request["cached_tokens"].as_u64()
        ),
        (Some(100), Some(7), Some(64))
    );
    assert_eq!(request["model"], "mock-model");
    for key in ["request_received_ms", "ttft_ms", "total_time_ms"] {
        assert!(request[key].is_number(), "{key}");
    }
    assert_eq!(first["event"]["agent_context"]["trajectory_id"], "traj-f");
    // The tool ran after the request that asked for it ended.
    let request_end = first["event"]["event_time_unix_ms"].as_u64().unwrap();
    let tool_start = lines[1]["event"]["tool"]["started_at_unix_ms"]
        .as_u64()
        .unwrap();
    assert!(tool_start >= request_end, "{tool_start} < {request_end}");
}

fn replay_fixture(path: &std::path::Path, turns: &[Value]) {
    let mut lines =
        vec![json!({"workerFixture": 1, "provider": "dynamo", "model": "m"}).to_string()];
    for events in turns {
        lines.push(json!({"response": {"events": events}}).to_string());
    }
    std::fs::write(path, lines.join("\n")).unwrap();
}

fn bash_turn(command: &str) -> Value {
    json!([
        {"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call-bash", "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]"
    ])
}

fn text_turn(text: &str) -> Value {
    json!([{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}, "[DONE]"])
}

#[test]
fn a_root_child_grandchild_chain_lands_as_three_linked_trajectories() {
    let dir = workspace();
    let d = dir.path();
    let worker = env!("CARGO_BIN_EXE_worker");
    let spawn = |run_id: &str, agent: &str, fixture: &str, trace: &str| {
        format!(
            "PI_SUBAGENT_CHILD=1 PI_SUBAGENT_RUN_ID={run_id} PI_SUBAGENT_CHILD_AGENT={agent} {worker} run --model replay/{fixture} --trace-file {trace} 'sub-task' < /dev/null > /dev/null; echo exit=$?"
        )
    };
    replay_fixture(
        &d.join("grandchild.jsonl"),
        &[bash_turn("echo leaf"), text_turn("leaf done")],
    );
    replay_fixture(
        &d.join("child.jsonl"),
        &[
            bash_turn(&spawn(
                "r2",
                "fixer",
                "grandchild.jsonl",
                "grandchild-trace.jsonl",
            )),
            text_turn("child done"),
        ],
    );
    replay_fixture(
        &d.join("root.jsonl"),
        &[
            bash_turn(&spawn("r1", "scout", "child.jsonl", "child-trace.jsonl")),
            text_turn("root done"),
        ],
    );

    let run = run_worker(
        d,
        &[
            "--model",
            "replay/root.jsonl",
            "--trace-file",
            "root-trace.jsonl",
        ],
        "start the tree",
        &[],
    );
    run.assert_code(0);
    assert_eq!(
        run.first("tool_execution_end")["result"]["content"][0]["text"],
        "exit=0"
    );
    let root_session = run.events[0]["id"].as_str().unwrap().to_string();

    let context = |file: &str| -> Value {
        let lines = read_jsonl(&d.join(file));
        assert!(!lines.is_empty(), "{file} is empty");
        let first = lines[0]["event"]["agent_context"].clone();
        assert!(
            lines.iter().all(|l| l["event"]["agent_context"] == first),
            "{file}: one identity per run"
        );
        first
    };
    assert_eq!(
        context("root-trace.jsonl"),
        json!({"session_type_id": "worker", "session_id": root_session, "trajectory_id": root_session})
    );
    assert_eq!(
        context("child-trace.jsonl"),
        json!({"session_type_id": "worker", "session_id": root_session, "trajectory_id": "r1:scout:0", "parent_trajectory_id": root_session})
    );
    assert_eq!(
        context("grandchild-trace.jsonl"),
        json!({"session_type_id": "worker", "session_id": root_session, "trajectory_id": "r2:fixer:0", "parent_trajectory_id": "r1:scout:0"})
    );

    // The child names the root's request whose bash call started it, on every record.
    let asking = format!("{root_session}:r0:t0:a1");
    for row in read_jsonl(&d.join("child-trace.jsonl")) {
        let event = &row["event"];
        let body = if event["event_type"] == "request_end" {
            &event["request"]
        } else {
            &event["tool"]
        };
        assert_eq!(body["parent_request_id"], asking.as_str(), "{row}");
    }

    // The three traces together: one session, three tracks.
    let all: String = [
        "root-trace.jsonl",
        "child-trace.jsonl",
        "grandchild-trace.jsonl",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(d.join(f)).unwrap())
    .collect();
    std::fs::write(d.join("all.jsonl"), all).unwrap();
    let out = std::process::Command::new(worker)
        .args(["trace", "perfetto", "all.jsonl", "-o", "all.perfetto.json"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "wrote all.perfetto.json: 9 slices, 6 flows, 1 session(s), 3 trajectories\n"
    );
    let chrome: Value =
        serde_json::from_slice(&std::fs::read(d.join("all.perfetto.json")).unwrap()).unwrap();
    let tracks: Vec<&str> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tracks,
        [
            root_session.clone(),
            format!("r1:scout:0 (parent {root_session})"),
            "r2:fixer:0 (parent r1:scout:0)".to_string()
        ]
    );
}
