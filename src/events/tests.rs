use super::*;
use serde_json::json;

#[test]
fn unit_and_struct_variants_are_tagged_with_camel_case_fields() {
    assert_eq!(
        serde_json::to_value(Event::AgentStart).unwrap(),
        json!({"type":"agent_start"})
    );
    assert_eq!(
        serde_json::to_value(Event::TurnStart { turn_index: 2 }).unwrap(),
        json!({"type":"turn_start","turnIndex":2})
    );
    let delta = AssistantMessageEvent::TextDelta {
        content_index: 0,
        delta: "hi",
    };
    assert_eq!(
        serde_json::to_value(Event::MessageUpdate {
            assistant_message_event: &delta
        })
        .unwrap(),
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hi"}})
    );
}

#[test]
fn messages_are_tagged_by_role_and_tool_calls_by_type() {
    let call = AssistantContent::ToolCall(ToolCall {
        id: "c1".into(),
        name: "read".into(),
        raw_arguments: "{\"path\":\"a\"}".into(),
        arguments_error: None,
    });
    assert_eq!(
        serde_json::to_value(&call).unwrap(),
        json!({"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}})
    );
    let result = Message::ToolResult(ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        content: vec![TextContent::text("x")],
        details: None,
        is_error: false,
        timestamp: 5,
    });
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":5})
    );
}

#[test]
fn an_mcp_tool_call_names_its_server() {
    let call = |name: &str| ToolCall {
        id: "c1".into(),
        name: name.to_string(),
        raw_arguments: "{}".to_string(),
        arguments_error: None,
    };
    assert_eq!(call("mcp__github__get_issue").mcp_server(), Some("github"));
    assert_eq!(call("mcp__fs__read__deep").mcp_server(), Some("fs"));
    assert_eq!(call("mcp__lonely").mcp_server(), None);
    assert_eq!(call("bash").mcp_server(), None);
}

#[test]
fn a_results_text_length_is_the_length_of_its_joined_text() {
    let result = |blocks: &[&str]| ToolResult {
        content: blocks.iter().map(|text| TextContent::text(*text)).collect(),
        details: None,
    };
    for blocks in [
        &[][..],
        &[""][..],
        &["one"][..],
        &["one", "two"][..],
        &["", ""][..],
        &["ünï", "", "cödé\n"][..],
    ] {
        let result = result(blocks);
        assert_eq!(result.text_len(), result.text().len(), "{blocks:?}");
    }
}
