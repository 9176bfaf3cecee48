//! `abort`: a graceful stop with the cost so far, a second one that ends at once, and what
//! comes after.

use super::*;

#[test]
fn an_abort_during_a_model_stream_stops_the_run_with_exit_5_and_the_cost_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "bash", &bash("echo one")),
            finish("tool_calls"),
            usage(1000, 100, 0),
            done(),
        ]),
        // The second request never finishes.
        Reply::Sse(vec![role(), text("thinking about it"), Frame::Stall]),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--price", "input=1,output=2"],
    );
    run.send(&prompt("task"));
    run.wait_until("the stalled stream", |event| {
        event["type"] == "message_update" && event.to_string().contains("thinking about it")
    });
    let asked = Instant::now();
    run.send(&json!({"type": "abort", "reason": "operator said stop", "id": "a1"}));
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "abort", "id": "a1", "ok": true})
    );
    assert_eq!(
        run.wait_for("control_abort"),
        json!({"type": "control_abort", "reason": "operator said stop"})
    );
    let run = run.finish();
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    run.assert_code(5);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command: operator said stop"
    );
    // The ack, then control_abort, then the terminal lines.
    let outline = run.outline();
    let at = |kind: &str| outline.iter().position(|t| t == kind).unwrap();
    assert!(at("control_ack") < at("control_abort"));
    assert!(at("control_abort") < at("agent_end"));
    // What the first answer cost is in the snapshot: 1000 in at $1/M, 100 out at $2/M.
    let stats = run.stats();
    assert_eq!(stats["tokens"]["input"], 1000, "{stats}");
    assert_eq!(stats["tokens"]["output"], 100, "{stats}");
    let cost = stats["cost"].as_f64().unwrap();
    assert!((cost - 0.0012).abs() < 1e-9, "{stats}");
    assert_eq!(stats["llmRequests"], 2, "{stats}");
}

#[test]
fn an_abort_during_a_bash_call_kills_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(SLEEPER))]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    let pid = sleeper_pid(dir.path());
    assert!(running(pid));
    run.send(&json!({"type": "abort", "reason": "enough"}));
    // An ack without an id has no id.
    assert_eq!(
        run.ack(),
        json!({"type": "control_ack", "command": "abort", "ok": true})
    );
    let run = run.finish();
    run.assert_code(5);
    assert_complete(&run);
    assert_eq!(run.first("agent_end")["stopReason"], "aborted");
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command: enough"
    );
    let ends = results(&run);
    assert_eq!(ends.len(), 1);
    assert!(ends[0].1, "the stopped call is an error: {ends:?}");
    assert!(gone_soon(pid), "process {pid} outlived the abort");
    // Nothing was asked of the model after the abort.
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn an_abort_without_a_reason_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![Reply::Sse(vec![role(), text("hm"), Frame::Stall])]);
    let mut run = Controlled::start(dir.path(), &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("message_update");
    run.send(&json!({"type": "abort"}));
    assert_eq!(
        run.wait_for("control_abort"),
        json!({"type": "control_abort"})
    );
    let run = run.finish();
    run.assert_code(5);
    assert_eq!(
        last_stderr_line(&run),
        "worker: stopped by an abort command"
    );
}

#[test]
fn a_second_abort_ends_the_process_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // The command ignores SIGTERM, so the first abort waits out the kill grace.
    let (mut run, _mock, pid) = stubborn_command(dir.path());
    run.send(&json!({"type": "abort", "reason": "first"}));
    run.wait_for("control_abort");
    run.send(&json!({"type": "abort", "reason": "second", "id": "a2"}));
    let second = run.ack();
    assert_eq!(second["id"], "a2");
    let run = run.finish();
    run.assert_code(5);
    // It did not wind down: no terminal lines were written.
    assert!(run.all("agent_end").is_empty(), "{}", run.stdout);
    assert!(run.all("control_abort").len() == 1, "{}", run.stdout);
    assert!(gone_soon(pid), "process {pid} outlived the worker");
}

#[test]
fn a_signal_while_an_abort_winds_down_ends_the_process_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // The command ignores SIGTERM, so the abort waits out the kill grace.
    let (mut run, _mock, pid) = stubborn_command(dir.path());
    run.send(&json!({"type": "abort", "reason": "first"}));
    run.wait_for("control_abort");
    let worker = nix::unistd::Pid::from_raw(run.child.id().cast_signed());
    nix::sys::signal::kill(worker, nix::sys::signal::Signal::SIGTERM).unwrap();
    let run = run.finish();
    // SIGTERM's own code, and no winding down: no terminal lines were written.
    run.assert_code(143);
    assert!(run.all("agent_end").is_empty(), "{}", run.stdout);
    assert!(gone_soon(pid), "process {pid} outlived the worker");
}

#[test]
fn commands_after_an_abort_are_refused_as_stopping() {
    let dir = tempfile::tempdir().unwrap();
    // The command ignores SIGTERM: the run winds down for the kill grace, so the lines after
    // the abort are read while it stops, not after it ended (then they go unanswered).
    let (mut run, mock, pid) = stubborn_command(dir.path());
    // In one write: the later lines are answered while the run winds down.
    run.write(&format!(
        "{}\n{}\n{}\n",
        json!({"type": "abort", "reason": "stop", "id": "a1"}),
        json!({"type": "steer", "message": "wait", "id": "s1"}),
        json!({"type": "follow_up", "message": "later", "id": "f1"}),
    ));
    assert_eq!(run.ack()["ok"], true);
    for id in ["s1", "f1"] {
        let ack = run.ack();
        assert_eq!(ack["id"], id);
        assert_eq!(ack["ok"], false);
        assert_eq!(ack["error"], "the run is stopping");
    }
    let run = run.finish();
    run.assert_code(5);
    assert_complete(&run);
    assert!(gone_soon(pid));
    assert_eq!(mock.requests().len(), 1);
}

/// A controlled run whose one bash call ignores SIGTERM and sleeps; returned once the call
/// runs, with the command's pid.
fn stubborn_command(dir: &Path) -> (Controlled, MockLlm, i32) {
    let command = format!("trap '' TERM; {SLEEPER}");
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(&command))]);
    let mut run = Controlled::start(dir, &mock, &["--control", "stdin"]);
    run.send(&prompt("task"));
    run.wait_for("tool_execution_start");
    let pid = sleeper_pid(dir);
    (run, mock, pid)
}
