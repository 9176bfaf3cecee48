//! The limits that end a stuck or costly run, and `--edit-scope`.

use super::*;

#[test]
fn max_cost_usd_stops_the_run_as_budget_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    // Each answer costs $0.60: 1,000,000 prompt tokens at $0.60 per million.
    let costly = |id: &str| {
        Reply::Sse(vec![
            role(),
            tool_call(0, id, "ls", "{}"),
            finish("tool_calls"),
            usage(1_000_000, 0, 0),
            done(),
        ])
    };
    let mock = MockLlm::start(vec![costly("c1"), costly("c2"), costly("c3"), answer("x")]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--price", "input=0.6,output=0", "--max-cost-usd", "1"],
        "task",
    );
    run.assert_code(3);
    assert_complete(&run);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_cost");
    assert_eq!(limit["budgetLimit"].as_f64(), Some(1.0));
    assert_eq!(run.first("agent_end")["stopReason"], "budget_exceeded");
    assert_eq!(
        last_stderr_line(&run),
        "worker: limit reached: max cost 1 USD (spent 1.2000)"
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn the_same_failing_call_repeated_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start_cycling(vec![call("c", "read", r#"{"path":"missing.txt"}"#)]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--max-repeated-failures", "3"],
        "task",
    );
    run.assert_code(3);
    assert_complete(&run);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "repeated_failures");
    assert_eq!(limit["used"].as_f64(), Some(3.0));
    assert_eq!(limit["budgetLimit"].as_f64(), Some(3.0));
    assert_eq!(limit["toolName"], "read");
    assert_eq!(run.first("agent_end")["stopReason"], "repeated_failures");
    assert_eq!(
        last_stderr_line(&run),
        "worker: limit reached: the same read call failed 3 times in a row (--max-repeated-failures)"
    );
    assert_eq!(results(&run).len(), 3);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_success_of_the_call_in_between_starts_the_count_over() {
    let dir = tempfile::tempdir().unwrap();
    let read = r#"{"path":"missing.txt"}"#;
    let mock = MockLlm::start(vec![
        call("c1", "read", read),
        call("c2", "read", read),
        call(
            "c3",
            "write",
            r#"{"path":"missing.txt","content":"now here"}"#,
        ),
        call("c4", "read", read),
        call("c5", "bash", &bash("rm missing.txt")),
        call("c6", "read", read),
        call("c7", "read", read),
        // Another call failing does not count for this one.
        call("c8", "read", r#"{"path":"other.txt"}"#),
        answer("gave up on it"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--max-repeated-failures", "3"],
        "task",
    );
    run.assert_code(0);
    let failed: Vec<bool> = results(&run).iter().map(|(_, error)| *error).collect();
    assert_eq!(
        failed,
        vec![true, true, false, false, false, true, true, true]
    );
    assert!(run.all("limit_reached").is_empty());
}

#[test]
fn a_write_outside_the_edit_scope_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "write", r#"{"path":"notes.txt","content":"x"}"#),
        call("c2", "write", r#"{"path":"src/lib.txt","content":"y"}"#),
        answer("ok"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--edit-scope", "src", "--edit-scope", "docs/*.md"],
        "task",
    );
    run.assert_code(0);
    let ends = results(&run);
    assert!(ends[0].1);
    assert!(ends[0].0.starts_with("Write refused: "), "{}", ends[0].0);
    assert!(ends[0].0.contains("notes.txt"), "{}", ends[0].0);
    assert!(ends[0].0.contains("src"), "{}", ends[0].0);
    assert!(ends[0].0.contains("docs/*.md"), "{}", ends[0].0);
    assert!(!dir.path().join("notes.txt").exists());
    assert!(!ends[1].1, "{}", ends[1].0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.txt")).unwrap(),
        "y"
    );
}
