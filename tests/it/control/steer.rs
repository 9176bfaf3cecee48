//! `steer` and `follow_up`: when they reach the model, and what they skip.

use super::*;

#[test]
fn a_steer_during_a_bash_call_skips_the_calls_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        two_bash_calls(&gated("go", "first done"), "echo second > second.txt"),
        answer("changed course"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    let start = run.wait_for("tool_execution_start");
    assert_eq!(start["toolCallId"], "c1");
    // The command itself runs (its start line alone is written a moment before).
    wait_running(dir.path(), "go");
    run.send(&json!({"type": "steer", "message": "Stop: use the other approach", "id": "s1"}));
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "steer", "id": "s1", "ok": true})
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    // The running call finished; the one not yet started was skipped with Pi's words.
    assert_eq!(
        results(&run),
        vec![
            ("first done".to_string(), false),
            ("Skipped due to queued user message.".to_string(), true),
        ]
    );
    assert!(!dir.path().join("second.txt").exists());
    // The next request ends with the two results and then the steer, as a user message.
    assert_eq!(mock.requests().len(), 2);
    assert!(!request_mentions(&mock, 0, "other approach"));
    let sent = messages(&mock, 1);
    let last = sent.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(content_text(last), "Stop: use the other approach");
    let before: Vec<&Value> = sent[sent.len() - 3..sent.len() - 1].iter().collect();
    assert_eq!(before[0]["role"], "tool");
    assert_eq!(before[1]["role"], "tool");
    assert_eq!(before[1]["tool_call_id"], "c2");
    assert_eq!(
        content_text(before[1]),
        "Skipped due to queued user message."
    );
}

#[test]
fn a_call_announced_as_started_is_never_skipped_by_a_steer() {
    // A steer sent the moment `tool_execution_start` of the first call is read: that call has
    // started as far as the controller can tell, so only the second may be skipped. Repeated,
    // because the window is narrow.
    for round in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![
            two_bash_calls("echo first done", "echo second"),
            answer("changed course"),
            // When the steer lands after the answer, the run goes on once more.
            answer("read the steer"),
        ]);
        let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
        run.send(&prompt("task"));
        run.wait_for("tool_execution_start");
        // The run may be over by now; then the write fails and nothing is left to check.
        let _ = run.try_send(&json!({"type": "steer", "message": "Stop"}));
        let run = run.finish();
        run.assert_code(0);
        let ends = results(&run);
        assert_eq!(
            ends[0],
            ("first done".to_string(), false),
            "round {round}: {ends:?}"
        );
    }
}

#[test]
fn a_steer_never_joins_the_first_request_and_keeps_an_ending_run_going() {
    let dir = tempfile::tempdir().unwrap();
    // The first answer has no tool calls: without the steer the run would end with it.
    let mock = MockLlm::start(vec![
        slow_answer(Duration::from_secs(2), "I think I am done"),
        answer("done, the other way"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    // The steer comes with the prompt, before the first request is made.
    run.write(&format!(
        "{}\n{}\n",
        prompt("task"),
        json!({"type": "steer", "message": "Also check the docs"})
    ));
    assert_eq!(run.ack()["ok"], true);
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(mock.requests().len(), 2);
    // The first request carries the prompt alone.
    let first = messages(&mock, 0);
    assert_eq!(content_text(first.last().unwrap()), "task");
    assert!(!request_mentions(&mock, 0, "Also check the docs"));
    let second = messages(&mock, 1);
    let last = second.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), content_text(last).as_str()),
        (Some("user"), "Also check the docs")
    );
    assert_eq!(second[second.len() - 2]["role"], "assistant");
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
}

#[test]
fn a_follow_up_is_the_next_user_message_when_the_model_would_end() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("first answer"),
        answer("second answer"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    run.send(&json!({"type": "follow_up", "message": "Now write the changelog", "id": "f1"}));
    assert_eq!(run.ack()["ok"], true);
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    // A follow-up does not skip anything: the call ran.
    assert_eq!(results(&run), vec![("opened".to_string(), false)]);
    assert_eq!(mock.requests().len(), 3);
    // Not delivered early: the request after the tool result does not carry it.
    assert!(!request_mentions(&mock, 1, "changelog"));
    let third = messages(&mock, 2);
    let last = third.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(content_text(last), "Now write the changelog");
    assert_eq!(content_text(&third[third.len() - 2]), "first answer");
    assert_eq!(run.all("turn_start").len(), 3);
}
