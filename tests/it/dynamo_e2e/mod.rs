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
//!
//! Subagents: a run fanning out to two `task` children lands each child on a trajectory of
//! its own under the run's, and prints the share of the siblings' first prompts Dynamo served
//! from its prefix cache.
//!
//! Serving: a run with every hint and `--session-final` must not fail over a hint, must
//! report the worker Dynamo says served it, and must end its session in Dynamo's trace; a
//! five-turn task through the forwarding server, with hints and without, prints the share
//! of prompt tokens Dynamo served from its prefix cache on turns 2 and later (the stack
//! routes by KV overlap over two mocker workers).

use crate::support::mock_llm::*;
use crate::support::{read_jsonl, run_worker};
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

    let ours = read_jsonl(&local);
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
    let local = ws.path().join("tools-trace.jsonl");
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            &format!("dynamo/{}", stack.model),
            "--max-tokens",
            "8",
            "--trace-file",
            local.to_str().unwrap(),
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
        run.tool_event_counts(),
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
    // Join keys: each call names the request that asked for it and the one that carried its
    // result back, in worker's trace and, where Dynamo keeps them, in Dynamo's.
    // The requests the server accepted, in order (on 1.6.1 turn 0's first attempt is refused
    // for its body identity, so its accepted request is attempt 2).
    let accepted: Vec<String> = read_jsonl(&local)
        .iter()
        .filter(|r| r["event"]["event_type"] == "request_end")
        .map(|r| {
            r["event"]["request"]["x_request_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let session = run.events[0]["id"].as_str().unwrap();
    assert!(
        accepted.iter().all(|id| id.starts_with(session)),
        "{accepted:?}"
    );
    let keys = |tool: &Value| {
        (
            tool["source_request_id"].as_str().map(str::to_string),
            tool["consumer_request_id"].as_str().map(str::to_string),
        )
    };
    for (call_id, turn) in [("call-bash", 0), ("call-read", 0), ("call-missing", 1)] {
        let expected = (
            Some(accepted[turn].clone()),
            Some(accepted[turn + 1].clone()),
        );
        let ours = read_jsonl(&local)
            .into_iter()
            .find(|r| {
                r["event"]["tool"]["tool_call_id"] == call_id
                    && r["event"]["event_type"] != "tool_start"
            })
            .unwrap();
        assert_eq!(
            keys(&ours["event"]["tool"]),
            expected,
            "{version}: {call_id}"
        );
    }
    dynamo_drops_extra_tool_fields(stack);

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

/// Dynamo ingests a tool record with extra fields but leaves them out of its row, which is
/// why the bridge keeps the join keys out of what it sends. Should a version keep them, this
/// fails, and the bridge should send them.
fn dynamo_drops_extra_tool_fields(stack: &Stack) {
    use worker::dynamo::identity::AgentIdentity;
    use worker::dynamo::records::*;
    let version = stack.version;
    let identity = AgentIdentity {
        session_type_id: "worker".into(),
        session_id: "probe".into(),
        trajectory_id: format!("extra-fields-{version}"),
        parent_trajectory_id: None,
    };
    let now = worker::events::now_millis();
    let tool = ToolEvent {
        tool_call_id: "probe-call".into(),
        tool_class: "bash".into(),
        started_at_unix_ms: Some(now),
        ended_at_unix_ms: Some(now + 1),
        status: Some(ToolStatus::Succeeded),
        duration_ms: Some(1.0),
        output_bytes: Some(1),
        error_type: None,
        source_request_id: Some("probe:r0:t0:a1".into()),
        consumer_request_id: Some("probe:r0:t1:a1".into()),
        parent_request_id: Some("parent:r0:t0:a1".into()),
    };
    let payload = if version == "1.2.1" {
        to_msgpack(&AgentTraceRecord::tool(
            EventType::ToolEnd,
            now + 1,
            &identity,
            &tool,
        ))
    } else {
        to_msgpack(&RequestTraceIngress::tool(
            EventType::ToolEnd,
            now + 1,
            &identity,
            &tool,
        ))
    }
    .unwrap();
    let counts = block_on(async {
        let relay =
            worker::dynamo::relay::Relay::start(&stack.ingest(), worker::dynamo::DEFAULT_TOPIC, 16)
                .unwrap();
        relay.publish(payload);
        // Let the connection come up before closing (close drops what an unconnected relay
        // holds).
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        relay.close(std::time::Duration::from_secs(2)).await
    });
    assert_eq!(counts.dropped, 0, "{version}: {counts:?}");
    let rows = stack.rows_until(|rows| {
        rows.iter()
            .any(|r| r["event"]["tool"]["tool_call_id"] == "probe-call")
    });
    let row = rows
        .iter()
        .find(|r| r["event"]["tool"]["tool_call_id"] == "probe-call")
        .unwrap_or_else(|| panic!("{version}: the record with extra fields was not ingested"));
    let kept: Vec<&str> = [
        "source_request_id",
        "consumer_request_id",
        "parent_request_id",
    ]
    .into_iter()
    .filter(|key| row["event"]["tool"].get(*key).is_some())
    .collect();
    println!("dynamo {version}: a tool record with join keys is ingested; its row keeps {kept:?}");
    assert!(
        kept.is_empty(),
        "{version} keeps {kept:?}: send the join keys over ZeroMQ"
    );
}

/// Every hint, the serving report and the end-of-session marker against Dynamo itself.
fn serving_run(stack: &Stack) {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    let trajectory = format!("serving-{version}");
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            "dynamo/default",
            "--max-tokens",
            "8",
            "--priority",
            "3",
            "--strict-priority",
            "1",
            "--timeout",
            "60s",
            "--session-final",
        ],
        "hello world",
        &[
            ("DYNAMO_BASE_URL", &stack.url()),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
        ],
    );
    // The mocker stops at max_tokens (exit 1, as in the direct run); no hint failed it.
    run.assert_code(1);
    assert_eq!(run.first("agent_end")["stopReason"], "length", "{version}");
    assert!(run.all("auto_retry_start").is_empty(), "{version}");
    let summary = run.first("trace_summary");
    assert!(
        summary.get("hintsRefused").is_none(),
        "{version}: refused {}",
        summary["hintsRefused"]
    );
    assert_eq!(summary["sessionFinal"]["status"], 200, "{version}");
    let serving = &run.first("turn_end")["serving"];
    println!("dynamo {version}: turn_end.serving = {serving}");
    let worker_id = serving["workerId"]
        .as_str()
        .unwrap_or_else(|| panic!("{version}: no workerId in {serving}"));
    assert!(serving["ttftMs"].is_number(), "{version}: {serving}");
    // Attempt 2 on 1.6.1, which refuses the first attempt's body identity.
    let session = run.events[0]["id"].as_str().unwrap();
    let request_id = serving["requestId"].as_str().unwrap().to_string();
    assert!(
        request_id.starts_with(&format!("{session}:r0:t0:a")),
        "{request_id}"
    );

    let final_id = format!("{request_id}:final");
    let rows = stack.rows_until(|rows| {
        rows.iter()
            .any(|r| r["event"]["request"]["x_request_id"] == final_id.as_str())
    });
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["event"]["request"]["x_request_id"] == id)
            .unwrap_or_else(|| panic!("{version}: no row for {id}\n{}", stack.logs()))
    };
    // The worker reported on turn_end is the one Dynamo's own trace names.
    let decode = &row(&request_id)["event"]["request"]["worker"]["decode_worker_id"];
    assert_eq!(decode.to_string(), worker_id, "{version}");
    let marker = row(&final_id);
    assert_eq!(marker["event"]["request"]["output_tokens"], 1, "{version}");
    if version != "1.2.1" {
        assert_eq!(
            marker["event"]["agent_context"]["session_final"], true,
            "{version}: Dynamo read the end of the session"
        );
    }
}

