//! Against real Dynamo (PyPI `ai-dynamo`, frontend + CPU mocker), both protocol generations.
//!
//! Run by `scripts/dynamo-e2e.sh`, which installs Dynamo 1.2.1 and 1.6.1 into cached
//! virtualenvs and runs these tests (`--ignored`) inside a network namespace with only
//! loopback. A plain `cargo test` lists them as ignored; run by hand without
//! `WORKER_DYNAMO_E2E` (the install cache) they fail, naming the script.
//!
//! For each version: worker runs directly against the frontend (the mocker streams no text
//! and stops at max_tokens, so the run ends with `length`, exit 1), and Dynamo's trace must
//! hold one request row per model request, with worker's identity and x-request-id, matching
//! worker's own `--trace-file` field by field. Then a tool-using run goes through a scripted
//! server that forwards each request verbatim to Dynamo before answering with tool calls,
//! with the ZeroMQ tee pointed at Dynamo's ingest: every tool call must appear in Dynamo's
//! trace, on the same trajectory, after the request that asked for it, and a subagent
//! started from bash must land with its rewritten trajectory and parent.

use std::path::Path;

use crate::support::mock_llm::*;
use crate::support::run_worker;
use serde_json::{Value, json};

mod stack;

use stack::*;

/// The trajectory and parent a Dynamo row carries, in either schema.
fn identity(row: &Value) -> (Option<String>, Option<String>) {
    let event = &row["event"];
    let ctx = &event["agent_context"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    if event["schema"] == "dynamo.agent.trace.v1" {
        (
            text(&ctx["trajectory_id"]),
            text(&ctx["parent_trajectory_id"]),
        )
    } else {
        (text(&ctx["session_id"]), text(&ctx["parent_session_id"]))
    }
}

fn of_type<'a>(rows: &'a [Value], kind: &str, trajectory: &str) -> Vec<&'a Value> {
    rows.iter()
        .filter(|r| {
            r["event"]["event_type"] == kind && identity(r).0.as_deref() == Some(trajectory)
        })
        .collect()
}

fn local_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn same_kind(a: &Value, b: &Value) -> bool {
    (a.is_number() && b.is_number())
        || (a.is_string() && b.is_string())
        || (a.is_object() && b.is_object())
        || (a.is_array() && b.is_array())
        || (a.is_boolean() && b.is_boolean())
}

/// A row of worker's `--trace-file` against the row Dynamo wrote for the same request.
fn compare_request_rows(ours: &Value, theirs: &Value, version: &str) {
    assert!(
        ours["timestamp"].is_u64() && theirs["timestamp"].is_u64(),
        "envelope timestamps"
    );
    let (o, t) = (&ours["event"], &theirs["event"]);
    for key in [
        "event_type",
        "event_time_unix_ms",
        "event_source",
        "agent_context",
        "request",
    ] {
        assert!(
            same_kind(&o[key], &t[key]),
            "{version}: event.{key}: ours {} vs Dynamo {}",
            o[key],
            t[key]
        );
    }
    assert_eq!(o["event_type"], t["event_type"]);
    if version == "1.2.1" {
        assert_eq!(o["schema"], t["schema"]);
        assert_eq!(o["agent_context"], t["agent_context"], "the same four ids");
    } else {
        assert_eq!(t["schema"], "dynamo.request.trace.v1");
        assert_eq!(
            t["agent_context"]["session_id"],
            o["agent_context"]["trajectory_id"]
        );
        assert_eq!(
            t["agent_context"]["parent_session_id"],
            o["agent_context"]["parent_trajectory_id"]
        );
    }
    let (or, tr) = (&o["request"], &t["request"]);
    for key in [
        "request_id",
        "x_request_id",
        "model",
        "input_tokens",
        "output_tokens",
    ] {
        assert_eq!(or[key], tr[key], "{version}: request.{key}");
    }
    for (key, value) in or.as_object().unwrap() {
        if let Some(theirs) = tr.get(key) {
            assert!(
                same_kind(value, theirs),
                "{version}: request.{key}: {value} vs {theirs}"
            );
        }
    }
    // Both clocks are this machine's: the two measurements of one request agree closely.
    let (ours_start, theirs_start) = (
        or["request_received_ms"].as_f64().unwrap(),
        tr["request_received_ms"].as_f64().unwrap(),
    );
    assert!(
        (ours_start - theirs_start).abs() < 1000.0,
        "{version}: received {ours_start} vs {theirs_start}"
    );
}

