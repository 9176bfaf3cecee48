//! OpenTelemetry export: traces and metrics over OTLP, following the GenAI semantic
//! conventions, so a run shows up in the orchestrator's observability stack beside its own
//! spans.
//!
//! Off unless asked for: `--no-otel` beats `--otel`, which beats `WORKER_OTEL_ENABLED`; a bare
//! `OTEL_EXPORTER_OTLP_ENDPOINT` does not turn it on. When off, nothing is built and nothing
//! is printed. When on, a `telemetry` status line follows the header; export never touches
//! stdout, never changes the exit code, and a dead collector costs at most [`FLUSH_LIMIT`] at
//! exit (plus a warning).
//!
//! Spans: `<ns>.session` (root; parented by `TRACEPARENT` when set) → `<ns>.turn` →
//! `chat <model>` (CLIENT) and `execute_tool <name>`. Metrics: `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`, `<ns>.cost.usd`, `<ns>.tool.duration`,
//! `<ns>.tool.invocations`, `<ns>.tool.failures`, `<ns>.turns`. `<ns>` is `--otel-namespace`
//! (`worker`; `agentic_pi` gives agentic-pi's names, see [`names`]). Prompts, completions and
//! tool arguments/results are attached only with `--otel-include-content`, cut to
//! [`CONTENT_LIMIT`] characters.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::config::{Env, http_url};
use crate::dynamo::identity::AgentIdentity;
use crate::events::{ExtensionState, ExtensionStatus};
use crate::extension::{Extension, StatusLine};
use crate::secrets::Secrets;

pub use batching::Batching;
pub use credentials::credentials;
pub use names::{NAMESPACE_ENV, Names, parse_namespace};

mod batching;
mod credentials;
#[cfg(feature = "otel")]
mod delivery;
pub mod names;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod redact;

/// The longest a run waits at exit for telemetry to leave.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(2);
/// Content attributes are cut to this many characters.
pub const CONTENT_LIMIT: usize = 4096;
/// `service.name` when neither `--otel-service-name` nor `OTEL_SERVICE_NAME` is set.
pub const DEFAULT_SERVICE_NAME: &str = "worker";
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// The command line's telemetry flags.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--otel`: turn export on.
    pub otel: bool,
    /// `--no-otel`: never export, whatever else asks for it.
    pub no_otel: bool,
    /// `--otel-endpoint`: the OTLP base URL; `None` leaves it to the `OTEL_EXPORTER_OTLP_*`
    /// variables, else `http://localhost:4318`.
    pub endpoint: Option<String>,
    /// `--otel-service-name`; `None` falls back to `OTEL_SERVICE_NAME`, else `worker`.
    pub service_name: Option<String>,
    /// `--otel-include-content`: attach prompts, completions and tool arguments and results.
    pub include_content: bool,
    /// `--otel-namespace`, checked by [`parse_namespace`].
    pub namespace: Option<String>,
}

/// How OTLP is encoded over HTTP (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: the default, and what an unsupported value falls back to.
    HttpProtobuf,
    /// `http/json`: OTLP messages as JSON.
    HttpJson,
}

/// Everything export needs, resolved from flags and the standard `OTEL_*` variables.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The run's session id, as `gen_ai.conversation.id` on the session span.
    pub session_id: crate::ids::SessionId,
    /// `service.name` of the exported telemetry.
    pub service_name: String,
    /// `--otel-endpoint`: the base URL signals are posted under (`/v1/traces`, `/v1/metrics`).
    /// `None`: the exporter reads `OTEL_EXPORTER_OTLP_*` itself.
    pub endpoint: Option<String>,
    /// The OTLP encoding.
    pub protocol: Protocol,
    /// Whether spans are exported (`false` when `OTEL_TRACES_EXPORTER=none`).
    pub traces: bool,
    /// Whether metrics are exported (`false` when `OTEL_METRICS_EXPORTER=none`).
    pub metrics: bool,
    /// Attach prompts, completions and tool arguments and results, redacted and cut to
    /// [`CONTENT_LIMIT`] characters.
    pub include_content: bool,
    /// The prefix of worker's own span, metric and attribute names.
    pub names: Names,
    /// `--sandbox`, as `<ns>.sandbox.backend` on the session span.
    pub sandbox_backend: String,
    /// The Dynamo identity, as `<ns>.dynamo.*` on the session span; `None` when the Dynamo
    /// bridge is not active in this run.
    pub identity: Option<AgentIdentity>,
    /// Every exported span is redacted with these, like every other output.
    pub secrets: Secrets,
    /// How spans are batched and how often metrics are sent.
    pub batching: Batching,
    /// The W3C trace context the run continues (`traceparent` and `tracestate`, from the
    /// `TRACEPARENT` and `TRACESTATE` variables); empty: the session span is a root.
    pub parent_context: Vec<(String, String)>,
}

