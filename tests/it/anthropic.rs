//! The Anthropic provider end to end: the real binary against a mock Messages API over HTTP
//! (`POST /v1/messages`, SSE with `event:` lines), through tool calls, thinking, cached
//! usage, and an overloaded server.

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::run_worker;

const KEY: &str = "sk-ant-test-key-123";

#[test]
fn a_tool_using_run_with_thinking_and_a_529_completes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let usage = json!({"input_tokens": 12, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 300, "output_tokens": 1});
    let mock = MockLlm::start(vec![
        Reply::Status {
            code: 529,
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .into(),
            retry_after: Some("0".into()),
        },
        anthropic_stream(
            vec![
                json!({"type": "thinking", "thinking": "Two reads.", "signature": "sig-1"}),
                json!({"type": "text", "text": "Reading."}),
                json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.txt"}}),
                json!({"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}}),
            ],
            "tool_use",
            usage.clone(),
        ),
        anthropic_stream(
            vec![json!({"type": "text", "text": "It says alpha."})],
            "end_turn",
            usage,
        ),
    ]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "anthropic/claude-sonnet-4-6",
            "--thinking",
            "low",
            "--retry-base-delay",
            "10ms",
        ],
        "what is in a.txt?",
        &[
            ("ANTHROPIC_BASE_URL", &mock.url),
            ("ANTHROPIC_API_KEY", KEY),
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    assert_eq!(run.last()["type"], "usage_snapshot");
    assert_eq!(run.all("auto_retry_start").len(), 1);
    assert_eq!(
        run.first("auto_retry_start")["errorMessage"],
        "HTTP 529: Overloaded"
    );

    // read and ls run concurrently: either may end first.
    let ends = run.all("tool_execution_end");
    assert_eq!(ends.len(), 2);
    let read = ends.iter().find(|e| e["toolCallId"] == "toolu_a").unwrap();
    assert_eq!(read["result"]["content"][0]["text"], "alpha");
    let first = &run.all("message_end")[1]["message"];
    assert_eq!(first["provider"], "anthropic");
    assert_eq!(first["stopReason"], "toolUse");
    assert_eq!(
        first["content"][0],
        json!({"type": "thinking", "thinking": "Two reads.", "thinkingSignature": "sig-1"})
    );
    assert_eq!(
        first["usage"],
        json!({"input": 12, "output": 25, "cacheRead": 900, "cacheWrite": 300, "totalTokens": 1237,
               "cost": {"input": 0.000036, "output": 0.000375, "cacheRead": 0.00027, "cacheWrite": 0.001125, "total": 0.001806}}),
        "Sonnet 4.6 at Pi's list price"
    );
    let text = run.first("agent_end")["messages"][4]["content"][0]["text"].clone();
    assert_eq!(text, "It says alpha.");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let headers = &requests[1].headers;
    assert_eq!(headers["x-api-key"], KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(!headers.contains_key("authorization"));
    let body = &requests[1].body;
    assert_eq!(body["model"], "claude-sonnet-4-6");
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read" && t["input_schema"]["type"] == "object")
    );
    // The second turn sends the signed thinking, both calls, and their results together.
    let second = &requests[2].body["messages"];
    assert_eq!(second[1]["content"][0]["signature"], "sig-1");
    assert_eq!(second[1]["content"][2]["input"], json!({"path": "a.txt"}));
    let results = second[2]["content"].as_array().unwrap();
    assert_eq!(
        (
            results[0]["tool_use_id"].as_str(),
            results[1]["tool_use_id"].as_str()
        ),
        (Some("toolu_a"), Some("toolu_b"))
    );
    assert_eq!(results[1]["cache_control"], json!({"type": "ephemeral"}));
    // The key never reaches the stream.
    assert!(!run.stdout.contains(KEY));
}

#[test]
fn an_error_event_mid_stream_and_a_missing_key_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        anthropic_event(
            json!({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {"input_tokens": 1}}}),
        ),
        anthropic_event(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}),
        ),
    ])]);
    let run = run_worker(
        dir.path(),
        &["--model", "anthropic/claude-x"],
        "q",
        &[
            ("ANTHROPIC_BASE_URL", &mock.url),
            ("ANTHROPIC_API_KEY", KEY),
        ],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.first("fatal_error")["error"]["message"],
        "the model server reported an error in the stream: invalid_request_error: prompt is too long"
    );
    assert!(
        run.stderr
            .trim_end()
            .ends_with("invalid_request_error: prompt is too long"),
        "{}",
        run.stderr
    );

    let run = run_worker(dir.path(), &["--model", "anthropic/claude-x"], "q", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "worker: ANTHROPIC_API_KEY is not set\n");
    assert_eq!(run.first("fatal_error")["error"]["kind"], "auth");
}

