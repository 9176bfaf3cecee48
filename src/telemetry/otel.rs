//! The OTLP exporter side: providers, the span tree and the instruments.
//!
//! Spans are kept as OpenTelemetry contexts: the session's, the current turn's, and one per
//! running tool call, so children always hang off the right parent even when tool calls run
//! concurrently. Export runs on the SDK's own threads (batch span processor, periodic metric
//! reader) with a one-second request timeout and no retries; at the end both providers shut
//! down in parallel on a helper thread that the run waits for at most [`FLUSH_LIMIT`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol as OtlpProtocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

use super::delivery::{Failure, RecordingClient, Tapped, blocking_client};
use super::redact::Redacted;
use super::{FLUSH_LIMIT, Protocol, Settings, clip};
use crate::events::{
    AssistantMessage, ExtensionStatus, RunStopReason, Serving, StopReason, ToolCall,
};
use crate::extension::{
    Exchange, Extension, Finish, RunInfo, RunOutcome, StatusLine, ToolEnding, ToolJoins,
};
use crate::sync::LockExt;

const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    tool_invocations: Counter<u64>,
    tool_failures: Counter<u64>,
    turns: Counter<u64>,
}

#[derive(Default)]
struct State {
    session: Option<Context>,
    turn: Option<Context>,
    tools: HashMap<String, (Context, Instant)>,
    provider: String,
    model: String,
    /// The latest exchange's request id and serving report, for its `chat` span.
    exchange: Option<(Option<String>, Option<Serving>)>,
}

pub struct Otel {
    settings: Settings,
    status: ExtensionStatus,
    tracer: Option<(SdkTracerProvider, BoxedTracer)>,
    trace_failure: Arc<Failure>,
    metric_failure: Arc<Failure>,
    meter: Option<(SdkMeterProvider, Instruments)>,
    /// The caller's trace (`TRACEPARENT` / `TRACESTATE`), or an empty context.
    parent: Context,
    state: Mutex<State>,
    /// Finished tool spans, ended once the request carrying their result back is known.
    joins: ToolJoins<(Context, SystemTime)>,
}

impl Otel {
    /// A content attribute: redacted, then cut to the content limit (the other way round, a
    /// cut could keep half a secret that the exporter's pass would no longer recognize).
    fn content(&self, text: &str) -> String {
        clip(&self.settings.secrets.redact(text))
    }

    pub fn new(settings: Settings, status: ExtensionStatus) -> Result<Otel, String> {
        // The exporters' HTTP client needs the process-wide TLS provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let protocol = match settings.protocol {
            Protocol::HttpProtobuf => OtlpProtocol::HttpBinary,
            Protocol::HttpJson => OtlpProtocol::HttpJson,
        };
        let endpoint = |signal: &str| {
            settings
                .endpoint
                .as_ref()
                .map(|base| format!("{base}/v1/{signal}"))
        };
        let http = blocking_client(EXPORT_TIMEOUT)?;
        let trace_failure = Arc::new(Failure::default());
        let metric_failure = Arc::new(Failure::default());
        let tracer = if settings.traces {
            let mut builder = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(protocol)
                .with_timeout(EXPORT_TIMEOUT)
                .with_http_client(RecordingClient::new(http.clone(), trace_failure.clone()))
                .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled());
            if let Some(url) = endpoint("traces") {
                builder = builder.with_endpoint(url);
            }
            let exporter = builder
                .build()
                .map_err(|err| format!("cannot build the trace exporter: {err}"))?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(Tapped {
                    inner: Redacted {
                        inner: exporter,
                        secrets: settings.secrets.clone(),
                    },
                    failure: trace_failure.clone(),
                })
                .with_resource(resource.clone())
                .build();
            let tracer = BoxedTracer::new(Box::new(provider.tracer("worker")));
            Some((provider, tracer))
        } else {
            None
        };
        let meter = if settings.metrics {
            let mut builder = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(protocol)
                .with_timeout(EXPORT_TIMEOUT)
                .with_http_client(RecordingClient::new(http, metric_failure.clone()))
                .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled());
            if let Some(url) = endpoint("metrics") {
                builder = builder.with_endpoint(url);
            }
            let exporter = builder
                .build()
                .map_err(|err| format!("cannot build the metric exporter: {err}"))?;
            let provider = SdkMeterProvider::builder()
                .with_periodic_exporter(Tapped {
                    inner: exporter,
                    failure: metric_failure.clone(),
                })
                .with_resource(resource)
                .build();
            let meter = provider.meter("worker");
            let instruments = Instruments {
                token_usage: meter
                    .u64_histogram("gen_ai.client.token.usage")
                    .with_unit("{token}")
                    .with_description("Tokens used per model request, by gen_ai.token.type")
                    .build(),
                operation_duration: meter
                    .f64_histogram("gen_ai.client.operation.duration")
                    .with_unit("s")
                    .with_description("Duration of model requests")
                    .build(),
                tool_duration: meter
                    .f64_histogram("worker.tool.duration")
                    .with_unit("s")
                    .build(),
                tool_invocations: meter.u64_counter("worker.tool.invocations").build(),
                tool_failures: meter.u64_counter("worker.tool.failures").build(),
                turns: meter.u64_counter("worker.turns").build(),
            };
            Some((provider, instruments))
        } else {
            None
        };
        let carrier: HashMap<String, String> =
            [("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")]
                .into_iter()
                .filter_map(|(key, var)| std::env::var(var).ok().map(|v| (key.to_string(), v)))
                .collect();
        let parent = TraceContextPropagator::new().extract(&carrier);
        Ok(Otel {
            settings,
            status,
            tracer,
            trace_failure,
            metric_failure,
            meter,
            parent,
            state: Mutex::new(State::default()),
            joins: ToolJoins::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_or_recover()
    }

    fn system_attributes(state: &State) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.system", state.provider.clone()),
            KeyValue::new("gen_ai.provider.name", state.provider.clone()),
            KeyValue::new("gen_ai.request.model", state.model.clone()),
        ]
    }
}

