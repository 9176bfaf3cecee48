//! The names of everything worker exports, in one place.
//!
//! `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions; everything else is
//! worker's own and sits under a namespace (`--otel-namespace`, default `worker`). With
//! `agentic_pi`, every span, metric and attribute agentic-pi 0.3 emits exists under the same
//! name with the same meaning (`agentic_pi.session`, `agentic_pi.tool.invocations`,
//! `agentic_pi.usage.cost_usd`, ...), so its dashboards keep working; worker's additions
//! (serving reports, request ids, Dynamo identity) sit under the same namespace.

/// The namespace when none is asked for.
pub const DEFAULT_NAMESPACE: &str = "worker";
/// Env fallback of `--otel-namespace`.
pub const NAMESPACE_ENV: &str = "WORKER_OTEL_NAMESPACE";

/// `--otel-namespace`: a lowercase identifier, dots allowed between parts (`agentic_pi`,
/// `acme.agent`), so every name built from it is a valid attribute key.
pub fn parse_namespace(value: &str) -> Result<String, String> {
    let valid_part = |part: &str| {
        part.starts_with(|c: char| c.is_ascii_lowercase())
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    if value.split('.').all(valid_part) {
        Ok(value.to_string())
    } else {
        Err("a namespace is lowercase letters, digits and '_', starting with a letter, parts joined by '.' (e.g. worker, agentic_pi)".into())
    }
}

/// The semantic conventions' names (gen_ai 1.37+).
pub mod gen_ai {
    pub const SYSTEM: &str = "gen_ai.system";
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    pub const RESPONSE_ID: &str = "gen_ai.response.id";
    pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    /// All input tokens of the request, cached ones included (as the conventions ask).
    pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    /// The part of the input served from the provider's cache.
    pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    /// The part of the input written to the provider's cache.
    pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
    pub const PROMPT: &str = "gen_ai.prompt";
    pub const COMPLETION: &str = "gen_ai.completion";
    pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
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
    pub fn new(namespace: &str) -> Names {
        Names {
            namespace: namespace.to_string(),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `<namespace>.<name>`.
    pub fn get(&self, name: &str) -> String {
        format!("{}.{name}", self.namespace)
    }
}

/// The names under the namespace, as passed to [`Names::get`].
pub mod own {
    // Spans.
    pub const SESSION: &str = "session";
    pub const TURN: &str = "turn";
    // Metrics.
    pub const COST: &str = "cost.usd";
    pub const TOOL_DURATION: &str = "tool.duration";
    pub const TOOL_INVOCATIONS: &str = "tool.invocations";
    pub const TOOL_FAILURES: &str = "tool.failures";
    pub const TURNS: &str = "turns";
    // Attributes.
    pub const TURN_INDEX: &str = "turn.index";
    pub const SANDBOX_BACKEND: &str = "sandbox.backend";
    /// Cached input tokens: agentic-pi's name, also under the conventions' one.
    pub const CACHE_READ_TOKENS: &str = "usage.cache_read_tokens";
    pub const CACHE_WRITE_TOKENS: &str = "usage.cache_write_tokens";
    /// USD: of one request on a `chat` span, of the run on the session span.
    pub const COST_USD: &str = "usage.cost_usd";
    pub const TOTAL_TOKENS: &str = "usage.total_tokens";
    pub const STOP_REASON: &str = "stop_reason";
    pub const TOOL_IS_ERROR: &str = "tool.is_error";
    pub const TOOL_ARGUMENTS: &str = "tool.arguments";
    pub const TOOL_RESULT: &str = "tool.result";
    pub const TOOL_SOURCE_REQUEST_ID: &str = "tool.source_request_id";
    pub const TOOL_CONSUMER_REQUEST_ID: &str = "tool.consumer_request_id";
    pub const REQUEST_ID: &str = "request.id";
    pub const DYNAMO_SESSION_TYPE_ID: &str = "dynamo.session_type_id";
    pub const DYNAMO_SESSION_ID: &str = "dynamo.session_id";
    pub const DYNAMO_TRAJECTORY_ID: &str = "dynamo.trajectory_id";
    pub const DYNAMO_PARENT_TRAJECTORY_ID: &str = "dynamo.parent_trajectory_id";
    /// Prefix of a `chat` span's serving report (`serving.worker_id`, ...).
    pub const SERVING: &str = "serving";
}
