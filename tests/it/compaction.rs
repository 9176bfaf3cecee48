//! Compaction at the context limit: when the next request would not fit, or the server refuses
//! one for its length, the older turns become a summary and the run goes on.

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::run_worker;

fn bash_call(id: &str, command: &str, prompt_tokens: u64) -> Reply {
    let args = json!({"command": command}).to_string();
    Reply::Sse(vec![
        role(),
        tool_call(0, id, "bash", &args),
        finish("tool_calls"),
        usage(prompt_tokens, 10, 0),
        done(),
    ])
}

#[test]
fn a_conversation_past_the_threshold_is_summarized_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        bash_call("c1", "printf 'x%.0s' $(seq 1 2400)", 1200),
        // The summary request.
        answer("SUMMARY: ran a command that printed 2400 x characters."),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--context-window", "2000"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let start = run.first("compaction_start");
    assert_eq!(start["reason"], "threshold");
    assert!(start["tokensBefore"].as_u64().unwrap() > 1500, "{start}");
    let end = run.first("compaction_end");
    assert!(end["summary"].as_str().unwrap().starts_with("SUMMARY:"));
    assert!(end["tokensAfter"].as_u64().unwrap() < end["tokensBefore"].as_u64().unwrap());
    let requests = mock.requests();
    // The summarizer saw the conversation without tools.
    assert!(requests[1].body.get("tools").is_none());
    assert!(
        requests[1].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("compress")
    );
    // The next request: the summary, then the newest turn (the call and its result).
    let roles: Vec<&str> = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert!(
        requests[2].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("SUMMARY:")
    );
    // The session records it in Pi's way, and resumes from the summary.
    let file = run.events[0]["sessionFile"].as_str().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(r#""type":"compaction""#), "{text}");
}

#[test]
fn a_request_refused_for_its_length_is_compacted_and_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let overflow = Reply::Status {
        code: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}}"#.into(),
        retry_after: None,
    };
    let mock = MockLlm::start(vec![
        call("c1", "ls", "{}"),
        overflow.clone(),
        answer("SUMMARY: listed the directory."),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.first("compaction_start")["reason"], "overflow");
    assert_eq!(
        run.first("agent_end")["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"][0]["text"],
        "done"
    );

    // Refused on the first turn: nothing to summarize, a failure of its own kind.
    let mock = MockLlm::start(vec![overflow]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.first("fatal_error")["error"]["kind"],
        "context_overflow"
    );
    assert!(
        run.stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("worker: the conversation does not fit the model's context window"),
        "{}",
        run.stderr
    );
}