/// A `chat` span's serving report, as `worker.serving.*` attributes.
fn serving_attributes(serving: &Serving) -> Vec<KeyValue> {
    let mut attributes = Vec::new();
    let mut text = |key: &'static str, value: &Option<String>| {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value.clone()));
        }
    };
    text("worker.serving.worker_id", &serving.worker_id);
    text(
        "worker.serving.prefill_worker_id",
        &serving.prefill_worker_id,
    );
    for (key, value) in [
        ("worker.serving.dp_rank", serving.dp_rank),
        ("worker.serving.cached_tokens", serving.cached_tokens),
        (
            "worker.serving.router_queue_depth",
            serving.router_queue_depth,
        ),
    ] {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value as i64));
        }
    }
    for (key, value) in [
        ("worker.serving.ttft_ms", serving.ttft_ms),
        ("worker.serving.itl_ms", serving.itl_ms),
        ("worker.serving.queue_ms", serving.queue_ms),
        ("worker.serving.kv_hit_rate", serving.kv_hit_rate),
    ] {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value));
        }
    }
    attributes
}

fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Pending => "pending",
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

impl Extension for Otel {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }

    fn start(&self) {
        let Some((_, tracer)) = &self.tracer else {
            return;
        };
        let mut attributes = vec![KeyValue::new(
            "gen_ai.conversation.id",
            self.settings.session_id.clone(),
        )];
        if let Some(identity) = &self.settings.identity {
            attributes.push(KeyValue::new(
                "worker.dynamo.session_type_id",
                identity.session_type_id.clone(),
            ));
            attributes.push(KeyValue::new(
                "worker.dynamo.session_id",
                identity.session_id.clone(),
            ));
            attributes.push(KeyValue::new(
                "worker.dynamo.trajectory_id",
                identity.trajectory_id.clone(),
            ));
            if let Some(parent) = &identity.parent_trajectory_id {
                attributes.push(KeyValue::new(
                    "worker.dynamo.parent_trajectory_id",
                    parent.clone(),
                ));
            }
        }
        let span = tracer
            .span_builder("worker.session")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(tracer, &self.parent);
        self.state().session = Some(self.parent.with_span(span));
    }

    fn run_started(&self, info: RunInfo<'_>) {
        let mut state = self.state();
        state.provider = info.provider.to_string();
        state.model = info.model.to_string();
        if let Some(session) = &state.session {
            let span = session.span();
            for kv in Self::system_attributes(&state) {
                span.set_attribute(kv);
            }
            if self.settings.include_content {
                span.set_attribute(KeyValue::new("gen_ai.prompt", self.content(info.prompt)));
            }
        }
    }

    fn turn_started(&self, turn: u32) {
        if let Some((_, instruments)) = &self.meter {
            instruments.turns.add(1, &[]);
        }
        let Some((_, tracer)) = &self.tracer else {
            return;
        };
        let mut state = self.state();
        let Some(session) = state.session.clone() else {
            return;
        };
        let span = tracer
            .span_builder("worker.turn")
            .with_attributes(vec![KeyValue::new("worker.turn.index", i64::from(turn))])
            .start_with_context(tracer, &session);
        state.turn = Some(session.with_span(span));
    }

    fn assistant_finished(&self, _turn: u32, message: &AssistantMessage, requested_at: SystemTime) {
        let mut state = self.state();
        let usage = &message.usage;
        let input = usage.input + usage.cache_read;
        if let Some((_, instruments)) = &self.meter {
            let base = Self::system_attributes(&state);
            let duration = SystemTime::now()
                .duration_since(requested_at)
                .unwrap_or_default()
                .as_secs_f64();
            let mut attributes = base.clone();
            attributes.push(KeyValue::new("gen_ai.operation.name", "chat"));
            instruments.operation_duration.record(duration, &attributes);
            for (kind, count) in [
                ("input", input),
                ("output", usage.output),
                ("cache_read", usage.cache_read),
                ("cache_write", usage.cache_write),
            ] {
                if count > 0 {
                    let mut attributes = base.clone();
                    attributes.push(KeyValue::new("gen_ai.token.type", kind));
                    instruments.token_usage.record(count, &attributes);
                }
            }
        }
        let Some((_, tracer)) = &self.tracer else {
            return;
        };
        let Some(parent) = state.turn.clone().or_else(|| state.session.clone()) else {
            return;
        };
        let mut attributes = Self::system_attributes(&state);
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.response.model", message.model.clone()),
            KeyValue::new(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(
                    vec![opentelemetry::StringValue::from(stop_name(
                        message.stop_reason,
                    ))]
                    .into(),
                ),
            ),
            KeyValue::new("gen_ai.usage.input_tokens", input as i64),
            KeyValue::new("gen_ai.usage.output_tokens", usage.output as i64),
        ]);
        if let Some(id) = &message.response_id {
            attributes.push(KeyValue::new("gen_ai.response.id", id.clone()));
        }
        if let Some((request_id, serving)) = state.exchange.take() {
            if let Some(id) = request_id {
                attributes.push(KeyValue::new("worker.request.id", id));
            }
            if let Some(serving) = serving {
                attributes.extend(serving_attributes(&serving));
            }
        }
        if usage.cache_read > 0 {
            attributes.push(KeyValue::new(
                "worker.usage.cache_read_tokens",
                usage.cache_read as i64,
            ));
        }
        if usage.cache_write > 0 {
            attributes.push(KeyValue::new(
                "worker.usage.cache_write_tokens",
                usage.cache_write as i64,
            ));
        }
        if self.settings.include_content {
            attributes.push(KeyValue::new(
                "gen_ai.completion",
                self.content(&message.text()),
            ));
        }
        let span = tracer
            .span_builder(format!("chat {}", state.model))
            .with_kind(SpanKind::Client)
            .with_start_time(requested_at)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        let cx = parent.with_span(span);
        if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            let description = message
                .error_message
                .clone()
                .unwrap_or_else(|| stop_name(message.stop_reason).to_string());
            cx.span().set_status(Status::error(description));
        }
        cx.span().end();
    }

    fn exchange_finished(&self, exchange: &Exchange) {
        self.state().exchange = Some((exchange.x_request_id.clone(), exchange.serving.clone()));
    }

    fn request_accepted(&self, request_id: &str) {
        for (cx, ended) in self.joins.consumed(request_id) {
            let span = cx.span();
            span.set_attribute(KeyValue::new(
                "worker.tool.consumer_request_id",
                request_id.to_string(),
            ));
            span.end_with_timestamp(ended);
        }
    }

    fn tool_started(&self, call: &ToolCall) {
        let Some((_, tracer)) = &self.tracer else {
            self.state()
                .tools
                .insert(call.id.clone(), (Context::new(), Instant::now()));
            return;
        };
        let mut state = self.state();
        let parent = state
            .turn
            .clone()
            .or_else(|| state.session.clone())
            .unwrap_or_default();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
        ];
        if let Some(source) = self.joins.source() {
            attributes.push(KeyValue::new("worker.tool.source_request_id", source));
        }
        if self.settings.include_content {
            attributes.push(KeyValue::new(
                "worker.tool.arguments",
                self.content(&call.raw_arguments),
            ));
        }
        let span = tracer
            .span_builder(format!("execute_tool {}", call.name))
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        state
            .tools
            .insert(call.id.clone(), (parent.with_span(span), Instant::now()));
    }

    fn tool_ended(&self, call: &ToolCall, ending: ToolEnding<'_>) {
        let Some((cx, started)) = self.state().tools.remove(&call.id) else {
            return;
        };
        if let Some((_, instruments)) = &self.meter {
            // Metric points cannot be redacted on export; the name is the model's to choose.
            let name = self.settings.secrets.redact(&call.name).into_owned();
            let attributes = [KeyValue::new("gen_ai.tool.name", name)];
            instruments
                .tool_duration
                .record(started.elapsed().as_secs_f64(), &attributes);
            instruments.tool_invocations.add(1, &attributes);
            if ending.is_error {
                instruments.tool_failures.add(1, &attributes);
            }
        }
        if self.tracer.is_none() {
            return;
        }
        let span = cx.span();
        span.set_attribute(KeyValue::new("worker.tool.is_error", ending.is_error));
        let text = ending.result.text();
        if self.settings.include_content {
            span.set_attribute(KeyValue::new("worker.tool.result", self.content(&text)));
        }
        if ending.is_error {
            let first_line = text.lines().last().unwrap_or("tool error").to_string();
            span.set_status(Status::error(first_line));
        }
        // Ended (at this time) once the next request carries the result back.
        self.joins.hold((cx, SystemTime::now()));
    }

    fn turn_ended(&self, _turn: u32) {
        if let Some(turn) = self.state().turn.take() {
            turn.span().end();
        }
    }

    fn finish(&self, outcome: RunOutcome<'_>) -> Finish<'_> {
        {
            for (cx, ended) in self.joins.drain() {
                cx.span().end_with_timestamp(ended);
            }
            let mut state = self.state();
            for (_, (cx, _)) in state.tools.drain() {
                cx.span().end();
            }
            if let Some(turn) = state.turn.take() {
                turn.span().end();
            }
            if let Some(session) = state.session.take() {
                let span = session.span();
                let tokens = &outcome.stats.tokens;
                span.set_attribute(KeyValue::new(
                    "worker.stop_reason",
                    format!("{:?}", outcome.stop_reason).to_lowercase(),
                ));
                span.set_attribute(KeyValue::new(
                    "worker.usage.total_tokens",
                    tokens.total as i64,
                ));
                span.set_attribute(KeyValue::new("worker.usage.cost_usd", outcome.stats.cost));
                span.set_attribute(KeyValue::new(
                    "worker.turns",
                    i64::from(outcome.stats.turns),
                ));
                if outcome.stop_reason != RunStopReason::Stop {
                    let description = match outcome.fatal {
                        Some(fatal) => fatal.message.clone(),
                        None => {
                            format!("the run ended with {:?}", outcome.stop_reason).to_lowercase()
                        }
                    };
                    span.set_status(Status::error(description));
                } else {
                    span.set_status(Status::Ok);
                }
                span.end();
            }
        }
        let tracer = self.tracer.as_ref().map(|(provider, _)| provider.clone());
        let meter = self.meter.as_ref().map(|(provider, _)| provider.clone());
        let trace_failure = self.trace_failure.clone();
        let metric_failure = self.metric_failure.clone();
        Box::pin(async move {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let traces = std::thread::spawn(move || {
                    tracer.map(|p| p.shutdown_with_timeout(FLUSH_LIMIT))
                });
                let metrics = meter.map(|p| p.shutdown_with_timeout(FLUSH_LIMIT));
                let traces = traces.join().ok().flatten();
                let _ = tx.send((traces, metrics));
            });
            let waited = tokio::task::spawn_blocking(move || rx.recv_timeout(FLUSH_LIMIT)).await;
            let mut warnings = Vec::new();
            match waited {
                Ok(Ok((_, metrics))) => {
                    let traces = trace_failure.take();
                    if let Some(err) = traces {
                        warnings.push(StatusLine::Warning(format!(
                            "telemetry: could not deliver traces to the collector: {err}"
                        )));
                    }
                    let export_failure = metric_failure.take();
                    let metrics = match (export_failure, metrics) {
                        (Some(err), _) => Some(err),
                        (None, Some(Err(err))) => Some(err.to_string()),
                        _ => None,
                    };
                    if let Some(err) = metrics {
                        warnings.push(StatusLine::Warning(format!(
                            "telemetry: could not deliver metrics to the collector: {err}"
                        )));
                    }
                }
                _ => warnings.push(StatusLine::Warning(format!(
                    "telemetry: the collector did not take the data within {} s; it was dropped",
                    FLUSH_LIMIT.as_secs()
                ))),
            }
            warnings
        })
    }
}
