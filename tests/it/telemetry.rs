//! OpenTelemetry export through the real binary, received by an OTLP/HTTP server in this test
//! that decodes the protobuf export requests: the span tree, parent links, attributes, metric
//! names, the TRACEPARENT parent, content gating, collector auth headers, and a dead collector.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

#[derive(Default)]
struct Received {
    /// When set, exports without `authorization: <this>` are refused with 401.
    required_auth: Option<String>,
    /// Each accepted export request: the signal (`traces`, `metrics`) and its body.
    exports: Vec<(String, Bytes)>,
}

impl Received {
    fn authorized(&self, headers: &HeaderMap) -> bool {
        self.required_auth.as_deref().is_none_or(|required| {
            headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(required)
        })
    }

    fn bodies<'a>(&'a self, signal: &'a str) -> impl Iterator<Item = Bytes> + 'a {
        self.exports
            .iter()
            .filter(move |(s, _)| s == signal)
            .map(|(_, body)| body.clone())
    }

    fn traces(&self) -> Vec<ExportTraceServiceRequest> {
        self.bodies("traces")
            .map(|b| ExportTraceServiceRequest::decode(b).expect("OTLP traces"))
            .collect()
    }

    fn metrics(&self) -> Vec<ExportMetricsServiceRequest> {
        self.bodies("metrics")
            .map(|b| ExportMetricsServiceRequest::decode(b).expect("OTLP metrics"))
            .collect()
    }
}

/// `POST /v1/{signal}`: OTLP/HTTP export, kept whole for the test to decode.
async fn export(
    State(received): State<Arc<Mutex<Received>>>,
    Path(signal): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let mut received = received.lock().unwrap();
    if !received.authorized(&headers) {
        return StatusCode::UNAUTHORIZED;
    }
    received.exports.push((signal, body));
    StatusCode::OK
}

pub(crate) struct Collector {
    pub(crate) url: String,
    received: Arc<Mutex<Received>>,
}

impl Collector {
    pub(crate) fn start() -> Collector {
        Collector::start_with(None)
    }

    fn start_with(required_auth: Option<&str>) -> Collector {
        let received = Arc::new(Mutex::new(Received {
            required_auth: required_auth.map(str::to_string),
            ..Received::default()
        }));
        let app = Router::new()
            .route("/v1/{signal}", post(export))
            .with_state(received.clone());
        Collector {
            url: format!("http://{}", serve(app)),
            received,
        }
    }

    pub(crate) fn spans(&self) -> Vec<Span> {
        self.received
            .lock()
            .unwrap()
            .traces()
            .iter()
            .flat_map(|r| r.resource_spans.iter())
            .flat_map(|r| r.scope_spans.iter())
            .flat_map(|s| s.spans.iter().cloned())
            .collect()
    }

    /// Every metric of every export, in the order received.
    fn metrics(&self) -> Vec<Metric> {
        self.received
            .lock()
            .unwrap()
            .metrics()
            .into_iter()
            .flat_map(|r| r.resource_metrics)
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .collect()
    }

    pub(crate) fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.metrics().into_iter().map(|m| m.name).collect();
        names.sort();
        names.dedup();
        names
    }

    /// A string attribute of the resource the first exported spans came with.
    fn resource_attribute(&self, key: &str) -> Option<String> {
        let traces = self.received.lock().unwrap().traces();
        let resource = traces.first()?.resource_spans.first()?.resource.as_ref()?;
        resource
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| match &kv.value.as_ref()?.value {
                Some(AnyValue::StringValue(s)) => Some(s.clone()),
                _ => None,
            })
    }
}

pub(crate) fn attr(span: &Span, key: &str) -> Option<AnyValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.clone())
}

pub(crate) fn string(span: &Span, key: &str) -> Option<String> {
    match attr(span, key)? {
        AnyValue::StringValue(s) => Some(s),
        _ => None,
    }
}

pub(crate) fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key)? {
        AnyValue::IntValue(n) => Some(n),
        _ => None,
    }
}

pub(crate) fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn scripted() -> MockLlm {
    MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            text("Reading both."),
            tool_call(0, "c-ok", "read", "{\"path\":\"a.txt\"}"),
            tool_call(1, "c-bad", "read", "{\"path\":\"missing.txt\"}"),
            finish("tool_calls"),
            usage(120, 20, 64),
            done(),
        ]),
        answer("a.txt says alpha."),
    ])
}

