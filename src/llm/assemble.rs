//! Streamed chunks to an assistant message, reporting each piece as it arrives.
//!
//! Text and reasoning deltas extend the current block of their kind or start a new one (the
//! previous block then ends). Tool calls are keyed by the chunk's `index`, never by `id`:
//! servers send the id only in a call's first chunk, and indices may be sparse or
//! interleaved. Tool-call blocks therefore stay open until the response ends, and their
//! `toolcall_end` events come last, once each call's arguments are complete.

use super::serving::ServerReport;
use super::wire::{ChatChunk, WireUsage};
use crate::events::{AssistantContent, AssistantMessageEvent, StopReason, ToolCall, Usage};

pub(super) type Emit<'e> = &'e mut dyn FnMut(&AssistantMessageEvent<'_>);

enum Block {
    Text(String),
    Thinking(String),
    Tool {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Builds one assistant message from a response's chunks, emitting each block's start, delta and
/// end events as the pieces arrive.
#[derive(Default)]
pub struct Assembler {
    blocks: Vec<Block>,
    /// The text or thinking block that the next delta of its kind extends.
    open: Option<usize>,
    /// (wire index, block index) of each tool call.
    tool_slots: Vec<(Option<u32>, usize)>,
    finish_reason: Option<String>,
    usage: Option<WireUsage>,
    response_id: Option<String>,
    model: Option<String>,
    /// Signatures of thinking blocks, by block index (Anthropic).
    signatures: Vec<(usize, String)>,
    report: ServerReport,
}

/// A finished (or stopped) assistant message, minus the fields the caller adds.
pub struct Assembled {
    /// The blocks (text, thinking, tool calls) in the order they started; tool-call arguments
    /// parsed as JSON.
    pub content: Vec<AssistantContent>,
    /// Why the message ended: from the server's `finish_reason` (tool calls make it `toolUse`),
    /// unless the caller stopped it (an abort, an error).
    pub stop_reason: StopReason,
    /// What went wrong when the message ended in an error (a content filter, a `finish_reason`
    /// of `error`, the caller's reason); `None` otherwise.
    pub error_message: Option<String>,
    /// Tokens by kind (cached prompt tokens as cache reads, not input); zero when the server sent
    /// no usage. The cost is left at zero for the caller to price.
    pub usage: Usage,
    /// Prompt and completion tokens as the server counted them (for traces).
    pub raw_usage: Option<WireUsage>,
    /// The response's `id`, from the first chunk that had one; `None` when none did.
    pub response_id: Option<String>,
    /// The model as the server named it in its chunks; `None` when it named none.
    pub model: Option<String>,
    /// What the server said about serving the request.
    pub report: ServerReport,
}

impl Assembler {
    /// An assembler that has received nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once anything beyond role-only chunks arrived; a stream cut before this point
    /// can be retried without the consumer having seen a partial message.
    pub fn has_progress(&self) -> bool {
        !self.blocks.is_empty() || self.finish_reason.is_some()
    }

    /// True once a chunk carried a `finish_reason`: a stream that then ends without `[DONE]` is
    /// still complete.
    pub fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Takes one chunk: extends or starts blocks (only choice 0 counts), emitting their events
    /// through `emit`, and keeps the chunk's id, model, usage and serving report.
    pub fn push(&mut self, chunk: ChatChunk, emit: Emit<'_>) {
        if self.response_id.is_none() {
            self.response_id = chunk.id.filter(|id| !id.is_empty());
        }
        if self.model.is_none() {
            self.model = chunk.model.filter(|m| !m.is_empty());
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        if let Some(nvext) = &chunk.nvext {
            self.report.push(nvext);
        }
        let Some(choice) = chunk.choices.into_iter().find(|c| c.index == 0) else {
            return;
        };
        if let Some(delta) = choice.delta {
            if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning) {
                self.push_prose(&reasoning, true, emit);
            }
            if let Some(signature) = delta.reasoning_signature {
                let thinking = self
                    .blocks
                    .iter()
                    .rposition(|b| matches!(b, Block::Thinking(_)));
                if let Some(index) = thinking {
                    self.signatures.push((index, signature));
                }
            }
            if let Some(text) = delta.content {
                self.push_prose(&text, false, emit);
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = call
                    .function
                    .map_or((None, None), |f| (f.name, f.arguments));
                self.push_tool_call(call.index, call.id, name, arguments, emit);
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
        }
    }

    fn push_prose(&mut self, delta: &str, thinking: bool, emit: Emit<'_>) {
        if delta.is_empty() {
            return;
        }
        let extends = self.open.is_some_and(|i| {
            matches!(
                (&self.blocks[i], thinking),
                (Block::Thinking(_), true) | (Block::Text(_), false)
            )
        });
        if !extends {
            self.close_open(emit);
            let index = self.blocks.len();
            if thinking {
                self.blocks.push(Block::Thinking(String::new()));
                emit(&AssistantMessageEvent::ThinkingStart {
                    content_index: index,
                });
            } else {
                self.blocks.push(Block::Text(String::new()));
                emit(&AssistantMessageEvent::TextStart {
                    content_index: index,
                });
            }
            self.open = Some(index);
        }
        let Some(index) = self.open else { return };
        match &mut self.blocks[index] {
            Block::Thinking(text) | Block::Text(text) => text.push_str(delta),
            Block::Tool { .. } => return,
        }
        emit(&if thinking {
            AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta,
            }
        } else {
            AssistantMessageEvent::TextDelta {
                content_index: index,
                delta,
            }
        });
    }

    fn push_tool_call(
        &mut self,
        wire_index: Option<u32>,
        id: Option<String>,
        name: Option<String>,
        arguments: Option<String>,
        emit: Emit<'_>,
    ) {
        let id = id.filter(|id| !id.is_empty());
        let existing = match wire_index {
            Some(wire) => self
                .tool_slots
                .iter()
                .find(|(w, _)| *w == Some(wire))
                .map(|(_, b)| *b),
            // No index: a new id starts a new call, otherwise the latest call continues.
            None => match &id {
                Some(id) => self
                    .blocks
                    .iter()
                    .position(|b| matches!(b, Block::Tool { id: existing, .. } if existing == id)),
                None => self.tool_slots.last().map(|(_, b)| *b),
            },
        };
        let index = match existing {
            Some(index) => index,
            None => {
                self.close_open(emit);
                let index = self.blocks.len();
                let id = id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}", uuid::Uuid::new_v4().simple()));
                let name = name.clone().unwrap_or_default();
                emit(&AssistantMessageEvent::ToolcallStart {
                    content_index: index,
                    id: &id,
                    tool_name: &name,
                });
                self.blocks.push(Block::Tool {
                    id,
                    name,
                    arguments: String::new(),
                });
                self.tool_slots.push((wire_index, index));
                index
            }
        };
        if let Block::Tool {
            name: current,
            arguments: args,
            ..
        } = &mut self.blocks[index]
        {
            if let Some(name) = name.filter(|n| !n.is_empty())
                && current.is_empty()
            {
                *current = name;
            }
            if let Some(fragment) = arguments.filter(|a| !a.is_empty()) {
                args.push_str(&fragment);
                emit(&AssistantMessageEvent::ToolcallDelta {
                    content_index: index,
                    delta: &fragment,
                });
            }
        }
    }

    fn close_open(&mut self, emit: Emit<'_>) {
        if let Some(index) = self.open.take() {
            match &self.blocks[index] {
                Block::Text(text) => emit(&AssistantMessageEvent::TextEnd {
                    content_index: index,
                    content: text,
                }),
                Block::Thinking(text) => emit(&AssistantMessageEvent::ThinkingEnd {
                    content_index: index,
                    content: text,
                }),
                Block::Tool { .. } => {}
            }
        }
    }

    /// Ends every open block and builds the message. `stopped` overrides the stop reason
    /// (an abort or an error after content had arrived).
    pub fn finish(
        mut self,
        stopped: Option<(StopReason, Option<String>)>,
        emit: Emit<'_>,
    ) -> Assembled {
        self.close_open(emit);
        let mut content = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks.into_iter().enumerate() {
            match block {
                Block::Text(text) => content.push(AssistantContent::Text { text }),
                Block::Thinking(thinking) => content.push(AssistantContent::Thinking {
                    thinking,
                    thinking_signature: self
                        .signatures
                        .iter()
                        .rev()
                        .find(|(at, _)| *at == index)
                        .map(|(_, signature)| signature.clone()),
                }),
                Block::Tool {
                    id,
                    name,
                    arguments,
                } => {
                    let block = AssistantContent::ToolCall(parse_tool_call(id, name, arguments));
                    emit(&AssistantMessageEvent::ToolcallEnd {
                        content_index: index,
                        tool_call: &block,
                    });
                    content.push(block);
                }
            }
        }
        let has_calls = content
            .iter()
            .any(|b| matches!(b, AssistantContent::ToolCall(_)));
        let (stop_reason, error_message) = match stopped {
            Some(stopped) => stopped,
            None => map_finish(self.finish_reason.as_deref(), has_calls),
        };
        Assembled {
            content,
            stop_reason,
            error_message,
            usage: self.usage.as_ref().map(to_usage).unwrap_or_default(),
            raw_usage: self.usage,
            response_id: self.response_id,
            model: self.model,
            report: self.report,
        }
    }
}

fn parse_tool_call(id: String, name: String, raw: String) -> ToolCall {
    let raw = if raw.trim().is_empty() {
        "{}".to_string()
    } else {
        raw
    };
    let arguments_error = match serde_json::from_str::<serde::de::IgnoredAny>(&raw) {
        Ok(_) if raw.trim_start().starts_with('{') => None,
        Ok(_) => Some("the arguments are not a JSON object".to_string()),
        Err(err) => Some(format!("the arguments are not valid JSON ({err})")),
    };
    ToolCall {
        id: id.into(),
        name,
        raw_arguments: raw,
        arguments_error,
    }
}

fn map_finish(reason: Option<&str>, has_calls: bool) -> (StopReason, Option<String>) {
    match reason {
        Some("length") => (StopReason::Length, None),
        Some("content_filter") => (
            StopReason::Error,
            Some("the provider's content filter stopped the response (finish_reason: content_filter)".to_string()),
        ),
        Some("error") => (StopReason::Error, Some("the model server ended the response with finish_reason: error".to_string())),
        _ if has_calls => (StopReason::ToolUse, None),
        _ => (StopReason::Stop, None),
    }
}

/// Chat-completions usage to message usage: cached prompt tokens are counted as `cacheRead`,
/// not `input`.
pub fn to_usage(wire: &WireUsage) -> Usage {
    let cached = wire.cached().min(wire.prompt_tokens);
    let written = wire
        .cache_creation_input_tokens
        .unwrap_or(0)
        .min(wire.prompt_tokens - cached);
    let input = wire.prompt_tokens - cached - written;
    Usage {
        input,
        output: wire.completion_tokens,
        cache_read: cached,
        cache_write: written,
        total_tokens: input + wire.completion_tokens + cached + written,
        cost: crate::events::Cost::default(),
        reasoning: wire
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
    }
}

#[cfg(test)]
mod tests;
