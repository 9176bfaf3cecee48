//! Redaction of a recorded SSE body, where a secret can be split across events.
//!
//! A model streams text in pieces, one `data:` chunk each, so a secret it repeats may arrive
//! as `"sk-ab"` in one chunk and `"cdef"` in the next: no single line contains it. Each
//! streamed field (a choice's `content`, its reasoning, each tool call's `arguments`) is run
//! through its own [`StreamRedactor`], exactly as the live stream is on stdout, and the held
//! back text moves into the field's next chunk (or its last, when the stream ends). Every
//! other string is redacted as it stands; a line that is not a JSON chunk is redacted whole.

use std::collections::HashMap;

use serde_json::Value;

use crate::secrets::{Secrets, StreamRedactor};

/// A streamed field: choice index, and the field (or tool-call index) within its delta.
type FieldKey = (u64, String);

enum Line {
    Text(String),
    /// A `data:` chunk, parsed, with the line ending it had.
    Chunk(Value, &'static str),
}

/// The body with every secret replaced, including secrets split across chunks.
pub fn redact_sse_body(secrets: &Secrets, body: &str) -> String {
    if secrets.is_empty() {
        return body.to_string();
    }
    let mut lines = Vec::new();
    let mut streams: HashMap<FieldKey, (StreamRedactor, usize)> = HashMap::new();
    for line in body.split_inclusive('\n') {
        let (content, ending) = match line.strip_suffix("\r\n") {
            Some(content) => (content, "\r\n"),
            None => line
                .strip_suffix('\n')
                .map_or((line, ""), |content| (content, "\n")),
        };
        let parsed = content
            .strip_prefix("data:")
            .and_then(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .filter(Value::is_object);
        let Some(mut chunk) = parsed else {
            lines.push(Line::Text(secrets.redact(line).into_owned()));
            continue;
        };
        let at = lines.len();
        each_streamed_field(&mut chunk, |key, text| {
            let (redactor, last) = streams.entry(key).or_default();
            *text = redactor.push(secrets, text);
            *last = at;
        });
        secrets.redact_value(&mut chunk);
        lines.push(Line::Chunk(chunk, ending));
    }
    for (key, (mut redactor, last)) in streams {
        let rest = redactor.flush(secrets);
        if let (false, Some(Line::Chunk(chunk, _))) = (rest.is_empty(), lines.get_mut(last)) {
            each_streamed_field(chunk, |found, text| {
                if found == key {
                    text.push_str(&rest);
                }
            });
        }
    }
    lines
        .into_iter()
        .map(|line| match line {
            Line::Text(text) => text,
            Line::Chunk(chunk, ending) => format!("data: {chunk}{ending}"),
        })
        .collect()
}

/// Calls `visit` with every streamed text field of a chunk: an OpenAI chat-completion chunk,
/// or an Anthropic `content_block_delta` (keyed by its block index).
fn each_streamed_field(chunk: &mut Value, mut visit: impl FnMut(FieldKey, &mut String)) {
    if chunk["type"] == "content_block_delta" {
        let index = chunk["index"].as_u64().unwrap_or(0);
        let Some(delta) = chunk.get_mut("delta").and_then(Value::as_object_mut) else {
            return;
        };
        for field in ["text", "thinking", "partial_json"] {
            if let Some(Value::String(text)) = delta.get_mut(field) {
                visit((index, format!("anthropic/{field}")), text);
            }
        }
        return;
    }
    let Some(choices) = chunk.get_mut("choices").and_then(Value::as_array_mut) else {
        return;
    };
    for choice in choices {
        let index = choice.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = choice.get_mut("delta").and_then(Value::as_object_mut) else {
            continue;
        };
        for field in ["content", "reasoning_content", "reasoning"] {
            if let Some(Value::String(text)) = delta.get_mut(field) {
                visit((index, field.to_string()), text);
            }
        }
        let calls = delta.get_mut("tool_calls").and_then(Value::as_array_mut);
        for call in calls.into_iter().flatten() {
            let call_index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if let Some(Value::String(text)) = call.pointer_mut("/function/arguments") {
                visit((index, format!("tool_calls/{call_index}")), text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
}