pub(crate) fn run_with(
    collector_url: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Run, MockLlm) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mock = scripted();
    let mut args = vec!["--model", "dynamo/m", "--otel-endpoint", collector_url];
    args.extend_from_slice(extra);
    let mut env = env.to_vec();
    env.push(("DYNAMO_BASE_URL", &mock.url));
    (run_worker(dir.path(), &args, "read the files", &env), mock)
}

/// A run of `--model dynamo/m` against `mock`, exporting to `collector`, in an empty directory,
/// with `extra` flags.
fn run_exporting(collector: &Collector, mock: &MockLlm, extra: &[&str], prompt: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--model",
        "dynamo/m",
        "--otel",
        "--otel-endpoint",
        &collector.url,
    ];
    args.extend_from_slice(extra);
    run_worker(dir.path(), &args, prompt, &[("DYNAMO_BASE_URL", &mock.url)])
}

/// The exported resource: the SDK's own attributes, and OTEL_RESOURCE_ATTRIBUTES as the
/// OpenTelemetry SDKs read it, except that the service name is worker's.
#[test]
fn the_resource_has_the_sdks_attributes_and_those_of_the_environment() {
    let collector = Collector::start();
    let (run, _mock) = run_with(
        &collector.url,
        &["--otel", "--otel-service-name", "ci-worker"],
        &[(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=ci,service.name=elsewhere",
        )],
    );
    run.assert_code(0);
    let attribute = |key: &str| collector.resource_attribute(key);
    assert_eq!(attribute("deployment.environment").as_deref(), Some("ci"));
    assert_eq!(attribute("service.name").as_deref(), Some("ci-worker"));
    assert_eq!(
        attribute("telemetry.sdk.name").as_deref(),
        Some("opentelemetry")
    );
    assert_eq!(attribute("telemetry.sdk.language").as_deref(), Some("rust"));
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

#[test]
fn a_run_exports_the_span_tree_metrics_and_joins_the_callers_trace() {
    let collector = Collector::start();
    let traceparent = format!("00-{TRACE_ID}-{PARENT_SPAN}-01");
    let (run, _mock) = run_with(
        &collector.url,
        &["--otel", "--otel-service-name", "ci-worker"],
        &[
            ("TRACEPARENT", &traceparent),
            ("DYN_AGENT_TRAJECTORY_ID", "traj-otel"),
        ],
    );
    run.assert_code(0);
    let status = run.extension("telemetry");
    assert_eq!(status["status"], "configured");
    assert_eq!(status["endpoint"], collector.url.as_str());
    assert_eq!(status["includeContent"], false);

    let spans = collector.spans();
    let session = named(&spans, "worker.session");
    assert_eq!(
        session.len(),
        1,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let session = session[0];
    assert_eq!(hex(&session.trace_id), TRACE_ID, "the caller's trace");
    assert_eq!(
        hex(&session.parent_span_id),
        PARENT_SPAN,
        "parented by TRACEPARENT"
    );
    assert_eq!(
        string(session, "gen_ai.conversation.id").as_deref(),
        run.events[0]["id"].as_str()
    );
    assert_eq!(
        string(session, "gen_ai.request.model").as_deref(),
        Some("m")
    );
    assert_eq!(string(session, "gen_ai.system").as_deref(), Some("dynamo"));
    assert_eq!(
        string(session, "worker.dynamo.trajectory_id").as_deref(),
        Some("traj-otel")
    );
    assert_eq!(session.status.as_ref().map(|s| s.code), Some(1), "OK");
    assert!(
        attr(session, "gen_ai.prompt").is_none(),
        "no content without --otel-include-content"
    );

    let turns = named(&spans, "worker.turn");
    assert_eq!(turns.len(), 2);
    assert!(turns.iter().all(|t| t.parent_span_id == session.span_id));
    let first_turn = turns
        .iter()
        .find(|t| int(t, "worker.turn.index") == Some(0))
        .unwrap();

    let chats = named(&spans, "chat m");
    assert_eq!(chats.len(), 2);
    let chat = chats
        .iter()
        .find(|c| c.parent_span_id == first_turn.span_id)
        .expect("a chat under the first turn");
    assert_eq!(chat.kind, 3, "SPAN_KIND_CLIENT");
    assert_eq!(
        string(chat, "gen_ai.operation.name").as_deref(),
        Some("chat")
    );
    assert_eq!(
        string(chat, "gen_ai.response.model").as_deref(),
        Some("mock-model")
    );
    assert_eq!(
        string(chat, "gen_ai.response.id").as_deref(),
        Some("chatcmpl-mock")
    );
    assert_eq!(int(chat, "gen_ai.usage.input_tokens"), Some(120));
    assert_eq!(int(chat, "gen_ai.usage.output_tokens"), Some(20));
    assert_eq!(int(chat, "worker.usage.cache_read_tokens"), Some(64));
    let session_id = run.events[0]["id"].as_str().unwrap();
    let (asked, answered) = (
        format!("{session_id}:r0:t0:a1"),
        format!("{session_id}:r0:t1:a1"),
    );
    assert_eq!(string(chat, "worker.request.id"), Some(asked.clone()));
    assert_eq!(int(chat, "worker.serving.cached_tokens"), Some(64));
    match attr(chat, "gen_ai.response.finish_reasons") {
        Some(AnyValue::ArrayValue(values)) => assert_eq!(values.values.len(), 1),
        other => panic!("finish reasons: {other:?}"),
    }

    let tools = named(&spans, "execute_tool read");
    assert_eq!(tools.len(), 2);
    assert!(tools.iter().all(|t| t.parent_span_id == first_turn.span_id));
    let failed = tools
        .iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-bad"))
        .unwrap();
    assert_eq!(
        failed.status.as_ref().map(|s| s.code),
        Some(2),
        "ERROR on a failed tool"
    );
    assert_eq!(string(failed, "gen_ai.tool.name").as_deref(), Some("read"));
    let ok = tools
        .iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-ok"))
        .unwrap();
    assert_ne!(ok.status.as_ref().map(|s| s.code), Some(2));
    // Each call names the request that asked for it and the one that carried its result back.
    for tool in &tools {
        assert_eq!(
            string(tool, "worker.tool.source_request_id"),
            Some(asked.clone())
        );
        assert_eq!(
            string(tool, "worker.tool.consumer_request_id"),
            Some(answered.clone())
        );
    }

    assert_eq!(
        collector.resource_attribute("service.name").as_deref(),
        Some("ci-worker")
    );
    assert_eq!(
        collector.metric_names(),
        [
            "gen_ai.client.operation.duration",
            "gen_ai.client.token.usage",
            "worker.tool.duration",
            "worker.tool.failures",
            "worker.tool.invocations",
            "worker.turns"
        ]
    );
}

#[test]
fn content_is_exported_only_when_asked_for() {
    let collector = Collector::start();
    let (run, _mock) = run_with(&collector.url, &["--otel", "--otel-include-content"], &[]);
    run.assert_code(0);
    let spans = collector.spans();
    let session = named(&spans, "worker.session")[0];
    assert_eq!(
        string(session, "gen_ai.prompt").as_deref(),
        Some("read the files")
    );
    let chats = named(&spans, "chat m");
    assert!(
        chats
            .iter()
            .any(|c| string(c, "gen_ai.completion").as_deref() == Some("a.txt says alpha."))
    );
    let tool = named(&spans, "execute_tool read")
        .into_iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-ok"))
        .unwrap();
    assert_eq!(string(tool, "worker.tool.result").as_deref(), Some("alpha"));
    assert_eq!(
        string(tool, "worker.tool.arguments").as_deref(),
        Some("{\"path\":\"a.txt\"}")
    );
}

#[test]
fn a_failed_run_marks_the_session_span_as_an_error() {
    let collector = Collector::start();
    let mock = MockLlm::start(vec![status(401, "{\"error\":{\"message\":\"bad key\"}}")]);
    let run = run_exporting(&collector, &mock, &[], "q");
    run.assert_code(1);
    let spans = collector.spans();
    let session = named(&spans, "worker.session")[0];
    let status = session.status.as_ref().unwrap();
    assert_eq!(status.code, 2);
    assert_eq!(status.message, "HTTP 401 Unauthorized: bad key");
    assert_eq!(
        named(&spans, "chat m")[0].status.as_ref().map(|s| s.code),
        Some(2)
    );
}

#[test]
fn off_unless_enabled_and_no_otel_wins() {
    let collector = Collector::start();
    let (run, _mock) = run_with(
        &collector.url,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)],
    );
    run.assert_code(0);
    assert!(!run.has_extension("telemetry"));
    let (run, _mock) = run_with(
        &collector.url,
        &["--otel", "--no-otel"],
        &[("WORKER_OTEL_ENABLED", "1")],
    );
    run.assert_code(0);
    let status = run.extension("telemetry");
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("skipped"), Some("disabled-by-flag"))
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(collector.spans().is_empty(), "nothing was exported");
    let (run, _mock) = run_with(
        &collector.url,
        &[],
        &[
            ("WORKER_OTEL_ENABLED", "on"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ],
    );
    run.assert_code(0);
    assert_eq!(run.extension("telemetry")["metrics"], false);
    assert!(
        !collector.spans().is_empty(),
        "the env switch enables export"
    );
    assert!(
        collector.metric_names().is_empty(),
        "OTEL_METRICS_EXPORTER=none"
    );
}

