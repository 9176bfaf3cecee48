//! Messages: the conversation, as `message_start` / `message_end` / `turn_end` / `agent_end`
//! carry it, and the streamed pieces of an assistant message (`message_update`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// One message of the conversation, tagged by `role`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UserMessage {
    pub content: Vec<TextContent>,
    /// Unix milliseconds.
    pub timestamp: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantContent>,
    pub api: &'static str,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    /// Unix milliseconds.
    pub timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl AssistantMessage {
    /// The text blocks joined, as `finalText` reports it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let AssistantContent::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// Anthropic's signature of the block: it must go back with the block while a
        /// tool-use turn continues.
        #[serde(rename = "thinkingSignature", skip_serializing_if = "Option::is_none")]
        thinking_signature: Option<String>,
    },
    ToolCall(ToolCall),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The parsed arguments; the raw text when the model sent invalid JSON.
    pub arguments: Value,
    /// The argument text exactly as the model streamed it; sent back verbatim in later
    /// requests so the conversation prefix stays byte-identical for the server's cache.
    #[serde(skip)]
    pub raw_arguments: String,
    /// Set when `raw_arguments` is not a JSON object; the tool result then says so.
    #[serde(skip)]
    pub arguments_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TextContent {
    Text { text: String },
}

impl TextContent {
    pub fn text(text: impl Into<String>) -> Self {
        TextContent::Text { text: text.into() }
    }

    pub fn as_str(&self) -> &str {
        match self {
            TextContent::Text { text } => text,
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<TextContent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    /// Unix milliseconds.
    pub timestamp: u64,
}

/// What a tool returns: text for the model, optional structured details for consumers.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ToolResult {
    pub content: Vec<TextContent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolResult {
    /// The text blocks joined by newlines: what the model reads.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self.content.iter().map(TextContent::as_str).collect();
        parts.join("\n")
    }
}

/// Token counts of one assistant message. `input` excludes cached prompt tokens, which are
/// counted in `cacheRead`; `totalTokens` is the sum of the four counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Cost,
    /// Reasoning tokens, when the server reports them (already included in `output`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

/// USD. Self-hosted models carry no price, so these are zero unless a price is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

/// Why an assistant message ended. `pending` appears only on `message_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Pending,
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

/// One streamed piece of an assistant message (`message_update.assistantMessageEvent`).
/// `contentIndex` is the index of the block in the final message's `content`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantMessageEvent<'a> {
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: &'a str,
    },
    TextEnd {
        content_index: usize,
        content: &'a str,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: &'a str,
    },
    ThinkingEnd {
        content_index: usize,
        content: &'a str,
    },
    ToolcallStart {
        content_index: usize,
        id: &'a str,
        tool_name: &'a str,
    },
    ToolcallDelta {
        content_index: usize,
        delta: &'a str,
    },
    ToolcallEnd {
        content_index: usize,
        tool_call: &'a AssistantContent,
    },
}
