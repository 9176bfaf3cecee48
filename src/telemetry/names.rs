//! The names of everything worker exports, in one place.
//!
//! `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions; everything else is
//! worker's own and sits under a namespace (`--otel-namespace`, default `worker`). With
//! `agentic_pi`, every span, metric and attribute agentic-pi 0.3 emits exists under the same
//! name with the same meaning (`agentic_pi.session`, `agentic_pi.tool.invocations`,
//! `agentic_pi.usage.cost_usd`, ...), so its dashboards keep working; worker's additions
//! (serving reports, request ids, Dynamo identity) sit under the same namespace.

use super::TelemetryError;

/// The namespace when none is asked for.
pub const DEFAULT_NAMESPACE: &str = "worker";
/// Env fallback of `--otel-namespace`.
pub const NAMESPACE_ENV: &str = "WORKER_OTEL_NAMESPACE";

/// `--otel-namespace`: a lowercase identifier, dots allowed between parts (`agentic_pi`,
/// `acme.agent`), so every name built from it is a valid attribute key.
pub fn parse_namespace(value: &str) -> Result<String, TelemetryError> {
    let valid_part = |part: &str| {
        part.starts_with(|c: char| c.is_ascii_lowercase())
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    if value.split('.').all(valid_part) {
        Ok(value.to_string())
    } else {
        Err(TelemetryError::Namespace(value.to_string()))
    }
}

/// The semantic conventions' names (gen_ai 1.37+).
pub mod gen_ai {
    /// The provider's name, the conventions' older key; same value as [`PROVIDER_NAME`].
    pub const SYSTEM: &str = "gen_ai.system";
    /// The provider's name (`dynamo`, `openai`, …), on the session and `chat` spans and the
    /// model-request metrics.
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    /// `chat` on `chat` spans and duration points, `execute_tool` on tool spans.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// The run's session id, on the session span.
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
    /// The model the run asked for, on the session and `chat` spans and the model-request
    /// metrics.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// The model the response named, on `chat` spans.
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    /// The server's response id (`chatcmpl-…`), on `chat` spans when the server sent one.
    pub const RESPONSE_ID: &str = "gen_ai.response.id";
    /// Why the response ended, as a one-element array (`stop`, `length`, `tool_call`, `error`,
    /// `aborted`), on `chat` spans.
    pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    /// All input tokens of the request, cached ones included (as the conventions ask).
    pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    /// The request's output tokens, on `chat` spans.
    pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    /// The part of the input served from the provider's cache.
    pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    /// The part of the input written to the provider's cache.
    pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
    /// The tool's name, on tool spans and the tool metrics.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The model's id for the tool call, on tool spans.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// Which tokens a [`TOKEN_USAGE`] point counts: `input`, `output`, `cache_read` or
    /// `cache_write`.
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
    /// The run's prompt, on the session span with `--otel-include-content`.
    pub const PROMPT: &str = "gen_ai.prompt";
    /// The response's text, on `chat` spans with `--otel-include-content`.
    pub const COMPLETION: &str = "gen_ai.completion";
    /// Histogram of tokens per model request (`{token}`), one point per non-zero
    /// [`TOKEN_TYPE`].
    pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
    /// Histogram of model-request durations in seconds, from the request to the finished
    /// answer.
    pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
}

/// Worker's own names under one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    namespace: String,
}

impl Default for Names {
    fn default() -> Names {
        Names::new(DEFAULT_NAMESPACE)
    }
}

impl Names {
    /// Names under `namespace`, taken as given (check it with [`parse_namespace`] first).
    pub fn new(namespace: &str) -> Names {
        Names {
            namespace: namespace.to_string(),
        }
    }

    /// The namespace, as the status line shows it.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `<namespace>.<name>`.
    pub fn get(&self, name: &str) -> String {
        format!("{}.{name}", self.namespace)
    }
}

/// The OpenTelemetry semantic conventions for MCP, as far as worker uses them.
pub mod mcp {
    /// The MCP method of a span (`tools/call` on the span of an MCP tool's call).
    pub const METHOD_NAME: &str = "mcp.method.name";
}

