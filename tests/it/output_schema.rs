//! `--output-schema`: the final answer is checked against the caller's JSON Schema, corrected
//! once (with `response_format` on chat servers), reported as `structuredOutput`, and written
//! by `--output-last-message`.

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

const SCHEMA: &str = r#"{"type": "object", "properties": {"verdict": {"enum": ["approve", "reject"]}}, "required": ["verdict"]}"#;

fn review(replies: Vec<Reply>) -> (Run, MockLlm, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("schema.json"), SCHEMA).unwrap();
    let mock = MockLlm::start(replies);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--output-schema",
            "schema.json",
            "--output-last-message",
            "answer.json",
        ],
        "review the change",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    (run, mock, dir)
}

#[test]
fn a_valid_answer_is_the_structured_output_and_the_last_message_file() {
    let (run, mock, dir) = review(vec![
        call("c1", "ls", "{}"),
        answer("```json\n{\"verdict\": \"approve\"}\n```"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.first("agent_end")["structuredOutput"],
        json!({"verdict": "approve"})
    );
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("valid against this JSON Schema"),
        "{system}"
    );
    assert!(
        mock.requests()
            .iter()
            .all(|r| r.body.get("response_format").is_none())
    );
    let written = std::fs::read_to_string(dir.path().join("answer.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&written).unwrap(),
        json!({"verdict": "approve"})
    );
}

#[test]
fn an_invalid_answer_gets_one_correction_then_fails_with_its_kind() {
    // Corrected on the second try.
    let (run, mock, _dir) = review(vec![
        answer("Looks fine to me."),
        answer(r#"{"verdict": "reject"}"#),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.first("agent_end")["structuredOutput"]["verdict"],
        "reject"
    );
    let second = &mock.requests()[1].body;
    let correction = second["messages"].as_array().unwrap().last().unwrap();
    assert!(
        correction["content"]
            .as_str()
            .unwrap()
            .starts_with("Your final answer is not valid")
    );
    assert_eq!(second["response_format"]["type"], "json_schema");
    assert_eq!(
        second["response_format"]["json_schema"]["schema"]["required"],
        json!(["verdict"])
    );

    // Still wrong after the correction: a failure of its own kind.
    let (run, _mock, _dir) = review(vec![answer("no"), answer(r#"{"verdict": "maybe"}"#)]);
    assert_eq!(run.code, 1);
    assert_eq!(run.first("fatal_error")["error"]["kind"], "output_schema");
    assert!(run.first("agent_end").get("structuredOutput").is_none());
    assert!(
        run.stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("worker: the final answer does not match --output-schema: "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_schema_that_is_not_one_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"type": "no-such-type"}"#).unwrap();
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--output-schema", "bad.json"],
        "q",
        &[],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("--output-schema bad.json: not a valid JSON Schema"),
        "{}",
        run.stderr
    );
}
