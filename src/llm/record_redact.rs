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
pub(super) fn redact_sse_body(secrets: &Secrets, body: &str) -> String {
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
mod tests;