/// The names under the namespace, as passed to [`Names::get`].
pub mod own {
    // Spans.
    /// The root span of a run.
    pub const SESSION: &str = "session";
    /// A span per turn, under the session span.
    pub const TURN: &str = "turn";
    // Metrics.
    /// Histogram of each model request's estimated cost in USD (requests with a cost only).
    pub const COST: &str = "cost.usd";
    /// Histogram of each tool call's duration in seconds.
    pub const TOOL_DURATION: &str = "tool.duration";
    /// Counter of finished tool calls, by `gen_ai.tool.name`.
    pub const TOOL_INVOCATIONS: &str = "tool.invocations";
    /// Counter of tool calls whose result is an error, by `gen_ai.tool.name`.
    pub const TOOL_FAILURES: &str = "tool.failures";
    /// Counter of turns started; also the run's turn count on the session span at the end.
    pub const TURNS: &str = "turns";
    // Attributes.
    /// The turn's index from 0 (as `turnIndex` in the stream), on the turn span.
    pub const TURN_INDEX: &str = "turn.index";
    /// The sandbox backend (`--sandbox`), on the session span.
    pub const SANDBOX_BACKEND: &str = "sandbox.backend";
    /// Cached input tokens: agentic-pi's name, also under the conventions' one.
    pub const CACHE_READ_TOKENS: &str = "usage.cache_read_tokens";
    /// Input tokens written to the provider's cache: agentic-pi's name, also under the
    /// conventions' one.
    pub const CACHE_WRITE_TOKENS: &str = "usage.cache_write_tokens";
    /// USD: of one request on a `chat` span, of the run on the session span.
    pub const COST_USD: &str = "usage.cost_usd";
    /// The run's total tokens, on the session span at the end.
    pub const TOTAL_TOKENS: &str = "usage.total_tokens";
    /// Why the run stopped, lowercase (`stop`, `error`, `aborted`, `timeout`, …), on the
    /// session span at the end.
    pub const STOP_REASON: &str = "stop_reason";
    /// Whether the tool's result is an error, on tool spans.
    pub const TOOL_IS_ERROR: &str = "tool.is_error";
    /// The call's arguments as the model sent them, on tool spans with
    /// `--otel-include-content`.
    pub const TOOL_ARGUMENTS: &str = "tool.arguments";
    /// The tool's result text, on tool spans with `--otel-include-content`.
    pub const TOOL_RESULT: &str = "tool.result";
    /// The MCP server a call went to, on the tool spans of MCP tools (`mcp__SERVER__TOOL`).
    pub const TOOL_MCP_SERVER: &str = "tool.mcp_server";
    /// The `x-request-id` of the request whose response asked for the call, on tool spans.
    pub const TOOL_SOURCE_REQUEST_ID: &str = "tool.source_request_id";
    /// The `x-request-id` of the request that carried the result back, on tool spans; absent
    /// when the run ended first.
    pub const TOOL_CONSUMER_REQUEST_ID: &str = "tool.consumer_request_id";
    /// A record of the run's control (`control_ack`, `approval_resolved`, ...): a span event
    /// on the session span, named `<namespace>.control.<type>`.
    pub const CONTROL: &str = "control";
    /// The control record's fields as JSON, on its span event.
    pub const CONTROL_RECORD: &str = "control.record";
    /// The request's `x-request-id`, on `chat` spans.
    pub const REQUEST_ID: &str = "request.id";
    /// The Dynamo identity's `session_type_id`, on the session span when the bridge is active.
    pub const DYNAMO_SESSION_TYPE_ID: &str = "dynamo.session_type_id";
    /// The Dynamo identity's `session_id`, on the session span when the bridge is active.
    pub const DYNAMO_SESSION_ID: &str = "dynamo.session_id";
    /// The Dynamo identity's `trajectory_id`, on the session span when the bridge is active.
    pub const DYNAMO_TRAJECTORY_ID: &str = "dynamo.trajectory_id";
    /// The Dynamo identity's `parent_trajectory_id`, on the session span when the bridge is
    /// active and the run has a parent.
    pub const DYNAMO_PARENT_TRAJECTORY_ID: &str = "dynamo.parent_trajectory_id";
    /// Prefix of a `chat` span's serving report (`serving.worker_id`, ...).
    pub const SERVING: &str = "serving";
}
