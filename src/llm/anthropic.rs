//! Anthropic's Messages API: the request body, and its stream translated into the neutral
//! chunks the [`Assembler`](super::Assembler) already builds messages from.
//!
//! Requests put the system prompt in `system` with a `cache_control` breakpoint (it caches
//! the tools too, which come before it), and a second breakpoint on the last message, so each
//! turn reads the conversation so far from the cache. Tool results of one assistant message
//! go back as one user message of `tool_result` blocks. Thinking blocks go back with their
//! signature (the API requires them while a tool-use turn continues); a thinking block
//! without one cannot be sent and is left out.
//!
//! The stream (`message_start`, `content_block_start` / `_delta` / `_stop`, `message_delta`,
//! `message_stop`, `ping`, `error`) is translated event by event: a `tool_use` block start is
//! a tool call's first chunk keyed by the block index, `input_json_delta` its arguments,
//! `thinking_delta` reasoning, `signature_delta` the thinking block's signature. Usage
//! arrives in two parts (input with `message_start`, output with `message_delta`) and is
//! merged; cache reads and writes are counted apart from input.

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::LlmError;
use super::wire::{
    ChatChunk, ChunkChoice, Delta, FunctionDelta, PromptDetails, RequestSpec, ToolCallDelta,
    WireUsage,
};
use crate::events::{AssistantContent, AssistantMessage, Message};

/// The API version every request names.
pub(super) const API_VERSION: &str = "2023-06-01";
/// `/v1/messages` under the API root, given with or without `/v1`.
pub(super) fn messages_url(base_url: &str) -> String {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    format!("{root}/v1/messages")
}

/// The version header every request carries, and the key as `x-api-key`.
pub(super) fn auth(api_key: Option<String>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
    headers.extend(api_key.map(|key| ("x-api-key", key)));
    headers
}

/// `max_tokens` is required by the API; used when `--max-tokens` is not given.
pub(super) const DEFAULT_MAX_TOKENS: u32 = 16_384;

/// The request body.
pub(super) fn build_body(spec: &RequestSpec<'_>) -> Value {
    let mut messages = messages(spec.messages);
    // The second cache breakpoint: everything up to the newest message.
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let budget = spec.reasoning_effort.and_then(thinking_budget);
    let mut max_tokens = spec.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(budget) = budget {
        // The thinking budget is part of max_tokens and must leave room for the answer.
        max_tokens = max_tokens.max(budget + 4096);
    }
    // The messages are moved in: `json!` would copy the whole conversation again.
    let mut body = Value::Object(serde_json::Map::from_iter([
        ("model".to_string(), json!(spec.model)),
        ("max_tokens".to_string(), json!(max_tokens)),
        (
            "system".to_string(),
            json!([{
                "type": "text",
                "text": spec.system_prompt,
                "cache_control": {"type": "ephemeral"},
            }]),
        ),
        ("messages".to_string(), Value::Array(messages)),
        ("stream".to_string(), json!(true)),
    ]));
    let tools: Vec<Value> = spec
        .tools
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let function = &tool["function"];
            json!({
                "name": function["name"],
                "description": function["description"],
                "input_schema": function["parameters"],
            })
        })
        .collect();
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(budget) = budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    body
}

/// The conversation in the Messages API's shape: roles alternate, and the results of one
/// assistant message travel together in one user message.
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::with_capacity(conversation.len());
    for message in conversation {
        match message {
            Message::User(user) => {
                let block = json!({"type": "text", "text": user.text()});
                // Roles alternate: a note after tool results joins their user message.
                let previous = messages
                    .last_mut()
                    .filter(|m| m["role"] == "user")
                    .and_then(|m| m["content"].as_array_mut());
                match previous {
                    Some(blocks) => blocks.push(block),
                    None => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
            Message::Assistant(assistant) => {
                let blocks = assistant_blocks(assistant);
                if !blocks.is_empty() {
                    messages.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(result) => {
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": result.text(),
                    "is_error": result.is_error,
                });
                // Results of one assistant message travel together, in one user message.
                let previous = messages.last_mut().filter(|m| {
                    m["role"] == "user"
                        && m["content"]
                            .as_array()
                            .and_then(|blocks| blocks.first())
                            .is_some_and(|b| b["type"] == "tool_result")
                });
                match previous.and_then(|m| m["content"].as_array_mut()) {
                    Some(blocks) => blocks.push(block),
                    None => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    messages
}

/// An assistant message's blocks: text, signed thinking (unsigned thinking cannot go back),
/// tool uses.
fn assistant_blocks(assistant: &AssistantMessage) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in &assistant.content {
        match block {
            AssistantContent::Text { text } if !text.is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            AssistantContent::Text { .. } => {}
            AssistantContent::Thinking {
                thinking,
                thinking_signature: Some(signature),
            } => blocks.push(json!({
                "type": "thinking",
                "thinking": thinking,
                "signature": signature,
            })),
            AssistantContent::Thinking { .. } => {}
            AssistantContent::ToolCall(call) => {
                let input = match call.arguments() {
                    input @ Value::Object(_) => input,
                    _ => json!({}),
                };
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": input,
                }));
            }
        }
    }
    blocks
}

/// Thinking tokens for a reasoning effort (`reasoning_effort` names).
fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "minimal" => Some(1024),
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16_384),
        "xhigh" => Some(32_000),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u32,
        delta: Value,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: Value,
        #[serde(default)]
        usage: Option<AnthropicUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: Value,
    },
    /// The API may add event types; a reader must pass over the ones it does not know.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

