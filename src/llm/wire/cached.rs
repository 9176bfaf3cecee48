//! The conversation's wire form, kept between requests.
//!
//! Every request carries the whole conversation, so a run that rebuilt it each time (a JSON
//! value per message, a redaction pass over every string, then serialization) would pay for
//! turn 1,000 a thousand times what it paid for turn 1. Messages never change once they are in
//! the conversation, so each is converted, redacted and serialized once, when it is first sent,
//! and appended to one text the requests share: nothing a request does grows with the
//! conversation but copying its bytes onto the wire.
//!
//! The cache is dropped whole when what it holds may be stale: when the conversation is
//! rewritten (compaction; the owner calls [`WireMessages::clear`], and a conversation shorter
//! than the cache is noticed anyway) and when a secret was added since a message was redacted
//! (the set's [`Secrets::generation`]). The rest of the body is still redacted whole, last,
//! with each request.

use std::sync::Arc;

use serde_json::Value;

use super::{RequestSpec, envelope, message_to_wire, system_message};
use crate::events::Message;
use crate::llm::{Spliced, WireConversation};
use crate::secrets::Secrets;

/// A request body before the decorators: its JSON and, for chat completions, the
/// conversation and the tools already serialized (see [`Spliced`]).
#[derive(Debug, Clone)]
pub struct Body {
    /// The body; a field `spliced` holds is a placeholder in it.
    pub json: Value,
    /// The system message and the conversation, one JSON text per message, and the tools.
    pub spliced: Spliced,
}

impl Body {
    /// A body that is whole: nothing is spliced in.
    pub fn whole(json: Value) -> Self {
        Body {
            json,
            spliced: Spliced::default(),
        }
    }
}

/// The conversation as sent: each message serialized and redacted once, joined by commas
/// into one text that requests share (appended to in place once no request holds it).
#[derive(Debug, Default)]
pub struct WireMessages {
    text: Arc<Vec<u8>>,
    /// How many messages `text` holds.
    count: usize,
    /// The secret set's generation when `text` was redacted.
    generation: usize,
}

impl WireMessages {
    /// Forgets every message: the conversation was rewritten.
    pub fn clear(&mut self) {
        self.text = Arc::default();
        self.count = 0;
    }

    /// The wire form of `messages`, converting only those not seen before.
    fn sync(&mut self, messages: &[Message], secrets: &Secrets) -> Arc<Vec<u8>> {
        let generation = secrets.generation();
        if generation != self.generation || messages.len() < self.count {
            self.clear();
            self.generation = generation;
        }
        if messages.len() > self.count {
            let text = Arc::make_mut(&mut self.text);
            for message in &messages[self.count..] {
                if !text.is_empty() {
                    text.push(b',');
                }
                let mut wire = message_to_wire(message);
                secrets.redact_value(&mut wire);
                // Serializing a JSON value into memory cannot fail.
                let _ = serde_json::to_writer(&mut *text, &wire);
            }
            self.count = messages.len();
        }
        self.text.clone()
    }
}

/// The request body for `spec`, its conversation from `cache` (brought up to date first) and
/// its tools from their text. Anthropic's body regroups messages and marks the newest as a
/// cache breakpoint, so it is built whole each time.
pub fn build_body_cached(
    spec: &RequestSpec<'_>,
    cache: &mut WireMessages,
    secrets: &Secrets,
) -> Body {
    if spec.dialect == crate::llm::Dialect::AnthropicMessages {
        return Body::whole(super::build_body(spec));
    }
    let messages = WireConversation {
        system: redacted_json(system_message(spec.system_prompt), secrets),
        conversation: cache.sync(spec.messages, secrets),
    };
    // The tools' text is scanned, not copied, unless it holds a secret (an MCP server's
    // description may).
    let tools = (!spec.tools.is_empty()).then(|| match secrets.redact(&spec.tools.text) {
        std::borrow::Cow::Borrowed(_) => spec.tools.text.clone(),
        std::borrow::Cow::Owned(clean) => Arc::from(clean),
    });
    Body {
        json: envelope(spec, Value::Null, tools.as_ref().map(|_| Value::Null)),
        spliced: Spliced {
            messages: Some(messages),
            tools,
        },
    }
}

fn redacted_json(mut message: Value, secrets: &Secrets) -> Arc<str> {
    secrets.redact_value(&mut message);
    Arc::from(message.to_string())
}

#[cfg(test)]
mod tests;
