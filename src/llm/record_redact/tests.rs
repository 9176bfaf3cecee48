use super::*;

fn chunk(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        serde_json::json!({"choices": [{"index": 0, "delta": delta}]})
    )
}

#[test]
fn a_secret_split_across_chunks_is_replaced_in_the_recording() {
    let secrets = Secrets::from_values(["sk-live-abcdef".to_string()]);
    let body = [
            chunk(serde_json::json!({"content": "the key is sk-li"})),
            chunk(serde_json::json!({"content": "ve-abc"})),
            chunk(serde_json::json!({"content": "def, ok"})),
            chunk(serde_json::json!({"tool_calls": [{"index": 0, "function": {"name": "bash", "arguments": "{\"c\":\"sk-live"}}]})),
            chunk(serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": "-abc"}}]})),
            chunk(serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": "def\"}"}}]})),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
    let redacted = redact_sse_body(&secrets, &body);
    for piece in ["sk-li", "ve-abc", "def, ok", "-abc"] {
        assert!(
            !redacted.contains(&format!("\"{piece}")),
            "{piece}: {redacted}"
        );
    }
    let mut content = String::new();
    let mut arguments = String::new();
    for line in redacted.lines() {
        let Some(Ok(value)) = line
            .strip_prefix("data: ")
            .map(serde_json::from_str::<Value>)
        else {
            continue;
        };
        let delta = &value["choices"][0]["delta"];
        content.push_str(delta["content"].as_str().unwrap_or(""));
        arguments.push_str(
            delta["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap_or(""),
        );
    }
    assert_eq!(content, "the key is [REDACTED], ok");
    assert_eq!(arguments, r#"{"c":"[REDACTED]"}"#);
    assert!(redacted.ends_with("data: [DONE]\n\n"), "{redacted}");
}

#[test]
fn a_secret_at_the_very_end_is_held_into_the_last_chunk_and_redacted() {
    let secrets = Secrets::from_values(["sk-live-abcdef".to_string()]);
    let body = [
        chunk(serde_json::json!({"content": "key sk-live-"})),
        chunk(serde_json::json!({"content": "abcdef"})),
    ]
    .concat();
    let redacted = redact_sse_body(&secrets, &body);
    assert_eq!(
        redacted,
        [
            chunk(serde_json::json!({"content": "key "})),
            chunk(serde_json::json!({"content": "[REDACTED]"})),
        ]
        .concat()
    );
}

#[test]
fn an_anthropic_stream_is_redacted_across_its_deltas() {
    let secrets = Secrets::from_values(["sk-live-abcdef".to_string()]);
    let delta = |index: u32, delta: Value| {
        format!(
            "event: content_block_delta\ndata: {}\n\n",
            serde_json::json!({"type": "content_block_delta", "index": index, "delta": delta})
        )
    };
    let body = [
        delta(
            0,
            serde_json::json!({"type": "text_delta", "text": "key sk-live"}),
        ),
        delta(
            1,
            serde_json::json!({"type": "input_json_delta", "partial_json": "{\"k\":\"sk-li"}),
        ),
        delta(
            0,
            serde_json::json!({"type": "text_delta", "text": "-abcdef ok"}),
        ),
        delta(
            1,
            serde_json::json!({"type": "input_json_delta", "partial_json": "ve-abcdef\"}"}),
        ),
    ]
    .concat();
    let redacted = redact_sse_body(&secrets, &body);
    assert!(!redacted.contains("sk-li"), "{redacted}");
    assert!(!redacted.contains("abcdef"), "{redacted}");
    assert_eq!(redacted.matches("[REDACTED]").count(), 2, "{redacted}");
    assert!(
        redacted.contains("event: content_block_delta\n"),
        "{redacted}"
    );
}

#[test]
fn without_secrets_the_body_is_kept_byte_for_byte() {
    let body = "data: {\"choices\":[]}\r\n\r\n: ping\n";
    assert_eq!(redact_sse_body(&Secrets::default(), body), body);
}
