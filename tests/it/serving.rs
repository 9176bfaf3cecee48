//! Serving on Dynamo through the real binary, against a scripted server: the hints each
//! request carries, their degradation when the server refuses one, the serving report on
//! `turn_end`, the request ids and tool-record join keys, a 529 retried, and the
//! end-of-session marker.

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::stalling::Stalling;
use crate::support::{Run, read_jsonl, run_worker};

fn dynamo(mock: &MockLlm, args: &[&str], env: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut all = vec!["--model", "dynamo/m", "--retry-base-delay", "5ms"];
    all.extend_from_slice(args);
    let mut env = env.to_vec();
    env.push(("DYNAMO_BASE_URL", &mock.url));
    let run = run_worker(dir.path(), &all, "go", &env);
    (dir, run)
}

fn session(run: &Run) -> String {
    run.events[0]["id"].as_str().unwrap().to_string()
}

fn request_ids(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|r| r.headers["x-request-id"].clone())
        .collect()
}

/// A tool call whose usage reports `completion` output tokens.
fn call_with(id: &str, completion: u64) -> Reply {
    Reply::Sse(vec![
        role(),
        tool_call(0, id, "ls", "{}"),
        finish("tool_calls"),
        usage(100, completion, 0),
        done(),
    ])
}

#[test]
fn every_request_carries_the_hints_of_its_turn() {
    let mock = MockLlm::start(vec![call_with("c1", 37), answer("done")]);
    let (_dir, run) = dynamo(
        &mock,
        &[
            "--priority",
            "-3",
            "--strict-priority",
            "2",
            "--tenant",
            "acme",
            "--max-tokens",
            "30",
        ],
        &[],
    );
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    // Turn 0 offers tools, and nothing predicts its length yet.
    assert_eq!(
        requests[0].body["nvext"]["agent_hints"],
        json!({"priority": -3, "strict_priority": 2, "speculative_prefill": true})
    );
    // Turn 1: the expected output length from turn 0 (37), capped by --max-tokens.
    assert_eq!(
        requests[1].body["nvext"]["agent_hints"],
        json!({"priority": -3, "strict_priority": 2, "osl": 30, "speculative_prefill": true})
    );
    for request in &requests {
        assert_eq!(
            request.body["nvext"]["extra_fields"],
            json!(["worker_id", "timing"])
        );
        assert_eq!(request.headers["x-tenant-id"], "acme");
    }
    let session = session(&run);
    assert_eq!(
        request_ids(&mock),
        [format!("{session}:r0:t0:a1"), format!("{session}:r0:t1:a1")]
    );
}

#[test]
fn the_environment_sets_the_hints_and_no_serving_hints_turns_them_off() {
    let mock = MockLlm::start(vec![call_with("c1", 5), answer("done")]);
    let (_dir, run) = dynamo(
        &mock,
        &[],
        &[
            ("DYN_AGENT_PRIORITY", "7"),
            ("DYN_AGENT_STRICT_PRIORITY", "1"),
        ],
    );
    run.assert_code(0);
    assert_eq!(
        mock.requests()[0].body["nvext"]["agent_hints"],
        json!({"priority": 7, "strict_priority": 1, "speculative_prefill": true})
    );

    let mock = MockLlm::start(vec![call_with("c1", 5), answer("done")]);
    let (_dir, run) = dynamo(&mock, &["--priority", "7", "--no-serving-hints"], &[]);
    run.assert_code(0);
    for request in mock.requests() {
        assert!(request.body["nvext"].get("agent_hints").is_none());
        // The serving report is still asked for.
        assert!(request.body["nvext"]["extra_fields"].is_array());
    }
}