/// Why telemetry could not be configured or built.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `--otel-namespace` is not a lowercase identifier; carries the value given.
    #[error(
        "a namespace is lowercase letters, digits and '_', starting with a letter, parts joined by '.' (e.g. worker, agentic_pi)"
    )]
    Namespace(String),
    /// An endpoint export would post to (`--otel-endpoint`, an `OTEL_EXPORTER_OTLP_*`
    /// variable) is not an http(s) URL; the message names the flag or variable.
    #[error(transparent)]
    Endpoint(#[from] crate::config::UrlError),
    /// This worker was built without the `otel` feature.
    #[error("this worker was built without the `otel` feature")]
    NotBuiltIn,
    /// An OTLP exporter could not be built.
    #[error("cannot build the {signal} exporter: {source}")]
    Exporter {
        /// Which exporter: `trace` or `metric`.
        signal: &'static str,
        /// The exporter's own error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What [`configure`] decided.
pub struct Configured {
    /// The telemetry extension: the exporter, or one that only reports why it is skipped;
    /// `None` when telemetry is off and `--no-otel` was not given (nothing to report).
    pub extension: Option<Arc<dyn Extension>>,
    /// Warnings for stderr (an unsupported protocol, an exporter that could not be built).
    pub warnings: Vec<String>,
}

fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Turn export on; agentic-pi's names are read too, so its deployments keep working.
const ENABLED_VARS: [&str; 2] = ["WORKER_OTEL_ENABLED", "AGENTIC_PI_OTEL_ENABLED"];
/// Attach content to spans.
const INCLUDE_CONTENT_VARS: [&str; 2] = [
    "WORKER_OTEL_INCLUDE_CONTENT",
    "AGENTIC_PI_OTEL_INCLUDE_CONTENT",
];

fn first_set(env: &dyn Env, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| env.get(name))
}

/// Decides whether telemetry runs, and builds it if so. When it runs, an endpoint that is not
/// an http(s) URL is an error (a usage error: the run does not start).
pub fn configure(
    env: &dyn Env,
    flags: &Flags,
    session_id: &crate::ids::SessionId,
    sandbox_backend: &str,
    identity: Option<AgentIdentity>,
    secrets: &Secrets,
) -> Result<Configured, TelemetryError> {
    if flags.no_otel {
        let status = status(
            ExtensionState::Skipped,
            Some(("disabled-by-flag", "--no-otel")),
            flags.include_content,
            json!({}),
        );
        return Ok(Configured {
            extension: Some(Arc::new(StatusOnly(status))),
            warnings: Vec::new(),
        });
    }
    if !(flags.otel || truthy(first_set(env, &ENABLED_VARS))) {
        return Ok(Configured {
            extension: None,
            warnings: Vec::new(),
        });
    }
    check_endpoints(env, flags)?;
    let mut warnings = Vec::new();
    let protocol = match env
        .get("OTEL_EXPORTER_OTLP_PROTOCOL")
        .as_deref()
        .map(str::trim)
    {
        None | Some("http/protobuf") => Protocol::HttpProtobuf,
        Some("http/json") => Protocol::HttpJson,
        Some(other) => {
            warnings.push(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported; using http/protobuf"
            ));
            Protocol::HttpProtobuf
        }
    };
    let exporter_on = |name: &str| env.get(name).is_none_or(|v| v.trim() != "none");
    let settings = Settings {
        session_id: session_id.clone(),
        service_name: flags
            .service_name
            .clone()
            .or_else(|| env.get("OTEL_SERVICE_NAME"))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string()),
        endpoint: flags
            .endpoint
            .as_ref()
            .map(|e| e.trim_end_matches('/').to_string()),
        protocol,
        traces: exporter_on("OTEL_TRACES_EXPORTER"),
        metrics: exporter_on("OTEL_METRICS_EXPORTER"),
        include_content: flags.include_content || truthy(first_set(env, &INCLUDE_CONTENT_VARS)),
        names: Names::new(
            flags
                .namespace
                .as_deref()
                .unwrap_or(names::DEFAULT_NAMESPACE),
        ),
        sandbox_backend: sandbox_backend.to_string(),
        identity,
        secrets: secrets.clone(),
        batching: Batching::from_env(env),
        parent_context: [("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")]
            .into_iter()
            .filter_map(|(key, var)| env.get(var).map(|value| (key.to_string(), value)))
            .collect(),
    };
    let shown_endpoint = settings
        .endpoint
        .clone()
        .or_else(|| env.get(ENDPOINT_VARS[0]))
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    let details = json!({
        "endpoint": shown_endpoint,
        "protocol": match protocol { Protocol::HttpProtobuf => "http/protobuf", Protocol::HttpJson => "http/json" },
        "serviceName": settings.service_name,
        "namespace": settings.names.namespace(),
        "traces": settings.traces,
        "metrics": settings.metrics,
    });
    match build(settings, details.clone()) {
        Ok(extension) => Ok(Configured {
            extension: Some(extension),
            warnings,
        }),
        Err(err) => {
            let reason = err.to_string();
            warnings.push(format!("telemetry disabled: {reason}"));
            let status = status(
                ExtensionState::Skipped,
                Some(("init-failed", &reason)),
                flags.include_content,
                details,
            );
            Ok(Configured {
                extension: Some(Arc::new(StatusOnly(status))),
                warnings,
            })
        }
    }
}

