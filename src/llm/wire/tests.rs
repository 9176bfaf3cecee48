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
    let tools = WireTools::default();
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

#[test]
fn the_tools_text_is_the_array_serialized_byte_for_byte() {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "a \"quoted\"\npath"}},
        "required": ["path"],
    });
    let definitions = [
        ToolDefinition {
            name: "read",
            description: "Reads \"files\"\tand \u{1} more",
            parameters: schema.to_string().into(),
        },
        ToolDefinition {
            name: "ls",
            description: "",
            parameters: r#"{"type":"object"}"#.into(),
        },
    ];
    let tools = WireTools::new(&definitions);
    let expected = json!([
        {"type": "function", "function": {"name": "read", "description": "Reads \"files\"\tand \u{1} more", "parameters": schema}},
        {"type": "function", "function": {"name": "ls", "description": "", "parameters": {"type": "object"}}},
    ]);
    assert_eq!(*tools.json(), expected);
    // What serializing the array would send, keys in the same order: requests that splice the
    // text and requests that serialize the value cannot differ.
    assert_eq!(&*tools.text, expected.to_string());
    assert!(!tools.is_empty());
    let none = WireTools::default();
    assert_eq!((&*none.text, none.json()), ("[]", &json!([])));
    assert!(none.is_empty());
}