#[test]
fn a_deadline_raises_the_priority_as_the_budget_runs_out() {
    // The first answer takes 2.2 s of a 4 s budget: the second request is past 50% of it
    // (and, unless this machine stalls for another 0.8 s, not yet past 75%).
    let slow = Reply::Sse(vec![
        role(),
        Frame::Delay(std::time::Duration::from_millis(2200)),
        tool_call(0, "c1", "ls", "{}"),
        finish("tool_calls"),
        usage(10, 5, 0),
        done(),
    ]);
    let mock = MockLlm::start(vec![slow, answer("done")]);
    let (_dir, run) = dynamo(&mock, &["--priority", "5", "--timeout", "4s"], &[]);
    run.assert_code(0);
    let priorities: Vec<i64> = mock
        .requests()
        .iter()
        .map(|r| r.body["nvext"]["agent_hints"]["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities[0], 5, "the budget is fresh");
    assert!(
        priorities[1] == 6 || priorities[1] == 7,
        "raised once past half the budget: {priorities:?}"
    );
}

#[test]
fn a_refused_hint_is_dropped_for_the_rest_of_the_run_after_one_resend() {
    for (key, path) in [
        ("agent_hints", "nvext.agent_hints"),
        ("priority", "nvext.agent_hints.priority"),
        ("strict_priority", "nvext.agent_hints.strict_priority"),
        ("osl", "nvext.agent_hints.osl"),
        (
            "speculative_prefill",
            "nvext.agent_hints.speculative_prefill",
        ),
        ("extra_fields", "nvext.extra_fields"),
    ] {
        // Dynamo 1.3+'s wording for an unknown field, listing what it knows after it.
        let refusal = format!(
            r#"{{"message":"Failed to deserialize the JSON body into the target type: unknown field `{key}`, expected one of `greed_sampling`, `agent_hints`","type":"Bad Request","code":400}}"#
        );
        let mock = MockLlm::start(vec![
            call_with("c1", 5),
            status(400, &refusal),
            call_with("c2", 5),
            answer("done"),
        ]);
        let (_dir, run) = dynamo(
            &mock,
            &[
                "--priority",
                "1",
                "--strict-priority",
                "1",
                "--max-retries",
                "0",
            ],
            &[],
        );
        run.assert_code(0);
        assert!(run.all("auto_retry_start").is_empty(), "{key}: not a retry");
        let sent = |i: usize| {
            let body = &mock.requests()[i].body;
            match key {
                "agent_hints" | "extra_fields" => body["nvext"].get(key).is_some(),
                _ => body["nvext"]["agent_hints"].get(key).is_some(),
            }
        };
        assert_eq!(mock.requests().len(), 4, "{key}");
        assert!(sent(1), "{key} was in the refused request");
        assert!(!sent(2) && !sent(3), "{key} stays off for the run");
        let session = session(&run);
        assert_eq!(
            request_ids(&mock),
            [
                format!("{session}:r0:t0:a1"),
                format!("{session}:r0:t1:a1"),
                format!("{session}:r0:t1:a2"),
                format!("{session}:r0:t2:a1"),
            ]
        );
        assert_eq!(
            run.first("trace_summary")["hintsRefused"],
            json!([path]),
            "{key}"
        );
        assert!(
            run.stderr.contains(&format!(
                "Dynamo refused {path} (HTTP 400); this run's requests went on without it"
            )),
            "{key}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_400_naming_no_hint_is_a_failure_not_a_resend() {
    let mock = MockLlm::start(vec![status(400, "unknown field `temperature_x`")]);
    let (_dir, run) = dynamo(&mock, &["--max-retries", "0"], &[]);
    run.assert_code(1);
    assert_eq!(mock.requests().len(), 1);
    assert!(run.first("trace_summary").get("hintsRefused").is_none());
}

#[test]
fn a_529_with_retry_after_is_retried() {
    let mock = MockLlm::start(vec![
        Reply::Status {
            code: 529,
            body: r#"{"message":"policy queue full","code":529}"#.into(),
            retry_after: Some("0".into()),
        },
        answer("done"),
    ]);
    let (_dir, run) = dynamo(&mock, &[], &[]);
    run.assert_code(0);
    let retry = run.first("auto_retry_start");
    assert_eq!(retry["attempt"], 1);
    assert!(
        retry["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 529"),
        "{retry}"
    );
    assert_eq!(run.first("auto_retry_end")["success"], true);
    let session = session(&run);
    assert_eq!(
        request_ids(&mock),
        [format!("{session}:r0:t0:a1"), format!("{session}:r0:t0:a2")]
    );
}

/// Dynamo 1.6.1's response extension, as its frontend streams it.
fn dynamo_answer() -> Reply {
    let worker = json!({"prefill_worker_id": 9789333173440994938u64, "prefill_dp_rank": 0,
                        "decode_worker_id": 9789333173440994938u64, "decode_dp_rank": 0});
    let frame = |delta: Value, finish: Option<&str>, timing: Option<Value>| {
        let mut nvext = json!({"worker_id": worker});
        if let Some(timing) = timing {
            nvext["timing"] = timing;
        }
        Frame::Data(
            json!({"id": "chatcmpl-d", "model": "m", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "nvext": nvext})
            .to_string(),
        )
    };
    Reply::Sse(vec![
        frame(json!({"role": "assistant"}), None, None),
        frame(json!({"content": "done"}), None, None),
        frame(
            json!({}),
            Some("stop"),
            Some(json!({"request_received_ms": 1795451941561u64, "prefill_wait_time_ms": 1.3,
                        "prefill_time_ms": 2.47, "ttft_ms": 3.77, "total_time_ms": 14.84,
                        "kv_hit_rate": 0.96875, "router_queue_depth": 0})),
        ),
        Frame::Data(
            json!({"id": "chatcmpl-d", "choices": [], "usage": {"prompt_tokens": 2010, "completion_tokens": 10,
                   "total_tokens": 2020, "prompt_tokens_details": {"cached_tokens": 1984}}})
            .to_string(),
        ),
        done(),
    ])
}

#[test]
fn the_serving_report_reaches_turn_end_and_the_run_totals() {
    let mock = MockLlm::start(vec![dynamo_answer()]);
    let (_dir, run) = dynamo(&mock, &[], &[]);
    run.assert_code(0);
    let session = session(&run);
    // (14.84 - 3.77) ms over the 9 tokens after the first.
    assert_eq!(
        run.first("turn_end")["serving"],
        json!({"requestId": format!("{session}:r0:t0:a1"), "workerId": "9789333173440994938", "dpRank": 0,
               "ttftMs": 3.77, "itlMs": 1.23, "queueMs": 1.3, "cachedTokens": 1984, "kvHitRate": 0.96875,
               "routerQueueDepth": 0})
    );
    assert_eq!(
        run.stats()["serving"],
        json!({"requests": 1, "promptTokens": 2010, "cachedTokens": 1984, "cachedRatio": 0.9871,
               "meanTtftMs": 3.77, "meanQueueMs": 1.3, "workers": 1})
    );
}

#[test]
fn tool_records_carry_the_request_that_asked_and_the_one_that_answered() {
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "bash",
            r#"{"command":"echo \"$DYN_AGENT_PARENT_REQUEST_ID\""}"#,
        ),
        // The request carrying the result back fails once: the accepted resend consumes it.
        status(503, "busy"),
        answer("done"),
    ]);
    let (_dir, run) = dynamo(
        &mock,
        &["--trace-file", trace.path().to_str().unwrap()],
        &[],
    );
    run.assert_code(0);
    let session = session(&run);
    let source = format!("{session}:r0:t0:a1");
    let consumer = format!("{session}:r0:t1:a2");
    // A process started by the call knows the request that asked for it.
    assert_eq!(
        run.first("tool_execution_end")["result"]["content"][0]["text"],
        source.as_str()
    );
    let rows = read_jsonl(trace.path());
    let tool = |kind: &str| {
        rows.iter()
            .find(|r| r["event"]["event_type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {rows:#?}"))["event"]["tool"]
            .clone()
    };
    assert_eq!(tool("tool_start")["source_request_id"], source.as_str());
    assert!(tool("tool_start").get("consumer_request_id").is_none());
    assert_eq!(tool("tool_end")["source_request_id"], source.as_str());
    assert_eq!(tool("tool_end")["consumer_request_id"], consumer.as_str());
    // The request rows carry the same ids: the join is exact.
    let requests: Vec<&Value> = rows
        .iter()
        .filter(|r| r["event"]["event_type"] == "request_end")
        .map(|r| &r["event"]["request"]["x_request_id"])
        .collect();
    assert_eq!(requests, [&json!(source), &json!(consumer)]);
}

#[test]
fn a_run_started_by_a_tool_call_names_its_parent_request_everywhere() {
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mock = MockLlm::start(vec![call("c1", "ls", "{}"), answer("done")]);
    let (_dir, run) = dynamo(
        &mock,
        &["--trace-file", trace.path().to_str().unwrap()],
        &[("DYN_AGENT_PARENT_REQUEST_ID", "parent:r0:t4:a1")],
    );
    run.assert_code(0);
    let rows = read_jsonl(trace.path());
    assert_eq!(rows.len(), 4, "two requests, a start and an end");
    for row in &rows {
        let event = &row["event"];
        let body = if event["event_type"] == "request_end" {
            &event["request"]
        } else {
            &event["tool"]
        };
        assert_eq!(body["parent_request_id"], "parent:r0:t4:a1", "{row}");
    }
}

#[test]
fn a_call_the_run_never_answered_has_no_consumer() {
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mock = MockLlm::start(vec![call("c1", "ls", "{}")]);
    let (_dir, run) = dynamo(
        &mock,
        &[
            "--trace-file",
            trace.path().to_str().unwrap(),
            "--max-turns",
            "1",
        ],
        &[],
    );
    run.assert_code(3);
    let rows = read_jsonl(trace.path());
    let end = rows
        .iter()
        .find(|r| r["event"]["event_type"] == "tool_end")
        .expect("the held record is written at the end");
    assert!(end["event"]["tool"].get("consumer_request_id").is_none());
    assert_eq!(
        end["event"]["tool"]["source_request_id"],
        format!("{}:r0:t0:a1", session(&run))
    );
}

#[test]
fn session_final_sends_one_token_request_after_the_last_answer() {
    let mock = MockLlm::start(vec![
        answer("done"),
        Reply::Body {
            content_type: "application/json".into(),
            body: json!({"id": "chatcmpl-f", "object": "chat.completion", "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": null}, "finish_reason": "length"}],
                         "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
            .to_string(),
        },
    ]);
    let (_dir, run) = dynamo(
        &mock,
        &["--session-final", "--tenant", "acme"],
        &[("DYN_AGENT_TRAJECTORY_ID", "traj-9")],
    );
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let last = format!("{}:r0:t0:a1", session(&run));
    let marker = &requests[1];
    assert_eq!(marker.headers["x-dynamo-session-final"], "true");
    assert_eq!(marker.headers["x-dynamo-session-id"], "traj-9");
    assert_eq!(marker.headers["x-tenant-id"], "acme");
    assert_eq!(marker.headers["x-request-id"], format!("{last}:final"));
    assert_eq!(marker.body["max_tokens"], 1);
    assert_eq!(marker.body["stream"], false);
    assert!(
        !requests[0].headers.contains_key("x-dynamo-session-final"),
        "only the marker ends the session"
    );
    assert_eq!(
        run.first("trace_summary")["sessionFinal"],
        json!({"requestId": format!("{last}:final"), "status": 200})
    );
}

