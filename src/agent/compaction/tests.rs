use super::*;
use crate::llm::LlmError;

#[test]
fn estimates_start_from_the_servers_count() {
    let messages = vec![user(&"x".repeat(400)), user(&"y".repeat(40))];
    assert_eq!(estimate(&messages, 400, None), 100 + 100 + 10);
    assert_eq!(estimate(&messages, 400, Some((1, 1000))), 1000 + 10);
    assert_eq!(threshold(200_000, None), 200_000 - 16_384);
    assert_eq!(threshold(2_000, None), 1_500);
    assert_eq!(threshold(100_000, Some(4_000)), 96_000);
}

#[test]
fn the_newest_turn_is_kept_and_overflow_refusals_are_recognized() {
    assert_eq!(split_point(&[user("only the prompt")]), None);
    assert!(is_overflow(&LlmError::from_status(
        400,
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens"}}"#,
        None
    )));
    assert!(is_overflow(&LlmError::from_status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        None
    )));
    assert!(!is_overflow(&LlmError::from_status(400, "bad field", None)));
    assert!(!is_overflow(&LlmError::from_status(
        500,
        "context length",
        None
    )));
}

fn answer(text: &str) -> Message {
    Message::Assistant(crate::events::AssistantMessage {
        content: vec![AssistantContent::Text { text: text.into() }],
        api: "openai-completions",
        provider: "p".into(),
        model: "m".into(),
        usage: crate::events::Usage::default(),
        stop_reason: crate::events::StopReason::Stop,
        timestamp: 0,
        response_id: None,
        error_message: None,
    })
}

fn result(text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        content: vec![TextContent::text(text)],
        details: Some(serde_json::json!({"exitCode": 0})),
        is_error: false,
        timestamp: 0,
    })
}

fn text_of(message: &Message) -> String {
    match message {
        Message::User(user) => user
            .content
            .iter()
            .map(crate::events::TextContent::as_str)
            .collect(),
        Message::ToolResult(result) => result
            .content
            .iter()
            .map(crate::events::TextContent::as_str)
            .collect(),
        Message::Assistant(assistant) => assistant.text(),
    }
}

#[test]
fn the_kept_part_starts_at_the_newest_answer_and_needs_something_before_it() {
    assert_eq!(split_point(&[answer("a")]), None, "nothing before it");
    assert_eq!(split_point(&[user("p"), answer("a"), result("r")]), Some(1));
    let turns = [
        user("p"),
        answer("a"),
        result("r"),
        answer("b"),
        result("s"),
    ];
    assert_eq!(split_point(&turns), Some(3));
}

#[test]
fn the_summarizer_reads_the_older_part_with_results_cut_and_the_request_last() {
    let long = "é".repeat(1_500); // 3,000 bytes
    let exact = "x".repeat(2_000);
    let older = [
        user("the task"),
        answer("looking"),
        result(&long),
        result("short"),
        result(&exact),
    ];
    let input = summary_input(&older);
    let texts: Vec<String> = input.iter().map(text_of).collect();
    assert_eq!(texts.len(), 6);
    assert_eq!(texts[..2], ["the task", "looking"]);
    assert_eq!(
        texts[2],
        // The count is of bytes: 1,000 of the 3,000 were cut.
        format!("{}… [1000 more characters]", "é".repeat(1_000))
    );
    assert_eq!(texts[3], "short");
    assert_eq!(
        texts[4], exact,
        "a result of exactly the limit is kept whole"
    );
    assert_eq!(
        texts[5],
        "Summarize the conversation above as instructed, for continuing the task."
    );
    let Message::ToolResult(cut) = &input[2] else {
        panic!("a tool result stays a tool result");
    };
    assert_eq!(
        (cut.tool_call_id.as_str(), cut.details.is_none()),
        ("c1", true)
    );
}

#[test]
fn a_tool_call_counts_its_name_and_arguments_and_thinking_counts_nothing() {
    let Message::Assistant(mut call) = answer("") else {
        unreachable!()
    };
    call.content = vec![
        AssistantContent::ToolCall(crate::events::ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            raw_arguments: r#"{"c":"ls -la"}"#.into(),
            arguments_error: None,
        }),
        AssistantContent::Thinking {
            thinking: "t".repeat(400),
            thinking_signature: None,
        },
    ];
    // 4 + 14 characters: 4 tokens (the thinking is not sent back as text).
    assert_eq!(estimate(&[Message::Assistant(call)], 0, None), 4);
}

#[test]
fn a_count_from_a_longer_conversation_than_this_one_is_not_used() {
    let messages = [user(&"x".repeat(40))];
    assert_eq!(estimate(&messages, 0, Some((5, 1_000))), 10);
    assert_eq!(estimate(&messages, 0, Some((1, 1_000))), 1_000);
}