#[test]
fn a_dead_collector_costs_a_bounded_wait_and_a_warning_not_the_exit_code() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let started = Instant::now();
    let (run, _mock) = run_with(&url, &["--otel"], &[]);
    run.assert_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    for signal in ["traces", "metrics"] {
        let prefix = format!("worker: telemetry: could not deliver {signal} to the collector: ");
        let line = run.stderr.lines().find(|l| l.starts_with(&prefix));
        let reason = line.map(|l| &l[prefix.len()..]);
        assert!(
            reason.is_some_and(
                |r| r.contains(&format!("/v1/{signal}")) && r.contains("Connection refused")
            ),
            "{signal}: the warning names the URL and the cause: {}",
            run.stderr
        );
    }
    assert_eq!(run.last()["type"], "usage_snapshot");
    assert!(
        run.stdout
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "stdout stays JSONL"
    );
}

#[test]
fn collector_headers_come_from_the_environment_and_a_refusal_is_reported() {
    let collector = Collector::start_with(Some("Bearer otlp-secret"));
    let (run, _mock) = run_with(&collector.url, &["--otel"], &[]);
    run.assert_code(0);
    for signal in ["traces", "metrics"] {
        let expected = format!(
            "worker: telemetry: could not deliver {signal} to the collector: \
             Operation failed: HTTP export failed with status code: 401"
        );
        assert!(
            run.stderr.lines().any(|l| l == expected),
            "{expected}\n{}",
            run.stderr
        );
    }
    assert!(collector.spans().is_empty());

    let (run, _mock) = run_with(
        &collector.url,
        &["--otel"],
        &[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20otlp-secret",
        )],
    );
    run.assert_code(0);
    assert!(!run.stderr.contains("telemetry"), "{}", run.stderr);
    assert!(!collector.spans().is_empty());
    assert!(!collector.metric_names().is_empty());
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn exported_content_is_redacted() {
    let collector = Collector::start();
    let (run, _mock) = run_with(
        &collector.url,
        &["--otel", "--otel-include-content"],
        &[
            ("DYNAMO_API_KEY", "says alpha"),
            ("OPENAI_API_KEY", "the files"),
        ],
    );
    run.assert_code(0);
    let spans = collector.spans();
    let session = named(&spans, "worker.session")[0];
    assert_eq!(
        string(session, "gen_ai.prompt").as_deref(),
        Some("read [REDACTED]")
    );
    assert!(
        named(&spans, "chat m")
            .iter()
            .any(|c| string(c, "gen_ai.completion").as_deref() == Some("a.txt [REDACTED].")),
        "{spans:#?}"
    );
}