#[test]
fn a_failed_session_final_marker_is_reported_and_the_run_still_succeeds() {
    // Nothing scripted for the marker: the server answers 500.
    let mock = MockLlm::start(vec![answer("done")]);
    let (_dir, run) = dynamo(&mock, &["--session-final"], &[]);
    run.assert_code(0);
    assert_eq!(run.first("trace_summary")["sessionFinal"]["status"], 500);
    assert_eq!(mock.requests().len(), 2, "the marker is not retried");
}

/// The run's closing waits overlap: a session-final marker the server takes 1.5 s to answer
/// and a telemetry export to a collector that never answers (its 1 s timeout) end the run in
/// about 1.5 s, not 2.5, and both outcomes are reported.
#[test]
fn the_session_final_marker_and_the_telemetry_export_are_waited_for_together() {
    let mock = MockLlm::start(vec![
        answer("done"),
        delayed(std::time::Duration::from_millis(1500), answer(".")),
    ]);
    let collector = Stalling::start();
    let (_dir, run) = dynamo(
        &mock,
        &[
            "--session-final",
            "--otel",
            "--otel-endpoint",
            &collector.url(),
        ],
        &[],
    );
    run.assert_code(0);
    assert_eq!(run.first("trace_summary")["sessionFinal"]["status"], 200);
    assert!(
        run.stderr
            .contains("worker: telemetry: could not deliver traces to the collector"),
        "{}",
        run.stderr
    );
    assert!(collector.connections() >= 1, "the export was attempted");
    let closing = millis_between(run.first("agent_end"), run.last());
    eprintln!("agent_end to usage_snapshot: {closing} ms");
    assert!(
        (1400..2300).contains(&closing),
        "{closing} ms from agent_end to usage_snapshot"
    );
}

