//! Messages: the conversation, as `message_start` / `message_end` / `turn_end` / `agent_end`
//! carry it, and the streamed pieces of an assistant message (`message_update`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// One message of the conversation, tagged by `role`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// A user message (`role: user`): the prompt, or a note worker adds (a budget warning, an
    /// `--output-schema` correction, a compaction summary).
    User(UserMessage),
    /// The model's answer (`role: assistant`).
    Assistant(AssistantMessage),
    /// The result of one tool call (`role: toolResult`).
    ToolResult(ToolResultMessage),
}

/// A user message: text only.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UserMessage {
    /// Its text, as `text` blocks.
    pub content: Vec<TextContent>,
    /// Unix milliseconds.
    pub timestamp: u64,
}

/// One assistant message: what the model streamed, how it ended and what it cost.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// The blocks in the order they streamed (text, thinking, tool calls); `contentIndex` in
    /// `message_update` indexes this list.
    pub content: Vec<AssistantContent>,
    /// The wire format it came over: `openai-completions` or `anthropic-messages`.
    pub api: &'static str,
    /// The provider the run used (`dynamo`, `openai`, `anthropic`, `openrouter`, a `--providers`
    /// name, `replay`).
    pub provider: String,
    /// The model id as the server named it in its response, else as requested.
    pub model: String,
    /// Token counts and cost of the request that produced it (zero when the server reported none).
    pub usage: Usage,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// Unix milliseconds.
    pub timestamp: u64,
    /// The `id` the server gave the response (`chatcmpl-...`); absent when none arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Why the message failed: set with `stopReason` `error`, and with `aborted` when the run was
    /// stopped after its request failed; absent otherwise.
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

    /// The tool-call blocks, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// One block of an assistant message, tagged by `type`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    /// Answer text.
    Text {
        /// The block's whole text.
        text: String,
    },
    /// Reasoning the model produced before or between its answers (chat-completions
    /// `reasoning_content`, Anthropic's thinking blocks).
    Thinking {
        /// The block's whole reasoning text.
        thinking: String,
        /// Anthropic's signature of the block: it must go back with the block while a
        /// tool-use turn continues.
        #[serde(rename = "thinkingSignature", skip_serializing_if = "Option::is_none")]
        thinking_signature: Option<String>,
    },
    /// A tool call the model made (`type: toolCall`).
    ToolCall(ToolCall),
}

/// A call of one tool, as the model made it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolCall {
    /// The call's id as the model gave it (`call_...`), or one worker made up when it gave none;
    /// the tool result's `toolCallId` names it.
    pub id: crate::ids::ToolCallId,
    /// The tool called (`bash`, `read`, ...).
    pub name: String,
    /// The argument text exactly as the model streamed it; sent back verbatim in later
    /// requests so the conversation prefix stays byte-identical for the server's cache. Only
    /// the text is kept: a parsed object holds a hash table and spare room many times the
    /// text's bytes, for the whole run. Serialized as `arguments`, parsed
    /// ([`ToolCall::arguments`]).
    #[serde(rename = "arguments", serialize_with = "serialize_parsed")]
    #[schemars(
        rename = "arguments",
        with = "Value",
        description = "The parsed arguments; the raw text when the model sent invalid JSON."
    )]
    pub raw_arguments: String,
    /// Set when `raw_arguments` is not a JSON object; the tool result then says so.
    #[serde(skip)]
    pub arguments_error: Option<String>,
}

fn parse_arguments(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn serialize_parsed<S: serde::Serializer>(raw: &str, serializer: S) -> Result<S::Ok, S::Error> {
    parse_arguments(raw).serialize(serializer)
}

/// What the name of every MCP server's tool starts with: `mcp__SERVER__TOOL` (Claude Code's
/// convention).
pub const MCP_TOOL_PREFIX: &str = "mcp__";

impl ToolCall {
    /// The parsed arguments; the raw text, as a string, when it is not valid JSON.
    pub fn arguments(&self) -> Value {
        parse_arguments(&self.raw_arguments)
    }

    /// The MCP server the call goes to, when the tool is one (`mcp__SERVER__TOOL`).
    pub fn mcp_server(&self) -> Option<&str> {
        self.name
            .strip_prefix(MCP_TOOL_PREFIX)
            .and_then(|rest| rest.split_once("__"))
            .map(|(server, _)| server)
    }
}

/// A text block, tagged `type: text`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TextContent {
    /// A block of plain text.
    Text {
        /// The block's text.
        text: String,
    },
}

impl TextContent {
    /// A text block holding `text`.
    pub fn text(text: impl Into<String>) -> Self {
        TextContent::Text { text: text.into() }
    }

