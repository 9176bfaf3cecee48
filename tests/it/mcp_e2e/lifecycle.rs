//! A run stopped while a call is out: a signal cancels the call at the server; a SIGKILL of
//! worker leaves no server behind.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::*;

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn sigterm_during_a_call_cancels_it_at_the_server_and_exits_143() {
    let scene = Scene::new();
    let log = scene.etc.join("cancel.log");
    let wire = scene.etc.join("wire.jsonl");
    let cfg = scene.config(json!({"fault": fault_teed(&wire, json!({
        "required": true,
        "env": {"FAULT_CANCEL_LOG": log.display().to_string()},
    }))}));
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__hang", "{}"), answer("never")]);
    let mut live = Live::start(&scene, &mock, &["--mcp-config", &cfg], &[], Some("go"));
    live.tool("tool_execution_start", "c1");
    // The signal comes once the call has reached the server.
    let mut request_id = Value::Null;
    poll("the hang call to reach the server", WAIT, || {
        request_id = wire_messages(&wire)
            .into_iter()
            .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
            .map_or(Value::Null, |m| m["id"].clone());
        !request_id.is_null()
    });
    kill(live.pid(), Signal::SIGTERM).unwrap();
    let run = live.finish();
    assert_eq!(run.code, 143, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "worker: terminated by SIGTERM\n");
    let end = run.first("tool_execution_end");
    assert_eq!(end["isError"], true);
    assert_eq!(
        result_text(end),
        "Aborted: the run was stopped; the MCP server was told to cancel the call"
    );
    assert_eq!(run.last()["type"], "usage_snapshot");
    // Worker told the server, naming the call; the server heard it.
    let cancelled: Vec<Value> = wire_messages(&wire)
        .into_iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], request_id);
    let text = wait_for_line(&log, "cancelled hang", Duration::from_secs(5));
    assert_eq!(text, "cancelled hang\n");
}

/// The server's host pid: the process whose environment holds `marker`, whose pid in its own
/// namespace is what the `pid` tool said.
fn server_pid(marker: &str, said: &str) -> i32 {
    let said: i32 = said
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("pid: {said:?}"));
    let pids: Vec<i32> = pids_with("environ", marker)
        .into_iter()
        .filter(|&pid| namespace_pid(pid) == Some(said))
        .collect();
    assert_eq!(
        pids.len(),
        1,
        "one process with {marker} and pid {said}: {pids:?}"
    );
    pids[0]
}

fn no_server_outlives_a_killed_worker(sandbox: &str) {
    let scene = Scene::new();
    let marker_value = unique("orphan");
    let marker = format!("FAULT_MARK={marker_value}");
    let cfg = scene.config(json!({"fault": fault(json!({
        "required": true,
        "env": {"FAULT_MARK": marker_value},
    }))}));
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__pid", "{}"), stalled()]);
    let mut live = Live::start(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--sandbox", sandbox],
        &[],
        Some("go"),
    );
    let end = live.tool("tool_execution_end", "c1");
    assert_eq!(end["isError"], false, "{end}");
    let pid = server_pid(&marker, &result_text(&end));
    assert!(running(pid));
    kill(live.pid(), Signal::SIGKILL).unwrap();
    let _ = live.child.wait();
    poll(
        &format!("the server (pid {pid}) to be gone after worker's SIGKILL"),
        Duration::from_secs(5),
        || kill(Pid::from_raw(pid), None).is_err() || !running(pid),
    );
    // The server's launcher and init were signalled with it, but the kernel ends each in its
    // own time: on a busy machine one may still be exiting when the server is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<(i32, String)> = pids_with("environ", &marker)
            .into_iter()
            .map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                (pid, String::from_utf8_lossy(&cmdline).replace('\0', " "))
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running 5 s after worker's SIGKILL: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn no_server_outlives_a_killed_worker_without_a_sandbox() {
    no_server_outlives_a_killed_worker("none");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn no_server_outlives_a_killed_worker_in_the_sandbox() {
    no_server_outlives_a_killed_worker("linux");
}