/// Milliseconds from one event's `timestamp` to another's.
fn millis_between(from: &Value, to: &Value) -> u128 {
    let at =
        |event: &Value| humantime::parse_rfc3339(event["timestamp"].as_str().unwrap()).unwrap();
    at(to).duration_since(at(from)).unwrap().as_millis()
}

#[test]
fn serving_flags_for_another_provider_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/length-limit/model.jsonl"
    );
    let run = run_worker(
        dir.path(),
        &["--model", &format!("replay/{fixture}"), "--priority", "3"],
        "go",
        &[],
    );
    assert!(
        run.stderr.contains(
            "--priority is for the dynamo provider; this run's model is not served by Dynamo"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn the_hints_are_the_same_in_every_trace_protocol() {
    for protocol in ["agent", "request", "off"] {
        let mock = MockLlm::start(vec![answer("done")]);
        let (_dir, run) = dynamo(
            &mock,
            &["--dynamo-trace-protocol", protocol, "--priority", "2"],
            &[],
        );
        run.assert_code(0);
        let request = &mock.requests()[0];
        let nvext = &request.body["nvext"];
        assert_eq!(
            nvext["agent_hints"],
            json!({"priority": 2, "speculative_prefill": true}),
            "{protocol}"
        );
        assert_eq!(
            nvext["extra_fields"],
            json!(["worker_id", "timing"]),
            "{protocol}"
        );
        // The identity beside them, in the protocol's own form.
        assert_eq!(
            (
                nvext.get("agent_context").is_some(),
                request.headers.contains_key("x-dynamo-session-id")
            ),
            match protocol {
                "agent" => (true, false),
                "request" => (false, true),
                _ => (false, false),
            },
            "{protocol}"
        );
    }
}
