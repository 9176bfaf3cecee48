use super::*;
use crate::events::{
    AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage,
};

#[test]
fn conversation_maps_to_chat_messages_with_raw_tool_arguments() {
    let messages = vec![
        Message::User(UserMessage {
            content: vec![TextContent::text("hi")],
            timestamp: 0,
        }),
        Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "hmm".into(),
                    thinking_signature: None,
                },
                AssistantContent::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    raw_arguments: "{\"path\": \"a\"}".into(),
                    arguments_error: None,
                }),
            ],
            api: crate::events::ASSISTANT_API,
            provider: "dynamo".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
            timestamp: 0,
            response_id: None,
            error_message: None,
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![TextContent::text("x")],
            details: None,
            is_error: false,
            timestamp: 0,
        }),
    ];
    let tools = tools_json(Vec::new());
    let body = build_body(&RequestSpec {
        model: "m",
        system_prompt: "sys",
        messages: &messages,
        tools: &tools,
        max_tokens: Some(64),
        max_tokens_field: "max_tokens",
        reasoning_effort: None,
        dialect: crate::llm::Dialect::ChatCompletions,
        response_schema: None,
    });
    assert_eq!(
        body,
        json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 64
        })
    );
}

#[test]
fn chunks_tolerate_nulls_and_unknown_fields() {
    let chunk: ChatChunk = serde_json::from_str(
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":null},"finish_reason":null,"logprobs":null}],"usage":null,"nvext":{}}"#,
        )
        .unwrap();
    assert_eq!(chunk.choices.len(), 1);
    assert!(chunk.usage.is_none());
}
