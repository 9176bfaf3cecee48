use super::*;
use crate::events::{
    AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use crate::llm::{Assembler, Dialect, WireTools};

fn spec<'a>(
    messages: &'a [Message],
    tools: &'a WireTools,
    effort: Option<&'a str>,
) -> RequestSpec<'a> {
    RequestSpec {
        model: "claude-sonnet-4-6",
        system_prompt: "be brief",
        messages,
        tools,
        max_tokens: None,
        max_tokens_field: "max_tokens",
        reasoning_effort: effort,
        dialect: Dialect::AnthropicMessages,
        response_schema: None,
    }
}

fn result(id: &str, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![TextContent::text(text)],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

#[test]
fn the_conversation_becomes_messages_with_tool_results_grouped_and_cache_breakpoints() {
    let call = |id: &str| {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            raw_arguments: json!({"path": id}).to_string(),
            arguments_error: None,
        })
    };
    let messages = vec![
        Message::User(UserMessage {
            content: vec![TextContent::text("go")],
            timestamp: 0,
        }),
        Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "plan".into(),
                    thinking_signature: Some("sig-1".into()),
                },
                AssistantContent::Thinking {
                    thinking: "unsigned, not sendable".into(),
                    thinking_signature: None,
                },
                AssistantContent::Text {
                    text: "Reading.".into(),
                },
                call("a"),
                call("b"),
            ],
            api: "openai-completions",
            provider: "anthropic".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
            timestamp: 0,
            response_id: None,
            error_message: None,
        }),
        result("a", "one"),
        result("b", "two"),
    ];
    let tools = WireTools::from_value(
        json!([{"type": "function", "function": {"name": "read", "description": "Read", "parameters": {"type": "object"}}}]),
    );
    let body = build_body(&spec(&messages, &tools, None));
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["tools"],
        json!([{"name": "read", "description": "Read", "input_schema": {"type": "object"}}])
    );
    let wire = body["messages"].as_array().unwrap();
    assert_eq!(wire.len(), 3, "{body}");
    assert_eq!(
        wire[1]["content"],
        json!([
            {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "b", "name": "read", "input": {"path": "b"}},
        ])
    );
    assert_eq!(
        wire[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "one", "is_error": false},
            {"type": "tool_result", "tool_use_id": "b", "content": "two", "is_error": false, "cache_control": {"type": "ephemeral"}},
        ]})
    );
    assert!(body.get("thinking").is_none());
}

#[test]
fn thinking_gets_a_budget_inside_max_tokens() {
    let messages = vec![Message::User(UserMessage {
        content: vec![TextContent::text("go")],
        timestamp: 0,
    })];
    let body = build_body(&spec(&messages, &WireTools::default(), Some("xhigh")));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 32000})
    );
    assert_eq!(body["max_tokens"], 36096);
    assert!(body.get("tools").is_none());
}

#[test]
fn a_stream_with_thinking_text_and_two_tool_calls_assembles() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me look."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-abc"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Reading both."}}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"a.txt\"}"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
        json!({"type": "message_stop"}),
    ];
    let mut translator = Translator::default();
    let mut assembler = Assembler::new();
    let mut done = false;
    for event in &events {
        match translator.translate(&event.to_string()).unwrap() {
            Translated::Chunk(chunk) => assembler.push(*chunk, &mut |_| {}),
            Translated::Done => done = true,
            Translated::Nothing => {}
        }
    }
    assert!(done);
    let message = assembler.finish(None, &mut |_| {});
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("msg_1"));
    assert!(matches!(
        &message.content[0],
        AssistantContent::Thinking { thinking, thinking_signature: Some(sig) }
            if thinking == "Let me look." && sig == "sig-abc"
    ));
    assert!(
        matches!(&message.content[1], AssistantContent::Text { text } if text == "Reading both.")
    );
    let calls: Vec<(&str, &str, Value)> = message
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::ToolCall(c) => Some((c.id.as_str(), c.name.as_str(), c.arguments())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_1", "read", json!({"path": "a.txt"})),
            ("toolu_2", "ls", json!({})),
        ]
    );
    // Cache reads and writes are not input.
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
            message.usage.cache_write,
            message.usage.total_tokens
        ),
        (10, 42, 100, 20, 172)
    );
}

#[test]
fn stop_reasons_and_errors_map_to_what_the_loop_knows() {
    for (stop, expected) in [
        ("end_turn", StopReason::Stop),
        ("max_tokens", StopReason::Length),
        ("refusal", StopReason::Error),
    ] {
        let mut translator = Translator::default();
        let mut assembler = Assembler::new();
        let delta = json!({"type": "message_delta", "delta": {"stop_reason": stop}});
        if let Translated::Chunk(chunk) = translator.translate(&delta.to_string()).unwrap() {
            assembler.push(*chunk, &mut |_| {});
        }
        assert_eq!(
            assembler.finish(None, &mut |_| {}).stop_reason,
            expected,
            "{stop}"
        );
    }
    let mut translator = Translator::default();
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let err = translator.translate(&overloaded.to_string()).err().unwrap();
    assert!(err.is_retryable(), "{err}");
    let invalid =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}});
    let err = translator.translate(&invalid.to_string()).err().unwrap();
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        "the model server reported an error in the stream: invalid_request_error: bad"
    );
    assert!(matches!(
        translator.translate("{\"type\":\"novel_event\"}"),
        Ok(Translated::Nothing)
    ));
    assert!(matches!(
        translator.translate("{\"type\":"),
        Err(LlmError::Malformed { excerpt, .. }) if excerpt == "{\"type\":"
    ));
}

#[test]
fn the_messages_url_and_headers_follow_the_api() {
    for base in [
        "https://api.anthropic.com",
        "https://api.anthropic.com/",
        "https://api.anthropic.com/v1",
        "https://api.anthropic.com/v1/",
    ] {
        assert_eq!(
            messages_url(base),
            "https://api.anthropic.com/v1/messages",
            "{base}"
        );
    }
    assert_eq!(
        auth(Some("sk-ant-key".into())),
        [
            ("anthropic-version", "2023-06-01".to_string()),
            ("x-api-key", "sk-ant-key".to_string())
        ]
    );
    assert_eq!(
        auth(None),
        [("anthropic-version", "2023-06-01".to_string())]
    );
}
