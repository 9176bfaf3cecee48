//! Talking to the model: OpenAI-compatible chat completions or Anthropic's Messages API,
//! streamed. Both become the same chunks: the Anthropic stream is translated on arrival
//! (`anthropic.rs`), so one assembler builds every message.
//!
//! The pieces, from the wire up: a [`Transport`] turns a request into a status and a byte
//! stream (HTTP, or a replayed fixture, optionally recorded); [`SseStream`] turns bytes into
//! chunks; [`Assembler`] turns chunks into an assistant message and its delta events. The
//! agent loop drives them and owns retries (`crate::http::RetryPolicy`) because retries are visible in
//! the event stream.

mod anthropic;
mod assemble;
mod context;
mod decorate;
mod error;
pub mod fixture;
mod models;
pub mod pricing;
pub mod provider;
mod record_redact;
mod serving;
mod sse;
mod transport;
mod wire;

pub use assemble::{Assembled, Assembler, to_usage};
pub use context::known_context_window;
pub use decorate::RequestDecorator;
pub use error::LlmError;
pub use models::{DiscoveryError, ListedModel, first_model, listed_window};
pub use provider::Provider;
pub use serving::ServerReport;
pub use sse::{Liveness, SseItem, SseStream};
pub use transport::{
    ByteStream, HttpTransport, Request, Response, Spliced, Transport, TransportError,
    WireConversation,
};
pub use wire::{
    Body, RequestSpec, ToolDefinition, WireMessages, WireTools, WireUsage, build_body,
    build_body_cached,
};

/// The wire format a model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// OpenAI-compatible chat completions (Dynamo, OpenAI, vLLM, OpenRouter, ...).
    #[default]
    ChatCompletions,
    /// Anthropic's Messages API.
    AnthropicMessages,
}

impl Dialect {
    /// Where requests go, from the API root (`http://host:8000/v1`; Anthropic's with or
    /// without `/v1`).
    pub fn url(self, base_url: &str) -> String {
        match self {
            Dialect::ChatCompletions => format!("{base_url}/chat/completions"),
            Dialect::AnthropicMessages => anthropic::messages_url(base_url),
        }
    }

    /// The headers that carry the key (and the API version), as the API wants them.
    pub fn auth(self, api_key: Option<String>) -> Vec<(&'static str, String)> {
        match self {
            Dialect::ChatCompletions => api_key
                .map(|key| vec![("authorization", format!("Bearer {key}"))])
                .unwrap_or_default(),
            Dialect::AnthropicMessages => anthropic::auth(api_key),
        }
    }

    /// Whether `GET <base>/models` can pick the model when `--model` names none (the
    /// OpenAI-shaped list worker reads; Anthropic's needs the id given).
    pub fn lists_models(self) -> bool {
        self == Dialect::ChatCompletions
    }

    /// An assistant message's `api` (Pi's names for the two wire formats).
    pub fn api_name(self) -> &'static str {
        match self {
            Dialect::ChatCompletions => crate::events::ASSISTANT_API,
            Dialect::AnthropicMessages => "anthropic-messages",
        }
    }
}
