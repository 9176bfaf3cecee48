use super::*;
use crate::events::{ASSISTANT_API, CollectorSink, Usage};
use serde_json::{Value, json};

fn skeleton() -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: ASSISTANT_API,
        provider: "p".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Pending,
        timestamp: 0,
        response_id: None,
        error_message: None,
    }
}

/// `type` of each line, with the delta event's type for updates.
fn kinds(sink: &CollectorSink) -> Vec<String> {
    sink.lines()
        .iter()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            match event["assistantMessageEvent"]["type"].as_str() {
                Some(delta) => delta.to_string(),
                None => event["type"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

#[test]
fn a_message_without_deltas_still_starts_once_and_ends_once() {
    let sink = CollectorSink::default();
    let emitter = Emitter::new(Box::new(sink.clone()), "s", false);
    let message = StreamingMessage::new(&emitter, &skeleton()).close(
        Assembler::new(),
        Some((StopReason::Aborted, None)),
        |_| {},
    );
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(kinds(&sink), ["message_start", "message_end"]);
    let start: Value = serde_json::from_str(&sink.lines()[0]).unwrap();
    assert_eq!(start["message"]["stopReason"], "pending");
}

#[test]
fn deltas_come_between_the_one_start_and_the_one_end() {
    let sink = CollectorSink::default();
    let emitter = Emitter::new(Box::new(sink.clone()), "s", false);
    let mut streaming = StreamingMessage::new(&emitter, &skeleton());
    let mut assembler = Assembler::new();
    for text in ["Hel", "lo"] {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}}]});
        assembler.push(serde_json::from_value(chunk).unwrap(), &mut |event| {
            streaming.push(event);
        });
    }
    let mut observed = None;
    let message = streaming.close(assembler, None, |assembled| {
        observed = Some(assembled.content.len());
    });
    assert_eq!(observed, Some(1));
    assert_eq!(message.text(), "Hello");
    assert_eq!(
        kinds(&sink),
        [
            "message_start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "message_end"
        ]
    );
}
