//! The assistant message being streamed, and the rule every message follows on the wire:
//! exactly one `message_start` (with `stopReason: "pending"` and no content), its
//! `message_update` deltas, and exactly one `message_end` with the whole message.
//!
//! [`StreamingMessage`] holds that rule in one place: the start is emitted lazily, just before
//! the first delta or the end, whichever comes first, and closing consumes the value, so a
//! message cannot be ended twice or left open.
//!
//! It is also where deltas are redacted: each block's deltas pass through a
//! [`StreamRedactor`], so a secret the model streams in two pieces is still replaced (the
//! emitter's per-line redaction cannot see across lines).

use std::collections::HashMap;

use crate::events::{AssistantMessage, AssistantMessageEvent, Emitter, Event, Message, StopReason};
use crate::llm::pricing::Price;
use crate::llm::{Assembled, Assembler};
use crate::secrets::{Secrets, StreamRedactor};

pub(super) struct StreamingMessage<'e> {
    emitter: &'e Emitter,
    /// The message as `message_start` shows it: no content yet, stop reason pending.
    pending: AssistantMessage,
    started: bool,
    secrets: Secrets,
    /// Per content block.
    redactors: HashMap<usize, StreamRedactor>,
    /// What the model's tokens cost, when known.
    price: Option<Price>,
}

impl<'e> StreamingMessage<'e> {
    /// `skeleton` supplies everything but the content (provider, model, timestamp, ...).
    pub(super) fn new(emitter: &'e Emitter, skeleton: &AssistantMessage) -> Self {
        StreamingMessage {
            emitter,
            pending: AssistantMessage {
                content: Vec::new(),
                stop_reason: StopReason::Pending,
                error_message: None,
                ..skeleton.clone()
            },
            started: false,
            secrets: emitter.secrets(),
            redactors: HashMap::new(),
            price: None,
        }
    }

    /// Prices the message's usage when it ends.
    pub(super) fn priced(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// Emits one streamed piece (after `message_start`, if it was not out yet). Deltas are
    /// redacted across pieces; a block's end first releases what was held back.
    pub(super) fn push(&mut self, event: &AssistantMessageEvent<'_>) {
        self.start();
        if self.secrets.is_empty() {
            return self.emit(event);
        }
        match *event {
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            }
            | AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            }
            | AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            } => {
                let shown = self.redact(content_index, delta);
                if !shown.is_empty() {
                    self.emit(&delta_like(event, content_index, &shown));
                }
            }
            AssistantMessageEvent::TextEnd { content_index, .. }
            | AssistantMessageEvent::ThinkingEnd { content_index, .. }
            | AssistantMessageEvent::ToolcallEnd { content_index, .. } => {
                if let Some(rest) = self.release(content_index) {
                    self.emit(&delta_like(event, content_index, &rest));
                }
                self.emit(event);
            }
            _ => self.emit(event),
        }
    }

    fn redact(&mut self, block: usize, delta: &str) -> String {
        let secrets = &self.secrets;
        self.redactors
            .entry(block)
            .or_default()
            .push(secrets, delta)
    }

    /// What block `block` still holds back, if anything.
    fn release(&mut self, block: usize) -> Option<String> {
        let rest = self.redactors.remove(&block)?.flush(&self.secrets);
        (!rest.is_empty()).then_some(rest)
    }

    fn emit(&self, event: &AssistantMessageEvent<'_>) {
        self.emitter.emit(&Event::MessageUpdate {
            assistant_message_event: event,
        });
    }

    /// Ends the assembled message: the last deltas (open blocks closing, tool calls ending),
    /// then `message_end`. `stopped` overrides the stop reason (abort, error); `observe` sees
    /// the assembly before it is folded into the message.
    pub(super) fn close(
        mut self,
        assembler: Assembler,
        stopped: Option<(StopReason, Option<String>)>,
        observe: impl FnOnce(&Assembled),
    ) -> AssistantMessage {
        let assembled = assembler.finish(stopped, &mut |event| self.push(event));
        observe(&assembled);
        let mut message = self.pending.clone();
        message.content = assembled.content;
        message.stop_reason = assembled.stop_reason;
        message.error_message = assembled.error_message;
        message.usage = assembled.usage;
        if let Some(price) = &self.price {
            message.usage.cost = price.cost(&message.usage);
        }
        message.response_id = assembled.response_id;
        if let Some(model) = assembled.model {
            message.model = model;
        }
        self.end(message)
    }

    /// Ends the message with `message` as it finally is.
    pub(super) fn end(mut self, message: AssistantMessage) -> AssistantMessage {
        self.start();
        self.emitter.emit(&Event::MessageEnd {
            message: &Message::Assistant(message.clone()),
        });
        message
    }

    fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.emitter.emit(&Event::MessageStart {
                message: &Message::Assistant(self.pending.clone()),
            });
        }
    }
}

/// A delta of the same kind of block as `event` (a delta or an end).
fn delta_like<'a>(
    event: &AssistantMessageEvent<'_>,
    content_index: usize,
    delta: &'a str,
) -> AssistantMessageEvent<'a> {
    match event {
        AssistantMessageEvent::TextDelta { .. } | AssistantMessageEvent::TextEnd { .. } => {
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            }
        }
        AssistantMessageEvent::ThinkingDelta { .. } | AssistantMessageEvent::ThinkingEnd { .. } => {
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            }
        }
        _ => AssistantMessageEvent::ToolcallDelta {
            content_index,
            delta,
        },
    }
}

#[cfg(test)]
mod tests;
