//! The OTLP exporter side: providers, the span tree and the instruments. Every name comes
//! from [`super::names`].
//!
//! Spans are kept as OpenTelemetry contexts: the session's, the current turn's, and one per
//! running tool call, so children always hang off the right parent even when tool calls run
//! concurrently. Export runs on the run's own runtime ([`pipeline`]) with a one-second
//! request timeout and no retries; at the end what waits is sent, both signals at once, and
//! the run waits for that at most [`FLUSH_LIMIT`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol as OtlpProtocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

use super::delivery::{Failure, RecordingClient, SharedClient, Tapped, delivery_warnings};
use super::names::{gen_ai, own};
use super::{FLUSH_LIMIT, Protocol, Settings, TelemetryError, clip};
use crate::events::{
    AssistantMessage, ExtensionStatus, RunStopReason, Serving, StopReason, ToolCall,
};
use crate::extension::{
    Exchange, Extension, Finish, RunInfo, RunNote, RunOutcome, StatusLine, ToolEnding, ToolJoins,
};
use crate::sync::LockExt;
use pipeline::{MetricPipe, SpanQueue};

mod attributes;
mod child;
mod instruments;
pub(super) mod pipeline;
use attributes::{finish_reason, serving_attributes};
use instruments::Instruments;

/// The instrumentation scope: the program that instruments, whatever the namespace.
const SCOPE: &str = "worker";
const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

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

pub(super) struct Otel {
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
    /// Where ended spans and collected metrics leave from; `None` for a child run's
    /// telemetry, which exports through its parent's providers and leaves sending to the
    /// parent.
    export: Option<Export>,
}

/// The parent run's export: its queues and the tasks that send periodically.
struct Export {
    /// The exporters' HTTP client, built while the run goes on rather than at its end.
    client: SharedClient,
    spans: Option<SpanQueue<Tapped<opentelemetry_otlp::SpanExporter>>>,
    metrics: Option<MetricPipe<Tapped<opentelemetry_otlp::MetricExporter>>>,
    periodic: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl Otel {
    /// A content attribute: redacted, then cut to the content limit (the other way round, a
    /// cut could keep half a secret that the exporter's pass would no longer recognize).
    fn content(&self, text: &str) -> String {
        clip(&self.settings.secrets.redact(text))
    }

    pub(super) fn new(settings: Settings, status: ExtensionStatus) -> Result<Otel, TelemetryError> {
        // The exporters' HTTP client needs the process-wide TLS provider.
        crate::http::install_tls();
        let resource = attributes::resource(&settings.service_name);
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
        let tls = settings
            .endpoint
            .as_ref()
            .is_none_or(|endpoint| !endpoint.starts_with("http://"));
        let http = SharedClient::new(EXPORT_TIMEOUT, tls);
        let http_client = http.clone();
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
            let exporter = builder.build().map_err(|err| TelemetryError::Exporter {
                signal: "trace",
                source: err.into(),
            })?;
            let queue = SpanQueue::new(
                Tapped {
                    inner: exporter,
                    failure: trace_failure.clone(),
                    secrets: settings.secrets.clone(),
                },
                settings.batching,
            );
            let provider = SdkTracerProvider::builder()
                .with_span_processor(queue.clone())
                .with_resource(resource.clone())
                .build();
            let tracer = BoxedTracer::new(Box::new(provider.tracer(SCOPE)));
            Some((provider, tracer, queue))
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
            let exporter = builder.build().map_err(|err| TelemetryError::Exporter {
                signal: "metric",
                source: err.into(),
            })?;
            let pipe = MetricPipe::new(
                Tapped {
                    inner: exporter,
                    failure: metric_failure.clone(),
                    secrets: crate::secrets::Secrets::default(),
                },
                settings.batching,
            );
            let provider = SdkMeterProvider::builder()
                .with_view(instruments::bounded_attribute_sets)
                .with_reader(pipe.reader())
                .with_resource(resource)
                .build();
            let instruments = Instruments::new(&provider.meter(SCOPE), &settings.names);
            Some((provider, instruments, pipe))
        } else {
            None
        };
        let carrier: HashMap<String, String> = settings.parent_context.iter().cloned().collect();
        let parent = TraceContextPropagator::new().extract(&carrier);
        let (tracer, spans) = match tracer {
            Some((provider, tracer, queue)) => (Some((provider, tracer)), Some(queue)),
            None => (None, None),
        };
        let (meter, metrics) = match meter {
            Some((provider, instruments, pipe)) => (Some((provider, instruments)), Some(pipe)),
            None => (None, None),
        };
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
            export: Some(Export {
                client: http_client,
                spans,
                metrics,
                periodic: Mutex::new(Vec::new()),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_or_recover()
    }

    fn system_attributes(state: &State) -> Vec<KeyValue> {
        vec![
            KeyValue::new(gen_ai::SYSTEM, state.provider.clone()),
            KeyValue::new(gen_ai::PROVIDER_NAME, state.provider.clone()),
            KeyValue::new(gen_ai::REQUEST_MODEL, state.model.clone()),
        ]
    }

    /// One of worker's own attributes, under the namespace.
    fn own(&self, name: &str, value: impl Into<opentelemetry::Value>) -> KeyValue {
        KeyValue::new(self.settings.names.get(name), value)
    }
}

impl Extension for Otel {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }

    fn start(&self) {
        if let Some(export) = &self.export {
            let client = export.client.clone();
            tokio::spawn(async move { client.build() });
            let started = [
                export.spans.as_ref().and_then(SpanQueue::start),
                export.metrics.as_ref().and_then(MetricPipe::start),
            ];
            export
                .periodic
                .lock_or_recover()
                .extend(started.into_iter().flatten());
        }
        let Some((_, tracer)) = &self.tracer else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new(
                gen_ai::CONVERSATION_ID,
                self.settings.session_id.to_string(),
            ),
            self.own(own::SANDBOX_BACKEND, self.settings.sandbox_backend.clone()),
        ];
        if let Some(identity) = &self.settings.identity {
            attributes.extend([
                self.own(
                    own::DYNAMO_SESSION_TYPE_ID,
                    identity.session_type_id.clone(),
                ),
                self.own(own::DYNAMO_SESSION_ID, identity.session_id.clone()),
                self.own(own::DYNAMO_TRAJECTORY_ID, identity.trajectory_id.clone()),
            ]);
            if let Some(parent) = &identity.parent_trajectory_id {
                attributes.push(self.own(own::DYNAMO_PARENT_TRAJECTORY_ID, parent.clone()));
            }
        }
        let span = tracer
            .span_builder(self.settings.names.get(own::SESSION))
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
                span.set_attribute(KeyValue::new(gen_ai::PROMPT, self.content(info.prompt)));
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
            .span_builder(self.settings.names.get(own::TURN))
            .with_attributes(vec![self.own(own::TURN_INDEX, i64::from(turn))])
            .start_with_context(tracer, &session);
        state.turn = Some(session.with_span(span));
    }

