//! Budgets that wrap up: at 80% the model is told what is left and to finish; at 100% the run
//! stops with `limit_reached`, exit 3 and its stderr line.

use crate::support::mock_llm::*;
use crate::support::run_worker;

#[test]
fn at_80_percent_the_model_is_told_to_wrap_up_and_can_finish() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "ls", "{}"),
        call("c2", "ls", "{}"),
        call("c3", "ls", "{}"),
        call("c4", "ls", "{}"),
        answer("Done: listed four times. Left: nothing."),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--max-tool-calls", "5"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let warnings = run.all("budget_warning");
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0]["budget"], "max_tool_calls");
    assert_eq!(
        (warnings[0]["used"].as_f64(), warnings[0]["limit"].as_f64()),
        (Some(4.0), Some(5.0))
    );
    let last = &mock.requests()[4].body["messages"];
    let note = last.as_array().unwrap().last().unwrap();
    assert_eq!(note["role"], "user");
    assert!(
        note["content"]
            .as_str()
            .unwrap()
            .starts_with("Budget note: 4 of 5 tool calls used (1 left). Finish now"),
        "{note}"
    );
    // The first four requests carried no note.
    assert!(
        mock.requests()[3].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["content"].to_string().contains("Budget note"))
    );
}

#[test]
fn at_100_percent_the_run_stops_with_the_budget_named() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start_cycling(vec![call("c", "ls", "{}")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--max-tool-calls", "3"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 3);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_tool_calls");
    assert_eq!(
        (limit["used"].as_f64(), limit["budgetLimit"].as_f64()),
        (Some(3.0), Some(3.0))
    );
    assert_eq!(run.first("agent_end")["stopReason"], "budget_exceeded");
    assert_eq!(run.stderr, "worker: limit reached: max tool calls 3\n");

    // Tokens: every answer uses 1000, so the second turn crosses 1500.
    let mock = MockLlm::start_cycling(vec![Reply::Sse(vec![
        role(),
        tool_call(0, "c", "ls", "{}"),
        finish("tool_calls"),
        usage(900, 100, 0),
        done(),
    ])]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--max-total-tokens", "1500"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 3);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_total_tokens");
    assert_eq!(limit["used"].as_f64(), Some(2000.0));
    // 1000 of 1500 (67%) needed no note, and the next turn went straight past 100%.
    assert!(run.all("budget_warning").is_empty());
}
