//! The published JSON Schema of the stream (docs/events.schema.json) is the one the types
//! generate, and every line worker prints validates against it: the golden fixtures' streams
//! and a run that touches the rarer events.

use std::path::Path;

use serde_json::Value;

use crate::support::mock_llm::*;
use crate::support::run_worker;

const PUBLISHED: &str = "docs/events.schema.json";

fn validator() -> (boon::Schemas, boon::SchemaIndex) {
    let schema = worker::events::json_schema();
    let id = schema["$id"].as_str().unwrap().to_string();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&id, schema).unwrap();
    let index = compiler.compile(&id, &mut schemas).unwrap();
    (schemas, index)
}

fn assert_valid(schemas: &boon::Schemas, index: boon::SchemaIndex, line: &str, origin: &str) {
    let value: Value = serde_json::from_str(line).unwrap();
    if let Err(err) = schemas.validate(&value, index) {
        panic!("{origin}: a line does not match the schema:\n{line}\n{err:#}");
    }
}

#[test]
fn the_published_schema_is_the_generated_one() {
    let schema = worker::events::json_schema();
    assert_eq!(
        schema["$id"],
        format!(
            "urn:worker:event-schema:{}",
            worker::events::EVENT_SCHEMA_VERSION
        )
    );
    let rendered = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PUBLISHED);
    if worker::bless::bless(Path::new(env!("CARGO_MANIFEST_DIR")), PUBLISHED, &rendered)
        .unwrap_or_else(|err| panic!("{err}"))
    {
        return;
    }
    let published = std::fs::read_to_string(&path).unwrap();
    assert!(
        published == rendered,
        "{PUBLISHED} is out of date: WORKER_BLESS={PUBLISHED} cargo test --test it event_schema, and review the diff it prints"
    );
}

#[test]
fn every_golden_stream_validates() {
    let (schemas, index) = validator();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let expected = entry.unwrap().path().join("expected.jsonl");
        let Ok(text) = std::fs::read_to_string(&expected) else {
            continue;
        };
        for line in text.lines() {
            assert_valid(&schemas, index, line, &expected.display().to_string());
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} lines");
}

#[test]
fn the_rarer_events_validate_too() {
    let (schemas, index) = validator();
    let dir = tempfile::tempdir().unwrap();
    // A retry, a tool with progress updates, a limit with max_steps_reached.
    let mock = MockLlm::start(vec![
        status(503, "busy"),
        call(
            "c1",
            "bash",
            r#"{"command":"echo one; sleep 0.3; echo two"}"#,
        ),
        call("c2", "ls", "{}"),
    ]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--max-steps",
            "2",
            "--retry-base-delay",
            "10ms",
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    for kind in [
        "auto_retry_start",
        "tool_execution_update",
        "max_steps_reached",
        "limit_reached",
    ] {
        assert!(!run.all(kind).is_empty(), "no {kind}: {}", run.stdout);
    }
    for line in run.stdout.lines() {
        assert_valid(&schemas, index, line, "a limited run");
    }
    // And a failure.
    let run = run_worker(dir.path(), &["--model", "openai/gpt-4o"], "q", &[]);
    assert_eq!(run.code, 1);
    for line in run.stdout.lines() {
        assert_valid(&schemas, index, line, "a failed run");
    }
}

#[test]
fn a_line_that_breaks_the_contract_is_caught() {
    let (schemas, index) = validator();
    let bad = [
        r#"{"type":"turn_start","turnIndex":"zero","sessionId":"s","timestamp":"t"}"#,
        r#"{"type":"no_such_event","sessionId":"s","timestamp":"t"}"#,
        r#"{"type":"fatal_error","error":{"kind":"http"},"sessionId":"s","timestamp":"t"}"#,
        r#"{"type":"turn_start","turnIndex":0}"#,
    ];
    for line in bad {
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(schemas.validate(&value, index).is_err(), "accepted: {line}");
    }
}
