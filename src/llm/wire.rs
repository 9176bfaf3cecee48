//! The OpenAI chat-completions wire format: the request body worker sends and the streamed
//! chunks it reads back.
//!
//! Chunk types are lenient on purpose: OpenAI-compatible servers differ in which fields they
//! send, send `null` for absent ones, and add their own. Anything not needed is ignored.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::events::{AssistantContent, Message};

/// A tool as the model is told about it.
pub struct ToolDefinition<'a> {
    /// The tool's name, as the model calls it.
    pub name: &'a str,
    /// What the tool does, in words for the model.
    pub description: &'a str,
    /// JSON Schema of the arguments object, as JSON text.
    pub parameters: std::borrow::Cow<'a, str>,
}

/// The request's `tools` array, built once per run (and again when the tools change) as the
/// text chat-completions requests splice in. Each schema goes in as the text its tool gives
/// (a built-in tool's is stored), so a run that sends chat completions never builds the array
/// as a value; Anthropic's body, which reshapes it, reads it parsed, once.
#[derive(Debug, Clone)]
pub struct WireTools {
    /// The array, serialized; `[]`: the request sends no `tools`.
    pub text: Arc<str>,
    /// `text` parsed, when first asked for.
    json: std::sync::OnceLock<Value>,
}

impl WireTools {
    /// The array of `tools`: what serializing `{"type":"function","function":{name,
    /// description, parameters}}` for each would give, byte for byte.
    pub fn new(tools: &[ToolDefinition<'_>]) -> Self {
        let mut text = String::from("[");
        for (index, tool) in tools.iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            text.push_str(r#"{"type":"function","function":{"name":"#);
            text.push_str(&Value::from(tool.name).to_string());
            text.push_str(r#","description":"#);
            text.push_str(&Value::from(tool.description).to_string());
            text.push_str(r#","parameters":"#);
            text.push_str(&tool.parameters);
            text.push_str("}}");
        }
        text.push(']');
        WireTools {
            text: Arc::from(text),
            json: std::sync::OnceLock::new(),
        }
    }

    /// The array as a value (parsed from [`WireTools::text`] the first time).
    pub fn json(&self) -> &Value {
        self.json.get_or_init(|| {
            // The text is made of serialized names and descriptions and of schemas that are
            // serialized values or stored ones a test parses: it is JSON. Were it not, no tools
            // is what an unreadable array would send anyway.
            serde_json::from_str(&self.text).unwrap_or_else(|_| Value::Array(Vec::new()))
        })
    }

    fn is_empty(&self) -> bool {
        &*self.text == "[]"
    }
}

#[cfg(test)]
impl WireTools {
    /// Tools given as an array value, whatever its entries' shape.
    pub(crate) fn from_value(json: Value) -> Self {
        WireTools {
            text: Arc::from(json.to_string()),
            json: std::sync::OnceLock::from(json),
        }
    }
}

impl Default for WireTools {
    /// No tools.
    fn default() -> Self {
        WireTools::new(&[])
    }
}

/// Everything that goes into one request body.
pub struct RequestSpec<'a> {
    /// The model id to ask for.
    pub model: &'a str,
    /// The system prompt: the first `system` message, or Anthropic's `system`.
    pub system_prompt: &'a str,
    /// The conversation so far, without the system prompt.
    pub messages: &'a [Message],
    /// The tools; none sends no `tools` field.
    pub tools: &'a WireTools,
    /// Output-token limit, sent as `max_tokens_field`; `None` sends none (Anthropic, which requires
    /// one, gets a default).
    pub max_tokens: Option<u32>,
    /// `max_tokens` (Dynamo) or `max_completion_tokens` (OpenAI).
    pub max_tokens_field: &'static str,
    /// The `reasoning_effort` to send (`minimal` … `xhigh`; Anthropic gets a thinking budget);
    /// `None` sends none.
    pub reasoning_effort: Option<&'a str>,
    /// The wire format to build the body in.
    pub dialect: super::Dialect,
    /// Constrain the answer to this JSON Schema (`response_format`), where the server can.
    pub response_schema: Option<&'a Value>,
}

/// The streaming request body for `spec`, in its dialect's wire format.
pub fn build_body(spec: &RequestSpec<'_>) -> Value {
    if spec.dialect == super::Dialect::AnthropicMessages {
        return super::anthropic::build_body(spec);
    }
    let mut messages = Vec::with_capacity(spec.messages.len() + 1);
    messages.push(system_message(spec.system_prompt));
    for message in spec.messages {
        messages.push(message_to_wire(message));
    }
    let tools = (!spec.tools.is_empty()).then(|| spec.tools.json().clone());
    envelope(spec, Value::Array(messages), tools)
}

/// The chat-completions body around `messages` and `tools` (moved in: `json!` would copy
/// the whole conversation again); `None` sends no `tools`.
fn envelope(spec: &RequestSpec<'_>, messages: Value, tools: Option<Value>) -> Value {
    let mut body = Value::Object(serde_json::Map::from_iter([
        ("model".to_string(), json!(spec.model)),
        ("messages".to_string(), messages),
        ("stream".to_string(), json!(true)),
        ("stream_options".to_string(), json!({"include_usage": true})),
    ]));
    if let Some(tools) = tools {
        body["tools"] = tools;
    }
    if let Some(max) = spec.max_tokens {
        body[spec.max_tokens_field] = json!(max);
    }
    if let Some(effort) = spec.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(schema) = spec.response_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": schema},
        });
    }
    body
}

fn system_message(prompt: &str) -> Value {
    json!({"role": "system", "content": prompt})
}

fn message_to_wire(message: &Message) -> Value {
    match message {
        Message::User(user) => json!({"role": "user", "content": user.text()}),
        Message::Assistant(assistant) => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text: part } => text.push_str(part),
                    // Reasoning is not replayed: chat-completions servers don't accept it back.
                    AssistantContent::Thinking { .. } => {}
                    AssistantContent::ToolCall(call) => calls.push(json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.raw_arguments},
                    })),
                }
            }
            let mut wire = json!({"role": "assistant"});
            wire["content"] = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            if !calls.is_empty() {
                wire["tool_calls"] = Value::Array(calls);
            }
            wire
        }
        Message::ToolResult(result) => {
            json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": result.text()})
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct ChatChunk {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Some servers report failures inside the stream.
    #[serde(default)]
    pub error: Option<Value>,
    /// Dynamo's response extension: which worker served the request and its timing (see
    /// `serving.rs`).
    #[serde(default)]
    pub nvext: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// The signature of the thinking block being streamed (Anthropic; never on the
    /// chat-completions wire).
    #[serde(skip)]
    pub reasoning_signature: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Token counts as a chunk reports them: chat-completions `usage`, into which Anthropic's
/// counts are translated.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct WireUsage {
    /// Input tokens, cache reads and cache writes included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// How many input tokens came from the server's cache (`cached_tokens`), where it says.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// How many output tokens were reasoning (`reasoning_tokens`), where the server says.
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
    /// Prompt tokens written to the cache (Anthropic), part of `prompt_tokens`.
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Input tokens read from the cache; 0 when the server does not say.
    pub fn cached(&self) -> u64 {
        self.prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0)
    }
}

mod cached;
pub use cached::{Body, WireMessages, build_body_cached};

#[cfg(test)]
mod tests;
