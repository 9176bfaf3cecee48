//! Failures of the model server: retried, reported, never a hang.

use super::*;

#[test]
fn a_500_is_retried_visibly_and_counted() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        status(500, "{\"error\":{\"message\":\"worker crashed\"}}"),
        answer("recovered"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    let start = run.first("auto_retry_start");
    assert_eq!(start["attempt"], 1);
    assert_eq!(start["maxAttempts"], worker::config::defaults::MAX_RETRIES);
    assert_eq!(
        start["errorMessage"],
        "HTTP 500 Internal Server Error: worker crashed"
    );
    assert!(start["delayMs"].as_u64().unwrap() < 100);
    let end = run.first("auto_retry_end");
    assert_eq!(end["success"], true);
    assert_eq!(end["attempt"], 1);
    assert_eq!(run.stats()["llmRequests"], 2);
    assert_eq!(
        run.all("message_start").len(),
        2,
        "the failed attempt shows no assistant message"
    );
}

#[test]
fn a_429_waits_as_long_as_retry_after_says() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        Reply::Status {
            code: 429,
            body: "slow down".into(),
            retry_after: Some("1".into()),
        },
        answer("ok"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    assert_eq!(run.first("auto_retry_start")["delayMs"], 1000);
    let requests = mock.requests();
    let gap = requests[1].at.duration_since(requests[0].at);
    assert!(gap >= Duration::from_millis(950), "{gap:?}");
}

#[test]
fn retries_give_up_after_max_retries_with_a_fatal_http_error() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        status(503, "busy"),
        status(503, "busy"),
        status(503, "busy"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &["--max-retries", "2"], "q");
    run.assert_code(1);
    assert_eq!(run.all("auto_retry_start").len(), 2);
    let end = run.first("auto_retry_end");
    assert_eq!(
        end,
        &json!({"type": "auto_retry_end", "success": false, "attempt": 2, "finalError": "HTTP 503 Service Unavailable: busy", "sessionId": end["sessionId"], "timestamp": end["timestamp"]})
    );
    assert_eq!(
        run.first("fatal_error")["error"],
        json!({"kind": "http", "name": "HttpError", "message": "HTTP 503 Service Unavailable: busy"})
    );
    assert_eq!(
        run.outline()[run.outline().len() - 6..],
        [
            "message_end",
            "turn_end",
            "fatal_error",
            "agent_end",
            "trace_summary",
            "usage_snapshot"
        ]
    );
    assert_eq!(run.first("agent_end")["stopReason"], "error");
    let message = &run.all("message_end")[1]["message"];
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "HTTP 503 Service Unavailable: busy"
    );
    assert_eq!(run.stats()["llmRequests"], 3);
}

#[test]
fn a_401_is_not_retried() {
    let dir = workspace();
    let mock = MockLlm::start(vec![status(
        401,
        "{\"error\":{\"message\":\"invalid api key\"}}",
    )]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(1);
    assert!(run.all("auto_retry_start").is_empty());
    assert_eq!(
        run.first("fatal_error")["error"],
        json!({"kind": "http", "name": "HttpError", "message": "HTTP 401 Unauthorized: invalid api key"})
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_stream_cut_mid_message_is_retried_with_a_fresh_message() {
    let dir = workspace();
    let cut = Reply::Sse(vec![
        role(),
        text("Half an ans"),
        // Let the partial message reach the client before the connection drops.
        Frame::Delay(Duration::from_millis(100)),
        Frame::Cut,
    ]);
    let mock = MockLlm::start(vec![cut.clone(), answer("A whole answer.")]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    // The partial message is ended with the error, on the wire...
    let partial = &run.all("message_end")[1]["message"];
    assert_eq!(
        partial["content"],
        json!([{"type": "text", "text": "Half an ans"}])
    );
    assert_eq!(partial["stopReason"], "error");
    let cut_message = partial["errorMessage"].as_str().unwrap();
    assert!(
        cut_message.starts_with("the response stream was cut: "),
        "{cut_message}"
    );
    // ...then retried, and a fresh message streams.
    assert_eq!(run.first("auto_retry_start")["errorMessage"], cut_message);
    assert_eq!(run.first("auto_retry_end")["success"], true);
    let fresh = &run.all("message_end")[2]["message"];
    assert_eq!(
        fresh["content"],
        json!([{"type": "text", "text": "A whole answer."}])
    );
    // The conversation keeps only the fresh message.
    let messages = run.first("agent_end")["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1], *fresh);
    assert_eq!(run.stats()["llmRequests"], 2);

    // Without retries left it fails as a stream error, the partial message on the wire.
    let mock = MockLlm::start(vec![cut]);
    let run = run_dynamo(dir.path(), &mock.url, &["--max-retries", "0"], "q");
    run.assert_code(1);
    assert_eq!(run.all("message_end")[1]["message"]["stopReason"], "error");
    let fatal = &run.first("fatal_error")["error"];
    assert_eq!(fatal["kind"], "stream");
    assert_eq!(fatal["message"], cut_message);
    assert_eq!(run.last()["type"], "usage_snapshot");
}

#[test]
fn a_cut_message_s_tool_calls_never_run() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "write", "{\"path\":\"cut.txt\",\"content\":\"x\"}"),
            Frame::Delay(Duration::from_millis(100)),
            Frame::Cut,
        ]),
        answer("done"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    assert!(run.all("tool_execution_start").is_empty(), "{}", run.stdout);
    assert!(!dir.path().join("cut.txt").exists());
}

#[test]
fn a_stream_that_ends_without_finishing_is_an_error_and_retried_when_nothing_was_shown() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![role()]), answer("second try")]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(0);
    assert_eq!(
        run.first("auto_retry_start")["errorMessage"],
        "the response stream ended before the response was complete"
    );
    let mock = MockLlm::start(vec![Reply::Sse(vec![role(), text("partial")])]);
    let run = run_dynamo(dir.path(), &mock.url, &["--max-retries", "0"], "q");
    run.assert_code(1);
    assert_eq!(
        run.first("fatal_error")["error"],
        json!({"kind": "stream", "name": "StreamError", "message": "the response stream ended before the response was complete"})
    );
}

#[test]
fn an_idle_stream_times_out_instead_of_hanging() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        text("thinking..."),
        Frame::Stall,
    ])]);
    let started = Instant::now();
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--idle-timeout", "300ms", "--max-retries", "0"],
        "q",
    );
    run.assert_code(1);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        run.first("fatal_error")["error"],
        json!({"kind": "stream", "name": "StreamError", "message": "no data from the model server for 0.3 s"})
    );
}

#[test]
fn a_malformed_chunk_is_a_stream_error_and_not_retried() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        Frame::Data("{\"choices\": [oops".into()),
    ])]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(1);
    let fatal = &run.first("fatal_error")["error"];
    assert_eq!(fatal["kind"], "stream");
    assert!(
        fatal["message"].as_str().unwrap().starts_with(
            "malformed stream chunk (expected value at line 1 column 14): {\"choices\": [oops"
        ),
        "{fatal}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn length_is_a_failure_with_its_own_kind() {
    let dir = workspace();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        text("cut sh"),
        finish("length"),
        done(),
    ])]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "q");
    run.assert_code(1);
    assert_eq!(run.all("message_end")[1]["message"]["stopReason"], "length");
    assert_eq!(run.first("fatal_error")["error"]["kind"], "length");
    assert_eq!(run.first("agent_end")["stopReason"], "length");
}