    fn assistant_finished(&self, _turn: u32, message: &AssistantMessage, requested_at: SystemTime) {
        let mut state = self.state();
        let usage = &message.usage;
        // The conventions count every input token, cached or written to the cache.
        let input = usage.input + usage.cache_read + usage.cache_write;
        if let Some((_, instruments)) = &self.meter {
            let base = Self::system_attributes(&state);
            let duration = SystemTime::now()
                .duration_since(requested_at)
                .unwrap_or_default()
                .as_secs_f64();
            let mut attributes = base.clone();
            attributes.push(KeyValue::new(gen_ai::OPERATION_NAME, "chat"));
            instruments.operation_duration.record(duration, &attributes);
            if usage.cost.total > 0.0 {
                instruments.cost.record(usage.cost.total, &base);
            }
            for (kind, count) in [
                ("input", input),
                ("output", usage.output),
                ("cache_read", usage.cache_read),
                ("cache_write", usage.cache_write),
            ] {
                if count > 0 {
                    let mut attributes = base.clone();
                    attributes.push(KeyValue::new(gen_ai::TOKEN_TYPE, kind));
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
            KeyValue::new(gen_ai::OPERATION_NAME, "chat"),
            KeyValue::new(gen_ai::RESPONSE_MODEL, message.model.clone()),
            KeyValue::new(
                gen_ai::RESPONSE_FINISH_REASONS,
                opentelemetry::Value::Array(
                    vec![opentelemetry::StringValue::from(finish_reason(
                        message.stop_reason,
                    ))]
                    .into(),
                ),
            ),
            KeyValue::new(gen_ai::USAGE_INPUT_TOKENS, input.cast_signed()),
            KeyValue::new(gen_ai::USAGE_OUTPUT_TOKENS, usage.output.cast_signed()),
        ]);
        if let Some(id) = &message.response_id {
            attributes.push(KeyValue::new(gen_ai::RESPONSE_ID, id.clone()));
        }
        if let Some((request_id, serving)) = state.exchange.take() {
            if let Some(id) = request_id {
                attributes.push(self.own(own::REQUEST_ID, id));
            }
            if let Some(serving) = serving {
                attributes.extend(serving_attributes(&self.settings.names, &serving));
            }
        }
        // Under the conventions' names and under agentic-pi's (namespaced) ones.
        if usage.cache_read > 0 {
            let count = usage.cache_read.cast_signed();
            attributes.push(KeyValue::new(gen_ai::USAGE_CACHE_READ_INPUT_TOKENS, count));
            attributes.push(self.own(own::CACHE_READ_TOKENS, count));
        }
        if usage.cache_write > 0 {
            let count = usage.cache_write.cast_signed();
            attributes.push(KeyValue::new(
                gen_ai::USAGE_CACHE_CREATION_INPUT_TOKENS,
                count,
            ));
            attributes.push(self.own(own::CACHE_WRITE_TOKENS, count));
        }
        attributes.push(self.own(own::COST_USD, usage.cost.total));
        if self.settings.include_content {
            attributes.push(KeyValue::new(
                gen_ai::COMPLETION,
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
                .unwrap_or_else(|| finish_reason(message.stop_reason).to_string());
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
            span.set_attribute(self.own(own::TOOL_CONSUMER_REQUEST_ID, request_id.to_string()));
            span.end_with_timestamp(ended);
        }
    }

    fn tool_started(&self, call: &ToolCall) {
        let Some((_, tracer)) = &self.tracer else {
            self.state()
                .tools
                .insert(call.id.to_string(), (Context::new(), Instant::now()));
            return;
        };
        let mut state = self.state();
        let parent = state
            .turn
            .clone()
            .or_else(|| state.session.clone())
            .unwrap_or_default();
        let mut attributes = vec![
            KeyValue::new(gen_ai::OPERATION_NAME, "execute_tool"),
            KeyValue::new(gen_ai::TOOL_NAME, call.name.clone()),
            KeyValue::new(gen_ai::TOOL_CALL_ID, call.id.to_string()),
        ];
        if let Some(source) = self.joins.source() {
            attributes.push(self.own(own::TOOL_SOURCE_REQUEST_ID, source));
        }
        if let Some(server) = call.mcp_server() {
            attributes.push(KeyValue::new(super::names::mcp::METHOD_NAME, "tools/call"));
            attributes.push(self.own(own::TOOL_MCP_SERVER, server.to_string()));
        }
        if self.settings.include_content {
            attributes.push(self.own(own::TOOL_ARGUMENTS, self.content(&call.raw_arguments)));
        }
        let span = tracer
            .span_builder(format!("execute_tool {}", call.name))
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        state.tools.insert(
            call.id.to_string(),
            (parent.with_span(span), Instant::now()),
        );
    }

    fn tool_ended(&self, call: &ToolCall, ending: ToolEnding<'_>) {
        let Some((cx, started)) = self.state().tools.remove(call.id.as_str()) else {
            return;
        };
        if let Some((_, instruments)) = &self.meter {
            // Metric points cannot be redacted on export; the name is the model's to choose.
            let name = self.settings.secrets.redact(&call.name).into_owned();
            let attributes = [KeyValue::new(gen_ai::TOOL_NAME, name)];
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
        span.set_attribute(self.own(own::TOOL_IS_ERROR, ending.is_error));
        let text = ending.result.text();
        if self.settings.include_content {
            span.set_attribute(self.own(own::TOOL_RESULT, self.content(&text)));
        }
        if ending.is_error {
            let first_line = text.lines().last().unwrap_or("tool error").to_string();
            span.set_status(Status::error(first_line));
        }
        // Ended (at this time) once the next request carries the result back.
        self.joins.hold((cx, SystemTime::now()));
    }

    fn for_child(&self, child: crate::extension::ChildOf<'_>) -> Option<Arc<dyn Extension>> {
        self.child_otel(child)
            .map(|otel| Arc::new(otel) as Arc<dyn Extension>)
    }

    fn noted(&self, note: &RunNote) {
        if self.tracer.is_none() {
            return;
        }
        let state = self.state();
        let Some(session) = &state.session else {
            return;
        };
        // The record is redacted already; its text is cut like any content attribute.
        let record = clip(&note.data.to_string());
        session.span().add_event(
            self.settings
                .names
                .get(&format!("{}.{}", own::CONTROL, note.kind)),
            vec![self.own(own::CONTROL_RECORD, record)],
        );
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
                span.set_attribute(self.own(
                    own::STOP_REASON,
                    format!("{:?}", outcome.stop_reason).to_lowercase(),
                ));
                span.set_attribute(self.own(own::TOTAL_TOKENS, tokens.total.cast_signed()));
                span.set_attribute(self.own(own::COST_USD, outcome.stats.cost));
                span.set_attribute(self.own(own::TURNS, i64::from(outcome.stats.turns)));
                if outcome.stop_reason == RunStopReason::Stop {
                    span.set_status(Status::Ok);
                } else {
                    let description = match outcome.fatal {
                        Some(fatal) => fatal.message.clone(),
                        None => {
                            format!("the run ended with {:?}", outcome.stop_reason).to_lowercase()
                        }
                    };
                    span.set_status(Status::error(description));
                }
                span.end();
            }
        }
        let Some(export) = &self.export else {
            // The parent sends what its providers hold.
            return Box::pin(async { Vec::new() });
        };
        // The periodic tasks stop; an export of theirs on its way finishes first, since the
        // final sends below wait for it.
        for task in export.periodic.lock_or_recover().drain(..) {
            task.abort();
        }
        let spans = export.spans.clone();
        let metrics = export.metrics.clone();
        let trace_failure = self.trace_failure.clone();
        let metric_failure = self.metric_failure.clone();
        Box::pin(async move {
            let sent = tokio::time::timeout(FLUSH_LIMIT, async {
                let spans = async {
                    if let Some(queue) = &spans {
                        queue.send_waiting().await;
                    }
                };
                let metrics = async {
                    match &metrics {
                        Some(pipe) => pipe.send().await,
                        None => Ok(()),
                    }
                };
                tokio::join!(spans, metrics).1
            })
            .await;
            let dropped = spans.as_ref().map_or(0, SpanQueue::dropped);
            delivery_warnings(
                sent.ok(),
                dropped,
                trace_failure.take(),
                metric_failure.take(),
            )
        })
    }
}