    /// The block's text.
    pub fn as_str(&self) -> &str {
        match self {
            TextContent::Text { text } => text,
        }
    }
}

/// A tool result as it enters the conversation, answering one tool call.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The `id` of the tool call it answers.
    pub tool_call_id: crate::ids::ToolCallId,
    /// The tool that was called.
    pub tool_name: String,
    /// The text the model reads.
    pub content: Vec<TextContent>,
    /// Structured data for consumers, never sent to the model; tool-specific (`bash` has
    /// `exitCode`, ...) and absent when the tool gives none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// True when the call failed (an unknown tool, invalid arguments, the tool's own error, an
    /// abort); `content` says why.
    pub is_error: bool,
    /// Unix milliseconds.
    pub timestamp: u64,
}

/// What a tool returns: text for the model, optional structured details for consumers.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ToolResult {
    /// The text blocks the model reads.
    pub content: Vec<TextContent>,
    /// Structured data for consumers, never sent to the model; tool-specific (`bash` has
    /// `exitCode`, ...) and absent when the tool gives none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolResult {
    /// The text blocks joined by newlines: what the model reads.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }

    /// The length in bytes of [`ToolResult::text`], counted without joining the blocks.
    pub fn text_len(&self) -> usize {
        let blocks: usize = self.content.iter().map(|block| block.as_str().len()).sum();
        blocks + self.content.len().saturating_sub(1)
    }
}

impl UserMessage {
    /// The text blocks joined by newlines, as a request sends them.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

impl ToolResultMessage {
    /// The text blocks joined by newlines, as a request sends them.
    pub fn text(&self) -> String {
        joined_text(&self.content)
    }
}

/// Text blocks joined by newlines.
fn joined_text(content: &[TextContent]) -> String {
    let parts: Vec<&str> = content.iter().map(TextContent::as_str).collect();
    parts.join("\n")
}

/// Token counts of one assistant message. `input` excludes cached prompt tokens, which are
/// counted in `cacheRead`; `totalTokens` is the sum of the four counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the prompt cache.
    pub input: u64,
    /// Tokens generated, reasoning included.
    pub output: u64,
    /// Prompt tokens read from the prompt cache.
    pub cache_read: u64,
    /// Prompt tokens written to the prompt cache (0 where the server does not report it).
    pub cache_write: u64,
    /// `input + output + cacheRead + cacheWrite`.
    pub total_tokens: u64,
    /// What the request cost, in US dollars.
    pub cost: Cost,
    /// Reasoning tokens, when the server reports them (already included in `output`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

/// USD. Self-hosted models carry no price, so these are zero unless a price is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// For the `input` tokens.
    pub input: f64,
    /// For the `output` tokens.
    pub output: f64,
    /// For the `cacheRead` tokens.
    pub cache_read: f64,
    /// For the `cacheWrite` tokens.
    pub cache_write: f64,
    /// The sum of the four.
    pub total: f64,
}

/// Why an assistant message ended. `pending` appears only on `message_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Still streaming: only on an assistant `message_start`.
    Pending,
    /// The model finished its answer.
    Stop,
    /// The model hit its output-token limit.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The request failed, or the server ended the response with an error or its content filter;
    /// `errorMessage` says why.
    Error,
    /// The run was stopped (a signal, a closed stdout, `--timeout`) before the message was
    /// complete.
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
    /// A text block begins.
    TextStart {
        /// The block's index in the message's `content`.
        content_index: usize,
    },
    /// More text for the block.
    TextDelta {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The text that arrived, to append to what came before.
        delta: &'a str,
    },
    /// The text block is complete.
    TextEnd {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The block's whole text.
        content: &'a str,
    },
    /// A thinking block begins.
    ThinkingStart {
        /// The block's index in the message's `content`.
        content_index: usize,
    },
    /// More reasoning text for the block.
    ThinkingDelta {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The text that arrived, to append to what came before.
        delta: &'a str,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The block's whole reasoning text.
        content: &'a str,
    },
    /// A tool-call block begins.
    ToolcallStart {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The call's id, as in the final `toolCall` block.
        id: &'a str,
        /// The tool called.
        tool_name: &'a str,
    },
    /// More of the call's arguments.
    ToolcallDelta {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// A piece of the arguments' JSON text as the model streamed it; the pieces joined are the
        /// raw arguments.
        delta: &'a str,
    },
    /// The tool call is complete; sent for every call when the message finishes streaming.
    ToolcallEnd {
        /// The block's index in the message's `content`.
        content_index: usize,
        /// The whole block (`type: toolCall`), with its parsed arguments.
        tool_call: &'a AssistantContent,
    },
}