fn direct_run(stack: &Stack, expected_protocol: &str) {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    let local = ws.path().join("direct-trace.jsonl");
    let trajectory = format!("direct-{version}");
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            "dynamo/default",
            "--max-tokens",
            "8",
            "--no-builtin-tools",
            "--trace-file",
            local.to_str().unwrap(),
        ],
        "hello world",
        &[
            ("DYNAMO_BASE_URL", &stack.url()),
            ("DYN_AGENT_SESSION_ID", "e2e-session"),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
            ("DYN_AGENT_PARENT_TRAJECTORY_ID", "orchestrator"),
        ],
    );
    // The mocker stops every response at max_tokens: a `length` failure, as documented.
    run.assert_code(1);
    assert_eq!(run.first("agent_end")["stopReason"], "length", "{version}");
    assert_eq!(
        run.first("fatal_error")["error"]["kind"],
        "length",
        "{version}"
    );
    assert!(
        run.all("auto_retry_start").is_empty(),
        "{version}: the protocol switch is not a failure"
    );
    assert_eq!(
        run.first("trace_summary")["resolvedProtocol"],
        expected_protocol,
        "{version}"
    );
    let message = &run.all("message_end")[1]["message"];
    assert_eq!(message["usage"]["output"], 8, "{version}");

    let ours = local_rows(&local);
    assert_eq!(
        ours.len(),
        1,
        "{version}: one request_end in worker's own trace"
    );
    let x_request_id = ours[0]["event"]["request"]["x_request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let rows = stack.rows_until(|rows| of_type(rows, "request_end", &trajectory).len() == 1);
    let theirs = of_type(&rows, "request_end", &trajectory);
    assert_eq!(
        theirs.len(),
        1,
        "{version}: one request row per model request:\n{rows:#?}"
    );
    assert_eq!(
        theirs[0]["event"]["request"]["x_request_id"],
        x_request_id.as_str()
    );
    assert_eq!(
        identity(theirs[0]),
        (Some(trajectory.clone()), Some("orchestrator".into()))
    );
    compare_request_rows(&ours[0], theirs[0], version);
}

