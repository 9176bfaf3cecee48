//! The tool definitions the model sees, pinned: every tool's name, description and parameter
//! schema exactly as sent in the request's `tools` array, plus the system prompt's tool list.
//! Models are tuned on these words, so any change to them must show up here as a diff.
//!
//! `WORKER_BLESS=tests/it/golden/tool_definitions.json cargo test --test it tool_definitions`
//! rewrites the golden file and prints the diff to review.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::run_worker;

const GOLDEN: &str = "tests/it/golden/tool_definitions.json";

/// The `tools` array and the system prompt's `- name: snippet` lines of one run's request.
fn offered(args: &[&str]) -> Value {
    let mock = MockLlm::start(vec![answer("ok")]);
    let dir = tempfile::tempdir().unwrap();
    let mut argv = vec!["--model", "dynamo/m", "--no-context-files"];
    argv.extend_from_slice(args);
    let run = run_worker(
        dir.path(),
        &argv,
        "hi",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("GITHUB_TOKEN", "ghp_golden"),
            ("GITHUB_API_URL", "http://127.0.0.1:9"),
        ],
    );
    run.assert_code(0);
    let body = &mock.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let listed: Vec<&str> = system
        .split("\n\n")
        .find(|section| section.starts_with("Available tools:"))
        .unwrap()
        .lines()
        .skip(1)
        .collect();
    json!({"tools": body["tools"], "systemPromptToolList": listed})
}

#[test]
fn every_tool_definition_matches_the_golden_file() {
    let actual = json!({
        "default": offered(&[]),
        "optIn": offered(&["--tools", "hashline_edit"]),
        "github": offered(&["--no-builtin-tools", "--profile", "repo-write"]),
    });
    // The seven built-in tools and multi_grep (file search).
    assert_eq!(actual["default"]["tools"].as_array().unwrap().len(), 8);
    // --no-builtin-tools leaves extension tools: 33 GitHub tools and multi_grep.
    assert_eq!(actual["github"]["tools"].as_array().unwrap().len(), 34);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    let rendered = serde_json::to_string_pretty(&actual).unwrap() + "\n";
    if worker::bless::bless(Path::new(env!("CARGO_MANIFEST_DIR")), GOLDEN, &rendered)
        .unwrap_or_else(|err| panic!("{err}"))
    {
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{GOLDEN}: {err}; bless it with WORKER_BLESS={GOLDEN}"));
    let expected: Value = serde_json::from_str(&expected).unwrap();
    assert!(
        actual == expected,
        "tool definitions differ from {GOLDEN}; if intended, bless with WORKER_BLESS={GOLDEN} and review the diff it prints:\n{rendered}"
    );
}