#[test]
fn costs_come_from_the_price_table_or_the_callers_price() {
    let dir = tempfile::tempdir().unwrap();
    // 1M input, 2M cache reads, 400k cache writes, 25 output tokens at Sonnet 4.5's list price.
    let tokens = json!({"input_tokens": 1_000_000, "cache_read_input_tokens": 2_000_000, "cache_creation_input_tokens": 400_000, "output_tokens": 1});
    let mock = MockLlm::start(vec![anthropic_stream(
        vec![json!({"type": "text", "text": "done"})],
        "end_turn",
        tokens,
    )]);
    let run = run_worker(
        dir.path(),
        &["--model", "anthropic/claude-sonnet-4-5-20250929"],
        "q",
        &[
            ("ANTHROPIC_BASE_URL", &mock.url),
            ("ANTHROPIC_API_KEY", KEY),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cost = &run.all("message_end")[1]["message"]["usage"]["cost"];
    assert_eq!(cost["input"], 3.0);
    assert_eq!(cost["cacheRead"], 0.6);
    assert_eq!(cost["cacheWrite"], 1.5);
    assert_eq!(cost["output"], 25.0 * 15.0 / 1_000_000.0);
    let total = run.last()["stats"]["cost"].as_f64().unwrap();
    assert!(
        (total - (5.1 + 25.0 * 15.0 / 1_000_000.0)).abs() < 1e-9,
        "{total}"
    );

    // A self-hosted model costs nothing unless the caller says what it costs.
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        text("ok"),
        finish("stop"),
        usage(2_000_000, 1_000_000, 0),
        done(),
    ])]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/qwen3", "--price", "input=0.5,output=1.5"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.last()["stats"]["cost"], 2.5);
}

#[test]
fn a_recorded_anthropic_run_replays_through_a_gateway_name() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        anthropic_stream(
            vec![
                json!({"type": "text", "text": "Listing."}),
                json!({"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}),
            ],
            "tool_use",
            json!({"input_tokens": 5}),
        ),
        anthropic_stream(
            vec![json!({"type": "text", "text": "Empty enough."})],
            "end_turn",
            json!({"input_tokens": 7}),
        ),
    ]);
    let providers = json!({"claude-gw": {"baseUrl": mock.url, "api": "anthropic-messages", "apiKeyEnv": "GW_KEY"}}).to_string();
    let fixture = dir.path().join("recorded.jsonl");
    let record = fixture.to_str().unwrap();
    let recorded = run_worker(
        dir.path(),
        &[
            "--model",
            "claude-gw/claude-x",
            "--providers",
            &providers,
            "--record",
            record,
        ],
        "q",
        &[("GW_KEY", KEY)],
    );
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let text = std::fs::read_to_string(&fixture).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains(r#""api":"anthropic-messages""#),
        "{text}"
    );
    assert!(!text.contains(KEY));

    let model = format!("replay/{record}");
    let replayed = run_worker(dir.path(), &["--model", &model], "q", &[]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let final_text = |run: &crate::support::Run| {
        run.first("agent_end")["messages"][3]["content"][0]["text"].clone()
    };
    assert_eq!(final_text(&replayed), "Empty enough.");
    assert_eq!(final_text(&replayed), final_text(&recorded));
    assert_eq!(
        replayed.all("tool_execution_end").len(),
        recorded.all("tool_execution_end").len()
    );
}
