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