fn tool_run(stack: &Stack, expected_protocol: &str) {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let trajectory = format!("tools-{version}");
    let worker = env!("CARGO_BIN_EXE_worker");
    let subagent = format!(
        "PI_SUBAGENT_CHILD=1 PI_SUBAGENT_RUN_ID=e2e PI_SUBAGENT_CHILD_AGENT=helper DYNAMO_BASE_URL={} {worker} run --model dynamo/default --max-tokens 4 --no-builtin-tools 'sub-task' < /dev/null > child.jsonl 2>&1; echo subagent-exit=$?",
        stack.url()
    );
    let bash_args = json!({"command": subagent}).to_string();
    let forwarder = MockLlm::start_forwarding(
        &stack.url(),
        vec![
            Reply::Sse(vec![
                role(),
                tool_call(0, "call-bash", "bash", &bash_args),
                tool_call(1, "call-read", "read", "{\"path\":\"a.txt\"}"),
                finish("tool_calls"),
                done(),
            ]),
            call("call-missing", "read", "{\"path\":\"missing.txt\"}"),
            answer("done"),
        ],
    );
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            &format!("dynamo/{}", stack.model),
            "--max-tokens",
            "8",
        ],
        "use some tools",
        &[
            ("DYNAMO_BASE_URL", &forwarder.url),
            ("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", &stack.ingest()),
            ("DYN_AGENT_SESSION_ID", "e2e-session"),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
        ],
    );
    run.assert_code(0);
    assert_eq!(
        run.first("tool_execution_end")["result"]["content"][0]["text"],
        "subagent-exit=1",
        "{version}: the subagent ran (and hit length)"
    );
    let summary = run.first("trace_summary");
    assert_eq!(summary["resolvedProtocol"], expected_protocol, "{version}");
    assert_eq!(
        (
            summary["toolEventsSent"].as_u64(),
            summary["toolEventsDropped"].as_u64(),
            summary["toolEventsUnconfirmed"].as_u64()
        ),
        (Some(6), Some(0), Some(0)),
        "{version}"
    );

    let calls = ["call-bash", "call-read", "call-missing"];
    let rows = stack.rows_until(|rows| {
        of_type(rows, "request_end", &trajectory).len() == 3
            && calls.iter().all(|c| {
                rows.iter()
                    .filter(|r| r["event"]["tool"]["tool_call_id"] == *c)
                    .count()
                    == 2
            })
            && !of_type(rows, "request_end", "e2e:helper:0").is_empty()
    });
    let mut requests: Vec<u64> = of_type(&rows, "request_end", &trajectory)
        .iter()
        .map(|r| r["event"]["event_time_unix_ms"].as_u64().unwrap())
        .collect();
    requests.sort();
    assert_eq!(
        requests.len(),
        3,
        "{version}: three request rows\n{}",
        stack.logs()
    );
    for (turn, call_id, terminal, status) in [
        (0, "call-bash", "tool_end", "succeeded"),
        (0, "call-read", "tool_end", "succeeded"),
        (1, "call-missing", "tool_error", "error"),
    ] {
        let tool_rows: Vec<&Value> = rows
            .iter()
            .filter(|r| r["event"]["tool"]["tool_call_id"] == call_id)
            .collect();
        let kinds: Vec<&str> = tool_rows
            .iter()
            .map(|r| r["event"]["event_type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.len(), 2, "{version}: {call_id}: {kinds:?}");
        assert!(
            kinds.contains(&"tool_start") && kinds.contains(&terminal),
            "{version}: {call_id}: {kinds:?}"
        );
        for row in &tool_rows {
            assert_eq!(
                identity(row).0.as_deref(),
                Some(trajectory.as_str()),
                "{version}: joined to the requests by trajectory"
            );
            assert_eq!(row["event"]["event_source"], "harness");
            let started = row["event"]["tool"]["started_at_unix_ms"].as_u64().unwrap();
            assert!(
                started >= requests[turn],
                "{version}: {call_id} started at {started}, before its request ended at {}",
                requests[turn]
            );
        }
        let end = tool_rows
            .iter()
            .find(|r| r["event"]["event_type"] == terminal)
            .unwrap();
        assert_eq!(end["event"]["tool"]["status"], status);
        assert_eq!(
            end["event"]["tool"]["tool_class"],
            if call_id == "call-bash" {
                "bash"
            } else {
                "read"
            }
        );
    }
    // The subagent started from bash: its own trajectory, this run as its parent.
    let child = of_type(&rows, "request_end", "e2e:helper:0");
    assert_eq!(child.len(), 1, "{version}: the subagent's request row");
    assert_eq!(identity(child[0]).1.as_deref(), Some(trajectory.as_str()));
    if version == "1.2.1" {
        assert_eq!(
            child[0]["event"]["agent_context"]["session_id"], "e2e-session",
            "the session is shared down the tree"
        );
    }
}

fn exercise(version: &'static str, expected_protocol: &str) {
    let cache = cache();
    let stack = Stack::boot(&cache, version);
    direct_run(&stack, expected_protocol);
    tool_run(&stack, expected_protocol);
}

#[test]
#[ignore = "needs real Dynamo: scripts/dynamo-e2e.sh"]
fn dynamo_1_2_1_agent_trace() {
    exercise("1.2.1", "agent");
}

#[test]
#[ignore = "needs real Dynamo: scripts/dynamo-e2e.sh"]
fn dynamo_1_6_1_request_trace() {
    exercise("1.6.1", "request");
}
