//! agentic-pi's telemetry tests (`test/telemetry/mapper.test.ts`), through the binary with
//! `--otel-namespace agentic_pi`, received by a real OTLP/HTTP receiver: every span, metric
//! and attribute agentic-pi emits exists under its name with its meaning, so its dashboards
//! keep working. `gen_ai.*` follow the GenAI semantic conventions (input tokens include cached
//! ones; finish reasons are the conventions' values).

use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::support::Run;
use crate::telemetry::{Collector, attr, int, named, run_with, string};

const AGENTIC_PI: &[&str] = &["--otel", "--otel-namespace", "agentic_pi"];
/// $1000 per million tokens in and out, so every request costs something.
const PRICED: &[&str] = &["--price", "input=1000,output=1000,cacheRead=100"];

fn double(span: &Span, key: &str) -> Option<f64> {
    match attr(span, key)? {
        AnyValue::DoubleValue(n) => Some(n),
        _ => None,
    }
}

fn agentic_pi_run(extra: &[&str]) -> (Run, Collector) {
    let collector = Collector::start();
    let mut args = AGENTIC_PI.to_vec();
    args.extend_from_slice(PRICED);
    args.extend_from_slice(extra);
    let (run, _mock) = run_with(&collector.url, &args, &[]);
    run.assert_code(0);
    (run, collector)
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(
        found.len(),
        1,
        "{name}: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

/// No name of worker's default namespace leaks into an agentic_pi export.
fn assert_no_worker_names(spans: &[Span], metrics: &[String]) {
    for span in spans {
        assert!(!span.name.starts_with("worker."), "{}", span.name);
        for kv in &span.attributes {
            assert!(!kv.key.starts_with("worker."), "{}: {}", span.name, kv.key);
        }
    }
    assert!(
        metrics.iter().all(|m| !m.starts_with("worker.")),
        "{metrics:?}"
    );
}

#[test]
fn mapper_test_builds_session_turn_llm_tool_with_correct_parenting() {
    let (_run, collector) = agentic_pi_run(&[]);
    let spans = collector.spans();
    let session = one(&spans, "agentic_pi.session");
    assert!(session.parent_span_id.is_empty(), "the session is the root");
    let turns = named(&spans, "agentic_pi.turn");
    assert_eq!(turns.len(), 2);
    assert!(turns.iter().all(|t| t.parent_span_id == session.span_id));
    let first = turns
        .iter()
        .find(|t| int(t, "agentic_pi.turn.index") == Some(0))
        .expect("agentic_pi.turn.index 0");
    let chats = named(&spans, "chat m");
    assert!(chats.iter().any(|c| c.parent_span_id == first.span_id));
    let tools = named(&spans, "execute_tool read");
    assert_eq!(tools.len(), 2);
    assert!(tools.iter().all(|t| t.parent_span_id == first.span_id));
    assert!(spans.iter().all(|s| s.trace_id == session.trace_id));
    assert_no_worker_names(&spans, &collector.metric_names());
}

#[test]
fn mapper_test_session_llm_tool_carry_the_expected_metadata_attributes() {
    let (run, collector) = agentic_pi_run(&[]);
    let spans = collector.spans();
    let session = one(&spans, "agentic_pi.session");
    assert_eq!(
        string(session, "gen_ai.conversation.id").as_deref(),
        run.events[0]["id"].as_str()
    );
    assert_eq!(string(session, "gen_ai.system").as_deref(), Some("dynamo"));
    assert_eq!(
        string(session, "gen_ai.request.model").as_deref(),
        Some("m")
    );
    assert_eq!(
        string(session, "agentic_pi.sandbox.backend").as_deref(),
        Some("none")
    );

    // The first request: 120 prompt tokens of which 64 cached, 20 out, asking for tools.
    let chat = named(&spans, "chat m")
        .into_iter()
        .find(|c| int(c, "gen_ai.usage.output_tokens") == Some(20))
        .unwrap();
    assert_eq!(
        int(chat, "gen_ai.usage.input_tokens"),
        Some(120),
        "cached included"
    );
    assert_eq!(int(chat, "gen_ai.usage.cache_read.input_tokens"), Some(64));
    assert_eq!(int(chat, "agentic_pi.usage.cache_read_tokens"), Some(64));
    assert_eq!(
        string(chat, "gen_ai.response.id").as_deref(),
        Some("chatcmpl-mock")
    );
    assert_eq!(
        string(chat, "gen_ai.response.model").as_deref(),
        Some("mock-model")
    );
    match attr(chat, "gen_ai.response.finish_reasons") {
        Some(AnyValue::ArrayValue(values)) => assert_eq!(
            values.values[0].value,
            Some(AnyValue::StringValue("tool_call".into())),
            "the conventions' value"
        ),
        other => panic!("finish reasons: {other:?}"),
    }
    // The request's cost, as the assistant message reports it.
    let message_cost = run
        .all("message_end")
        .into_iter()
        .find(|e| e["message"]["role"] == "assistant")
        .map(|e| e["message"]["usage"]["cost"]["total"].as_f64().unwrap())
        .unwrap();
    assert!(message_cost > 0.0);
    assert_eq!(
        double(chat, "agentic_pi.usage.cost_usd"),
        Some(message_cost)
    );

    let tool = named(&spans, "execute_tool read")
        .into_iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-ok"))
        .unwrap();
    assert_eq!(string(tool, "gen_ai.tool.name").as_deref(), Some("read"));
    match attr(tool, "agentic_pi.tool.is_error") {
        Some(AnyValue::BoolValue(false)) => {}
        other => panic!("agentic_pi.tool.is_error: {other:?}"),
    }
}

#[test]
fn mapper_test_content_attributes_are_absent_when_include_content_is_off() {
    let (_run, collector) = agentic_pi_run(&[]);
    let spans = collector.spans();
    for span in &spans {
        for key in [
            "gen_ai.completion",
            "gen_ai.prompt",
            "agentic_pi.tool.arguments",
            "agentic_pi.tool.result",
        ] {
            assert!(attr(span, key).is_none(), "{}: {key}", span.name);
        }
    }
}

#[test]
fn mapper_test_content_attributes_are_present_and_bounded_when_include_content_is_on() {
    let (_run, collector) = agentic_pi_run(&["--otel-include-content"]);
    let spans = collector.spans();
    let tool = named(&spans, "execute_tool read")
        .into_iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-ok"))
        .unwrap();
    assert!(
        string(tool, "agentic_pi.tool.arguments")
            .unwrap()
            .contains("a.txt")
    );
    assert!(
        string(tool, "agentic_pi.tool.result")
            .unwrap()
            .contains("alpha")
    );
    let completions: Vec<String> = named(&spans, "chat m")
        .iter()
        .filter_map(|c| string(c, "gen_ai.completion"))
        .collect();
    assert!(
        completions.iter().any(|c| c == "Reading both."),
        "{completions:?}"
    );
}

#[test]
fn mapper_test_record_session_stats_decorates_the_root_after_agent_end() {
    let (run, collector) = agentic_pi_run(&[]);
    let spans = collector.spans();
    let session = one(&spans, "agentic_pi.session");
    let stats = run.stats();
    assert_eq!(
        double(session, "agentic_pi.usage.cost_usd"),
        stats["cost"].as_f64()
    );
    assert_eq!(
        int(session, "agentic_pi.usage.total_tokens"),
        stats["tokens"]["total"].as_i64()
    );
    assert_eq!(session.status.as_ref().map(|s| s.code), Some(1), "OK");
}

#[test]
fn mapper_test_tool_error_sets_error_status_and_records_a_failure() {
    let (_run, collector) = agentic_pi_run(&[]);
    let spans = collector.spans();
    let failed = named(&spans, "execute_tool read")
        .into_iter()
        .find(|t| string(t, "gen_ai.tool.call.id").as_deref() == Some("c-bad"))
        .unwrap();
    match attr(failed, "agentic_pi.tool.is_error") {
        Some(AnyValue::BoolValue(true)) => {}
        other => panic!("agentic_pi.tool.is_error: {other:?}"),
    }
    assert_eq!(failed.status.as_ref().map(|s| s.code), Some(2), "ERROR");
    assert!(
        collector
            .metric_names()
            .contains(&"agentic_pi.tool.failures".to_string())
    );
}

#[test]
fn mapper_test_records_token_tool_and_turn_instruments_from_per_event_data() {
    let (_run, collector) = agentic_pi_run(&[]);
    assert_eq!(
        collector.metric_names(),
        [
            "agentic_pi.cost.usd",
            "agentic_pi.tool.duration",
            "agentic_pi.tool.failures",
            "agentic_pi.tool.invocations",
            "agentic_pi.turns",
            "gen_ai.client.operation.duration",
            "gen_ai.client.token.usage",
        ]
    );
}

#[test]
fn the_namespace_comes_from_the_environment_and_the_status_line_shows_it() {
    let collector = Collector::start();
    let (run, _mock) = run_with(
        &collector.url,
        &["--otel"],
        &[("WORKER_OTEL_NAMESPACE", "agentic_pi")],
    );
    run.assert_code(0);
    assert_eq!(run.extension("telemetry")["namespace"], "agentic_pi");
    assert_eq!(named(&collector.spans(), "agentic_pi.session").len(), 1);
}

#[test]
fn a_namespace_that_would_make_invalid_names_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["", "Agentic-Pi", "1x", "a..b", "agentic pi"] {
        let out = crate::support::worker_command(dir.path())
            .args(["run", "--model", "dynamo/m", "--otel-namespace", bad])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(out.stdout.is_empty());
        assert!(
            stderr.contains(&format!("invalid value '{bad}' for --otel-namespace")),
            "{stderr}"
        );
    }
}
