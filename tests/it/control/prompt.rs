//! The prompt as the first command, the answer to every line, and what a line that is not a
//! command gets.

use super::*;

#[test]
fn without_commands_the_stream_is_a_plain_runs() {
    // The same script twice: once with the prompt on stdin, once as the first command line.
    let script = || {
        MockLlm::start(vec![
            call("c1", "bash", &bash("echo hi")),
            answer("all done"),
        ])
    };
    let dir = tempfile::tempdir().unwrap();
    let mock = script();
    let plain = run_dynamo(dir.path(), &mock.url, &["--no-session"], "say hi");
    plain.assert_code(0);
    let mock = script();
    let line = format!("{}\n", prompt("say hi"));
    let controlled = run_dynamo(
        dir.path(),
        &mock.url,
        &["--no-session", "--control", "stdin"],
        &line,
    );
    controlled.assert_code(0);
    // The prompt line is the run's input, not a command: it gets no answer, and nothing else
    // is added to the stream.
    assert_eq!(controlled.outline(), plain.outline());
    assert!(controlled.all("control_ack").is_empty());
    assert_eq!(content_text(messages(&mock, 0).last().unwrap()), "say hi");
}

#[test]
fn stdin_closed_right_after_the_prompt_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("sleep 0.3; echo slept")),
        answer("finished"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("go"));
    // EOF means "no more commands", never "stop".
    run.close();
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
    assert_eq!(results(&run), vec![("slept".to_string(), false)]);
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn with_the_prompt_as_the_argument_every_line_is_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("first"),
        answer("second"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin", "the task"]);
    run.wait_for("tool_execution_start");
    run.send(&json!({"type": "follow_up", "message": "and then this", "id": "f1"}));
    let ack = run.ack();
    assert_eq!(
        ack,
        json!({"type": "control_ack", "command": "follow_up", "id": "f1", "ok": true})
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_eq!(content_text(&messages(&mock, 0)[1]), "the task");
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_first_line_that_is_not_a_prompt_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"type\":\"steer\",\"message\":\"x\"}\n",
            "worker: --control stdin: the first command must be {\"type\":\"prompt\",\"message\":…}, not \"steer\"",
        ),
        (
            "",
            "worker: --control stdin: stdin ended before the first command, {\"type\":\"prompt\",\"message\":…}",
        ),
        (
            "\n\n",
            "worker: --control stdin: stdin ended before the first command, {\"type\":\"prompt\",\"message\":…}",
        ),
        (
            "say hi\n",
            "worker: --control stdin: the first command: not JSON: expected value at line 1 column 1",
        ),
        (
            "{\"type\":\"prompt\",\"message\":\" \"}\n",
            "worker: --control stdin: the first command: prompt needs a non-empty \"message\"",
        ),
    ];
    for (stdin, line) in cases {
        // No server: a usage error must not reach the model.
        let run = run_worker(
            dir.path(),
            &["--model", "dynamo/m", "--control", "stdin"],
            stdin,
            &[("DYNAMO_BASE_URL", "http://127.0.0.1:9/v1")],
        );
        assert_eq!(run.code, 2, "{stdin:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{stdin:?}");
        assert_eq!(run.stderr.lines().next(), Some(line), "{stdin:?}");
    }
}

#[test]
fn every_line_gets_an_answer_and_garbage_does_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash(&gated("go", "opened"))),
        answer("done"),
    ]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    // A blank line is no command and gets no answer; each other line gets one, in order.
    run.write(concat!(
        "not json\n",
        "[1]\n",
        "\n",
        "{\"type\":\"dance\",\"id\":\"g1\"}\n",
        "{\"type\":\"steer\",\"id\":7}\n",
        "{\"type\":\"steer\",\"id\":\"s7\"}\n",
        "{\"type\":\"steer\",\"message\":\"  \"}\n",
        "{\"type\":\"prompt\",\"message\":\"again\",\"id\":\"p2\"}\n",
        "{\"type\":\"decide\",\"id\":\"approval-9\",\"allow\":true}\n",
        "{\"id\":\"n1\"}\n",
    ));
    let acks: Vec<Value> = (0..9).map(|_| run.ack()).collect();
    assert!(acks.iter().all(|ack| ack["ok"] == false), "{acks:?}");
    let error = |n: usize| acks[n]["error"].as_str().unwrap().to_string();
    assert!(error(0).starts_with("not JSON: "), "{}", error(0));
    assert_eq!(acks[0].get("command"), None);
    assert_eq!(error(1), "a command is a JSON object with a \"type\"");
    assert_eq!(
        (&acks[2]["command"], &acks[2]["id"]),
        (&json!("dance"), &json!("g1"))
    );
    assert_eq!(
        error(2),
        "unknown command \"dance\": the commands are prompt, steer, follow_up, abort, decide"
    );
    // An id is text; a numeric one is refused, and still echoed (as text) in the answer.
    assert_eq!(
        (&acks[3]["command"], &acks[3]["id"]),
        (&json!("steer"), &json!("7"))
    );
    assert_eq!(
        error(3),
        "invalid steer: invalid type: integer `7`, expected a string"
    );
    assert_eq!(acks[4]["id"], "s7");
    assert_eq!(error(4), "invalid steer: missing field `message`");
    assert_eq!(error(5), "steer needs a non-empty \"message\"");
    assert_eq!(acks[6]["id"], "p2");
    assert_eq!(
        error(6),
        "the run already has its prompt: send steer or follow_up"
    );
    assert_eq!(error(7), "no approval \"approval-9\" was requested");
    assert_eq!(acks[8]["id"], "n1");
    assert_eq!(
        error(8),
        "a command needs a string \"type\": one of prompt, steer, follow_up, abort, decide"
    );
    open(dir.path(), "go");
    let run = run.finish();
    run.assert_code(0);
    assert_complete(&run);
    assert_eq!(run.all("control_ack").len(), 9);
    assert_eq!(results(&run), vec![("opened".to_string(), false)]);
    // None of it reached the model.
    assert!(!request_mentions(&mock, 1, "again"));
    assert_eq!(mock.requests().len(), 2);
}