#[test]
fn control_records_are_span_events_of_the_session() {
    let collector = Collector::start();
    // No controller: the hook decides the approvals `--approve-tools` asks for.
    let (run, _mock) = run_with(
        &collector.url,
        &[
            "--otel",
            "--approve-tools",
            "read",
            "--pre-tool-hook",
            "cat > /dev/null",
        ],
        &[],
    );
    run.assert_code(0);
    assert_eq!(run.all("hook_result").len(), 2);
    let spans = collector.spans();
    let session = named(&spans, "worker.session")[0];
    let mut names: Vec<&str> = session.events.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "worker.control.approval_resolved",
            "worker.control.approval_resolved",
            "worker.control.hook_result",
            "worker.control.hook_result",
        ]
    );
    let resolved = session
        .events
        .iter()
        .find(|e| e.name == "worker.control.approval_resolved")
        .unwrap();
    let record = resolved
        .attributes
        .iter()
        .find(|kv| kv.key == "worker.control.record")
        .and_then(|kv| match &kv.value.as_ref()?.value {
            Some(AnyValue::StringValue(s)) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(
        (record["allow"].clone(), record["by"].clone()),
        (true.into(), "hook".into())
    );
}

#[test]
fn a_subagent_s_spans_nest_under_the_task_call_that_started_it() {
    let collector = Collector::start();
    let mock = MockLlm::start(vec![
        call(
            "t1",
            "task",
            &serde_json::json!({"description": "look", "prompt": "list the files"}).to_string(),
        ),
        call("c1", "ls", "{}"),
        answer("two files"),
        answer("the child saw two files"),
    ]);
    let run = run_exporting(&collector, &mock, &["--subagents"], "delegate");
    run.assert_code(0);
    let spans = collector.spans();
    let sessions = named(&spans, "worker.session");
    assert_eq!(sessions.len(), 2, "the run's and the child's");
    let task = named(&spans, "execute_tool task")[0];
    let child = sessions
        .iter()
        .find(|s| s.parent_span_id == task.span_id)
        .expect("the child's session span is under the task call's span");
    assert_eq!(child.trace_id, task.trace_id);
    let child_id = run.first("subagent_start")["childSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        string(child, "gen_ai.conversation.id").as_deref(),
        Some(child_id.as_str())
    );
    // The child's own tool span is under one of its turns.
    let ls = named(&spans, "execute_tool ls")[0];
    let child_turn = spans
        .iter()
        .find(|s| s.span_id == ls.parent_span_id)
        .unwrap();
    assert_eq!(child_turn.parent_span_id, child.span_id);
}

#[test]
fn an_mcp_tool_s_span_names_its_server_and_method() {
    let collector = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    // No server is configured: the call fails as an unknown tool, and its span is still the
    // span of a call to server `fs`.
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fs__read_file", r#"{"path":"a.txt"}"#),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--otel-endpoint",
            &collector.url,
            "--otel",
        ],
        "read",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    let spans = collector.spans();
    let tool = named(&spans, "execute_tool mcp__fs__read_file");
    assert_eq!(
        tool.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert_eq!(
        string(tool[0], "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        string(tool[0], "worker.tool.mcp_server").as_deref(),
        Some("fs")
    );
    let read = named(&spans, "worker.session");
    assert_eq!(string(read[0], "worker.tool.mcp_server"), None);
}

/// A metric keeps a bounded number of attribute sets in a run; the rest are counted under the
/// SDK's overflow set, so nothing is lost from the totals. Tool names are the model's to
/// choose: here it calls 300 that do not exist, each a set of its own.
#[test]
fn a_metric_keeps_256_attribute_sets_and_counts_the_rest_as_overflow() {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let collector = Collector::start();
    let mut calls = vec![role()];
    for i in 0..300 {
        calls.push(tool_call(
            i,
            &format!("c{i}"),
            &format!("no_such_tool_{i}"),
            "{}",
        ));
    }
    calls.extend([finish("tool_calls"), usage(100, 10, 0), done()]);
    let mock = MockLlm::start(vec![Reply::Sse(calls), answer("done")]);
    let run = run_exporting(&collector, &mock, &[], "call them");
    run.assert_code(0);
    let invocations: Vec<_> = collector
        .metrics()
        .into_iter()
        .filter(|m| m.name == "worker.tool.invocations")
        .flat_map(|m| match m.data {
            Some(Data::Sum(sum)) => sum.data_points,
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(
        invocations.len(),
        257,
        "256 tool names and the overflow set"
    );
    let value = |p: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint| match p.value {
        Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(n)) => n,
        _ => 0,
    };
    let overflow: Vec<_> = invocations
        .iter()
        .filter(|p| {
            p.attributes
                .iter()
                .any(|kv| kv.key == "otel.metric.overflow")
        })
        .collect();
    assert_eq!(overflow.len(), 1);
    assert_eq!(value(overflow[0]), 300 - 256);
    assert_eq!(invocations.iter().map(value).sum::<i64>(), 300);
}