/// What one stream event means for the message being assembled.
pub(super) enum Translated {
    Chunk(Box<ChatChunk>),
    Done,
    Nothing,
}

/// Turns Anthropic stream events into chunks, keeping the usage seen so far.
#[derive(Default)]
pub(super) struct Translator {
    usage: AnthropicUsage,
}

impl Translator {
    pub(super) fn translate(&mut self, data: &str) -> Result<Translated, LlmError> {
        let event: StreamEvent = serde_json::from_str(data).map_err(|err| LlmError::Malformed {
            error: err.to_string(),
            excerpt: crate::text::excerpt(data, 200),
        })?;
        let mut chunk = ChatChunk::default();
        let mut delta = Delta::default();
        let mut finish = None;
        match event {
            StreamEvent::MessageStart { message } => {
                chunk.id = message.id;
                chunk.model = message.model;
                if let Some(usage) = message.usage {
                    self.merge(usage);
                }
                chunk.usage = Some(self.wire_usage());
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block["type"].as_str() {
                Some("tool_use") => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: Some(index),
                        id: content_block["id"].as_str().map(str::to_string),
                        function: Some(FunctionDelta {
                            name: content_block["name"].as_str().map(str::to_string),
                            arguments: None,
                        }),
                    }]);
                }
                Some("text") => {
                    delta.content = content_block["text"].as_str().map(str::to_string);
                }
                Some("thinking") => {
                    delta.reasoning_content =
                        content_block["thinking"].as_str().map(str::to_string);
                }
                _ => return Ok(Translated::Nothing),
            },
            StreamEvent::ContentBlockDelta { index, delta: wire } => match wire["type"].as_str() {
                Some("text_delta") => {
                    delta.content = wire["text"].as_str().map(str::to_string);
                }
                Some("thinking_delta") => {
                    delta.reasoning_content = wire["thinking"].as_str().map(str::to_string);
                }
                Some("signature_delta") => {
                    delta.reasoning_signature = wire["signature"].as_str().map(str::to_string);
                }
                Some("input_json_delta") => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: Some(index),
                        id: None,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: wire["partial_json"].as_str().map(str::to_string),
                        }),
                    }]);
                }
                _ => return Ok(Translated::Nothing),
            },
            StreamEvent::MessageDelta { delta: wire, usage } => {
                if let Some(usage) = usage {
                    self.merge(usage);
                }
                chunk.usage = Some(self.wire_usage());
                finish = wire["stop_reason"].as_str().map(finish_reason);
            }
            StreamEvent::MessageStop {} => return Ok(Translated::Done),
            StreamEvent::ContentBlockStop {} | StreamEvent::Ping {} | StreamEvent::Unknown => {
                return Ok(Translated::Nothing);
            }
            StreamEvent::Error { error } => return Err(stream_error(&error)),
        }
        chunk.choices = vec![ChunkChoice {
            index: 0,
            delta: Some(delta),
            finish_reason: finish,
        }];
        Ok(Translated::Chunk(Box::new(chunk)))
    }

    fn merge(&mut self, usage: AnthropicUsage) {
        let current = &mut self.usage;
        current.input_tokens = usage.input_tokens.or(current.input_tokens);
        current.output_tokens = usage.output_tokens.or(current.output_tokens);
        current.cache_read_input_tokens = usage
            .cache_read_input_tokens
            .or(current.cache_read_input_tokens);
        current.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .or(current.cache_creation_input_tokens);
    }

    /// In chat-completions terms: the prompt counts every input token, cached or not.
    fn wire_usage(&self) -> WireUsage {
        let read = self.usage.cache_read_input_tokens.unwrap_or(0);
        let written = self.usage.cache_creation_input_tokens.unwrap_or(0);
        WireUsage {
            prompt_tokens: self.usage.input_tokens.unwrap_or(0) + read + written,
            completion_tokens: self.usage.output_tokens.unwrap_or(0),
            prompt_tokens_details: Some(PromptDetails {
                cached_tokens: Some(read),
            }),
            completion_tokens_details: None,
            cache_creation_input_tokens: Some(written),
        }
    }
}

/// Anthropic's stop reasons in chat-completions terms.
fn finish_reason(stop: &str) -> String {
    match stop {
        "tool_use" => "tool_calls",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "refusal" => "content_filter",
        _ => "stop",
    }
    .to_string()
}

/// An `error` event: an overload is transient (retried like a 529), anything else is not.
fn stream_error(error: &Value) -> LlmError {
    let kind = error["type"].as_str().unwrap_or("error");
    let message = error["message"].as_str().unwrap_or(kind).to_string();
    match kind {
        "overloaded_error" => LlmError::Status {
            status: 529,
            message,
            retry_after: None,
        },
        "api_error" => LlmError::Status {
            status: 500,
            message,
            retry_after: None,
        },
        _ => LlmError::InStream(format!("{kind}: {message}")),
    }
}

#[cfg(test)]
mod tests;
