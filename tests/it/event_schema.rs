//! The published JSON Schema of the stream (docs/events.schema.json) is the one the types
//! generate, and every line worker prints validates against it: the golden fixtures' streams
//! and a run that touches the rarer events. Lines are checked against the committed file as
//! read, not only against the schema the same types generate, which would agree with any
//! change made to them.

use std::path::Path;

use serde_json::Value;

use crate::support::mock_llm::*;
use crate::support::run_worker;

const PUBLISHED: &str = "docs/events.schema.json";

/// A compiled schema, named for messages.
struct Validator {
    origin: &'static str,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    fn compile(origin: &'static str, schema: Value) -> Validator {
        let id = schema["$id"].as_str().unwrap().to_string();
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(&id, schema).unwrap();
        let index = compiler.compile(&id, &mut schemas).unwrap();
        Validator {
            origin,
            schemas,
            index,
        }
    }
}

/// The schema the types generate, and the committed file read on its own: a line must match
/// both, so a change to the types that the published contract does not allow is caught even
/// before the file is compared with the types.
fn validators() -> [Validator; 2] {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PUBLISHED);
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    [
        Validator::compile("the generated schema", worker::events::json_schema()),
        Validator::compile(PUBLISHED, committed),
    ]
}

fn assert_valid(validators: &[Validator], line: &str, origin: &str) {
    let value: Value = serde_json::from_str(line).unwrap();
    for validator in validators {
        if let Err(err) = validator.schemas.validate(&value, validator.index) {
            panic!(
                "{origin}: a line does not match {}:\n{line}\n{err:#}",
                validator.origin
            );
        }
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
    let validators = validators();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let expected = entry.unwrap().path().join("expected.jsonl");
        let Ok(text) = std::fs::read_to_string(&expected) else {
            continue;
        };
        for line in text.lines() {
            assert_valid(&validators, line, &expected.display().to_string());
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} lines");
}

#[test]
fn the_rarer_events_validate_too() {
    let validators = validators();
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
        assert_valid(&validators, line, "a limited run");
    }
    // And a failure.
    let run = run_worker(dir.path(), &["--model", "openai/gpt-4o"], "q", &[]);
    assert_eq!(run.code, 1);
    for line in run.stdout.lines() {
        assert_valid(&validators, line, "a failed run");
    }
}

#[test]
fn a_line_that_breaks_the_contract_is_caught() {
    let validators = validators();
    // Each line, and the complaint that shows the schema caught what is wrong with it.
    let bad = [
        (
            r#"{"type":"turn_start","turnIndex":"zero","sessionId":"s","timestamp":"t"}"#,
            "at '/turnIndex' [S#/$defs/EventLine/oneOf/6/properties/turnIndex/type]: want integer, but got string",
        ),
        (
            r#"{"type":"no_such_event","sessionId":"s","timestamp":"t"}"#,
            "value must be 'turn_start'",
        ),
        (
            r#"{"type":"fatal_error","error":{"kind":"http"},"sessionId":"s","timestamp":"t"}"#,
            "at '/error' [S#/$defs/FatalError/required]: missing properties 'name', 'message'",
        ),
        (
            r#"{"type":"turn_start","turnIndex":0}"#,
            "at '' [S#/$defs/EventLine/required]: missing properties 'sessionId', 'timestamp'",
        ),
    ];
    for (line, complaint) in bad {
        let value: Value = serde_json::from_str(line).unwrap();
        for validator in &validators {
            match validator.schemas.validate(&value, validator.index) {
                Ok(()) => panic!("{} accepted: {line}", validator.origin),
                Err(err) => {
                    let text = format!("{err:#}");
                    assert!(
                        text.contains(complaint),
                        "{}: {line}:\n{text}",
                        validator.origin
                    );
                }
            }
        }
    }
}