/// A five-turn task through the forwarding server; returns the share of prompt tokens
/// Dynamo served from cache on turns 2 and later, by its own trace.
fn cache_run(stack: &Stack, hints: bool) -> f64 {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n".repeat(40)).unwrap();
    let trajectory = format!("cache-{version}-{}", if hints { "hints" } else { "plain" });
    let forwarder = MockLlm::start_forwarding(
        &stack.url(),
        vec![
            call("c1", "read", r#"{"path":"a.txt"}"#),
            call("c2", "ls", "{}"),
            call("c3", "bash", r#"{"command":"echo one; echo two"}"#),
            call("c4", "grep", r#"{"pattern":"alpha","path":"."}"#),
            answer("done"),
        ],
    );
    let mut args = vec![
        "--model".to_string(),
        format!("dynamo/{}", stack.model),
        "--max-tokens".to_string(),
        "8".to_string(),
    ];
    if !hints {
        args.push("--no-serving-hints".to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_worker(
        ws.path(),
        &args,
        "look around this project",
        &[
            ("DYNAMO_BASE_URL", &forwarder.url),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
        ],
    );
    run.assert_code(0);
    let session = run.events[0]["id"].as_str().unwrap().to_string();
    let ours = |r: &Value| {
        r["event"]["request"]["x_request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with(&format!("{session}:r0:t")))
    };
    let rows = stack.rows_until(|rows| rows.iter().filter(|r| ours(r)).count() == 5);
    let mut turns: Vec<&Value> = rows.iter().filter(|r| ours(r)).collect();
    assert_eq!(turns.len(), 5, "{version}: five request rows");
    turns.sort_by_key(|r| {
        r["event"]["request"]["x_request_id"]
            .as_str()
            .unwrap()
            .to_string()
    });
    let count = |r: &Value, key: &str| r["event"]["request"][key].as_u64().unwrap_or(0);
    let (cached, input) = turns[1..].iter().fold((0, 0), |(c, i), r| {
        (c + count(r, "cached_tokens"), i + count(r, "input_tokens"))
    });
    let workers: std::collections::BTreeSet<String> = turns
        .iter()
        .map(|r| r["event"]["request"]["worker"]["decode_worker_id"].to_string())
        .collect();
    let others = rows
        .iter()
        .filter(|r| {
            identity(r).0.as_deref() == Some(trajectory.as_str())
                && r["event"]["event_type"] == "request_end"
                && !ours(r)
        })
        .count();
    let ratio = cached as f64 / input.max(1) as f64;
    println!(
        "dynamo {version}: hints {}: turns 2-5 served {cached} of {input} prompt tokens from cache ({:.1}%), on {} worker(s); {others} other request row(s) on the session",
        if hints { "on" } else { "off" },
        ratio * 100.0,
        workers.len()
    );
    ratio
}

/// A run that fans out to two subagents (`task`) through the forwarding server: Dynamo's
/// trace holds the run's requests on its trajectory and each child's on a trajectory of its
/// own whose parent is the run's. Prints how much of the siblings' first prompts Dynamo
/// served from its prefix cache, against the shared prefix (system prompt and tools).
fn subagent_run(stack: &Stack) -> f64 {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    let trajectory = format!("fanout-{version}");
    let task = |id: &str, index: u32, prompt: &str| {
        tool_call(
            index,
            id,
            "task",
            &json!({"description": "look", "prompt": prompt}).to_string(),
        )
    };
    let forwarder = MockLlm::start_forwarding(
        &stack.url(),
        vec![
            Reply::Sse(vec![
                role(),
                task("t1", 0, "list the files here"),
                task("t2", 1, "read the README"),
                finish("tool_calls"),
                done(),
            ]),
            answer("a child's answer"),
            answer("a child's answer"),
            answer("both answered"),
        ],
    );
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            &format!("dynamo/{}", stack.model),
            "--max-tokens",
            "8",
            "--subagents",
        ],
        "split this in two",
        &[
            ("DYNAMO_BASE_URL", &forwarder.url),
            ("DYN_AGENT_SESSION_ID", "e2e-session"),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
        ],
    );
    run.assert_code(0);
    let children: Vec<String> = run
        .all("subagent_start")
        .iter()
        .map(|start| start["childSessionId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(children.len(), 2, "{version}");
    let rows = stack.rows_until(|rows| {
        of_type(rows, "request_end", &trajectory).len() == 2
            && children
                .iter()
                .all(|child| of_type(rows, "request_end", child).len() == 1)
    });
    assert_eq!(
        of_type(&rows, "request_end", &trajectory).len(),
        2,
        "{version}: the run's two requests on its own trajectory\n{}",
        stack.logs()
    );
    let (mut cached, mut input) = (0, 0);
    for child in &children {
        let row = of_type(&rows, "request_end", child)[0];
        assert_eq!(
            identity(row),
            (Some(child.clone()), Some(trajectory.clone())),
            "{version}: a child is a trajectory under the run's"
        );
        let count = |key: &str| row["event"]["request"][key].as_u64().unwrap_or(0);
        cached += count("cached_tokens");
        input += count("input_tokens");
    }
    let ratio = cached as f64 / input.max(1) as f64;
    println!(
        "dynamo {version}: subagents: the siblings' first requests were served {cached} of {input} prompt tokens from cache ({:.1}%)",
        ratio * 100.0
    );
    ratio
}

fn exercise(version: &'static str, expected_protocol: &str) {
    let cache = cache();
    let stack = Stack::boot(&cache, version);
    direct_run(&stack, expected_protocol);
    tool_run(&stack, expected_protocol);
    subagent_run(&stack);
    serving_run(&stack);
    for hints in [true, false] {
        let ratio = cache_run(&stack, hints);
        // Each request extends the one before byte for byte: the prefix cache serves most
        // of every later prompt.
        assert!(
            ratio > 0.5,
            "{version}: only {:.1}% of later prompts came from cache",
            ratio * 100.0
        );
    }
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