/// The variables the exporter reads an endpoint from when `--otel-endpoint` is not given.
const ENDPOINT_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// Every endpoint export may post to is an http(s) URL.
fn check_endpoints(env: &dyn Env, flags: &Flags) -> Result<(), TelemetryError> {
    if let Some(endpoint) = &flags.endpoint {
        return http_url("--otel-endpoint", endpoint)
            .map(|_| ())
            .map_err(TelemetryError::Endpoint);
    }
    for name in ENDPOINT_VARS {
        if let Some(value) = env.get(name) {
            http_url(name, &value).map_err(TelemetryError::Endpoint)?;
        }
    }
    Ok(())
}

#[cfg(feature = "otel")]
fn build(
    settings: Settings,
    details: serde_json::Value,
) -> Result<Arc<dyn Extension>, TelemetryError> {
    let include_content = settings.include_content;
    let status = status(ExtensionState::Configured, None, include_content, details);
    Ok(Arc::new(otel::Otel::new(settings, status)?))
}

#[cfg(not(feature = "otel"))]
fn build(
    _settings: Settings,
    _details: serde_json::Value,
) -> Result<Arc<dyn Extension>, TelemetryError> {
    Err(TelemetryError::NotBuiltIn)
}

fn status(
    state: ExtensionState,
    skipped: Option<(&str, &str)>,
    include_content: bool,
    details: serde_json::Value,
) -> ExtensionStatus {
    let mut extra = details.as_object().cloned().unwrap_or_default();
    extra.insert("includeContent".into(), json!(include_content));
    ExtensionStatus {
        extension: "telemetry".into(),
        status: state,
        reason: skipped.map(|(reason, _)| reason.to_string()),
        message: skipped.map(|(_, message)| message.to_string()),
        extra,
    }
}

/// Telemetry that only reports why it is not running.
struct StatusOnly(ExtensionStatus);

impl Extension for StatusOnly {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.0.clone())]
    }
}

/// `text` cut to [`CONTENT_LIMIT`] characters, saying how much was dropped.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(CONTENT_LIMIT) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}…[truncated {} chars]",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

#[cfg(test)]
mod tests;
