//! How a run starts with its servers: required and optional ones that fail or are too slow,
//! disabled ones, and which tools are offered (configuration filters, `--tools`, schemas),
//! and approvals of MCP calls.

use super::*;

/// A required server that is not ready: exit 2, one stderr line naming it, `fatal_error`
/// (`DependencyError`) with the same message, and no model request.
fn assert_dependency_failure(run: &Run, mock: &MockLlm, name: &str) -> String {
    run.assert_code(2);
    let lines = stderr_lines(run);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    let prefix = format!("worker: required MCP server '{name}' is not ready: ");
    assert!(lines[0].starts_with(&prefix), "{}", run.stderr);
    let fatal = run.first("fatal_error");
    assert_eq!(fatal["error"]["name"], "DependencyError", "{fatal}");
    assert_eq!(
        fatal["error"]["message"]
            .as_str()
            .map(|m| format!("worker: {m}")),
        Some(lines[0].to_string()),
        "{fatal}"
    );
    assert!(mock.requests().is_empty(), "no model request was made");
    lines[0][prefix.len()..].to_string()
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_required_server_that_cannot_start_ends_the_run_before_any_request() {
    let _ = cache();
    let scene = Scene::new();
    let cfg = scene.config(json!({"x": {"command": "/nonexistent/prog", "required": true}}));
    let mock = MockLlm::start(vec![answer("never")]);
    let run = run_with(&scene, &mock, &cfg);
    let why = assert_dependency_failure(&run, &mock, "x");
    assert!(why.contains("/nonexistent/prog"), "{why}");
    let server = first_status(&run);
    assert_eq!(
        (&server["status"], &server["required"], &server["tools"]),
        (&json!("failed"), &json!(true), &json!(0))
    );
    assert_eq!(server["error"], why.as_str());
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn an_optional_server_that_fails_is_reported_and_the_run_goes_on() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "broken": {"command": "/nonexistent/prog"},
        "off": fault(json!({"disabled": true})),
        "fault": fault(json!({"required": true})),
    }));
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "mcp__fault__echo",
            &args(json!({"text": "still here"})),
        ),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    assert_eq!(run.stderr, "");
    let servers = &run.first("mcp_status")["servers"];
    // Configuration order is the file's key order (a map, sorted by name).
    let by_name = |name: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {servers}"))
            .clone()
    };
    let broken = by_name("broken");
    assert_eq!(
        (&broken["status"], &broken["required"], &broken["tools"]),
        (&json!("failed"), &json!(false), &json!(0))
    );
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.contains("/nonexistent/prog")),
        "{broken}"
    );
    let off = by_name("off");
    assert_eq!(
        off,
        json!({"name": "off", "status": "disabled", "required": false, "tools": 0, "ms": 0})
    );
    assert_eq!(offered_mcp(&mock.requests()[0]), fault_tools("fault"));
    assert_eq!(results(&run), vec![("still here".to_string(), false)]);
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_slow_start_is_a_timeout_and_ends_a_run_that_requires_the_server() {
    let scene = Scene::new();
    let slow = json!({"startupTimeoutMs": 300, "env": {"FAULT_START_DELAY_MS": "3000"}});
    // Optional: `timeout`, and the run goes on without its tools.
    let cfg = scene
        .config(json!({"fault": fault(slow.clone()), "fast": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![answer("done")]);
    let started = Instant::now();
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let servers = &run.first("mcp_status")["servers"];
    let slow_one = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fault")
        .unwrap();
    let ms = slow_one["ms"].as_u64().unwrap();
    assert_eq!(
        slow_one,
        &json!({"name": "fault", "status": "timeout", "required": false, "tools": 0, "ms": ms,
                "error": "not ready within 300 ms (startupTimeoutMs)"})
    );
    assert!((300..2500).contains(&ms), "{ms}");
    assert_eq!(offered_mcp(&mock.requests()[0]), fault_tools("fast"));

    // Required: the run ends before any request, well before the server would be ready.
    let cfg = scene.config(json!({"fault": fault(merged(slow, json!({"required": true})))}));
    let mock = MockLlm::start(vec![answer("never")]);
    let started_required = Instant::now();
    let run = run_with(&scene, &mock, &cfg);
    let why = assert_dependency_failure(&run, &mock, "fault");
    assert_eq!(why, "not ready within 300 ms (startupTimeoutMs)");
    assert_eq!(first_status(&run)["status"], "timeout");
    assert!(
        started_required.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started_required.elapsed()
    );
    let _ = started;
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn enabled_and_disabled_tools_choose_what_is_offered() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "a": fault(json!({"required": true, "enabledTools": ["e*", "add"]})),
        "b": fault(json!({"required": true, "disabledTools": ["*_file", "h*", "crash"]})),
        "c": fault(json!({"required": true, "enabledTools": ["*e*"], "disabledTools": ["echo", "*_*"]})),
    }));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__b__echo", &args(json!({"text": "b works"}))),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let pick = |server: &str, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        FAULT_TOOLS
            .iter()
            .filter(|tool| keep(tool))
            .map(|tool| format!("mcp__{server}__{tool}"))
            .collect()
    };
    let a = pick("a", &|t| t.starts_with('e') || t == "add");
    let b = pick("b", &|t| {
        !t.ends_with("_file") && !t.starts_with('h') && t != "crash"
    });
    let c = pick("c", &|t| t.contains('e') && t != "echo" && !t.contains('_'));
    assert_eq!(a, ["mcp__a__echo", "mcp__a__add", "mcp__a__env"]);
    assert_eq!(b.len(), 11);
    assert_eq!(
        c,
        [
            "mcp__c__huge",
            "mcp__c__image",
            "mcp__c__resource",
            "mcp__c__secret",
            "mcp__c__env",
            "mcp__c__connect"
        ]
    );
    let expected: Vec<String> = [a.clone(), b.clone(), c.clone()].concat();
    assert_eq!(offered_mcp(&mock.requests()[0]), expected);
    let counts: Vec<(String, u64)> = run.first("mcp_status")["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["tools"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [
            ("a".to_string(), 3),
            ("b".to_string(), 11),
            ("c".to_string(), 6)
        ]
    );
    assert_eq!(results(&run), vec![("b works".to_string(), false)]);
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn the_tools_flag_names_mcp_tools_by_glob() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    // `mcp__fault__e*` matches echo and env.
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--tools", "read,mcp__fault__e*"],
        &[],
    );
    run.assert_code(0);
    assert_eq!(
        offered(&mock.requests()[0]),
        ["read", "mcp__fault__echo", "mcp__fault__env"]
    );

    // Only built-in tools named: no MCP tool is offered, though the server is ready.
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--tools", "read"],
        &[],
    );
    run.assert_code(0);
    assert_eq!(offered(&mock.requests()[0]), ["read"]);
    assert_eq!(first_status(&run)["status"], "ready");
}

/// A `--profile` that lists MCP tools offers only those (and what `--tools` names, when it
/// names any); one that lists none leaves them alone.
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_profile_narrows_the_mcp_tools() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let profiles = scene.ws.join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    std::fs::write(
        profiles.join("narrow.json"),
        r#"{"tools": ["github_get_issue", "mcp__fault__e*", "mcp__fault__pid"]}"#,
    )
    .unwrap();
    std::fs::write(
        profiles.join("plain.json"),
        r#"{"tools": ["github_get_issue"]}"#,
    )
    .unwrap();
    let dir = profiles.display().to_string();
    let offered_with = |extra: &[&str]| {
        let mock = MockLlm::start(vec![answer("done")]);
        let mut flags = vec!["--mcp-config", cfg.as_str(), "--profiles-dir", dir.as_str()];
        flags.extend_from_slice(extra);
        let run = worker_run(&scene, &mock, &flags, &[]);
        run.assert_code(0);
        offered_mcp(&mock.requests()[0])
    };
    assert_eq!(
        offered_with(&["--profile", "narrow"]),
        ["mcp__fault__echo", "mcp__fault__env", "mcp__fault__pid"]
    );
    assert_eq!(
        offered_with(&["--profile", "narrow", "--tools", "read,mcp__fault__*o*"]),
        ["mcp__fault__echo"]
    );
    assert_eq!(offered_with(&["--profile", "plain"]), fault_tools("fault"));
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_tool_with_an_invalid_schema_is_left_out() {
    let scene = Scene::new();
    let cfg = scene.config(
        json!({"fault": fault(json!({"required": true, "env": {"FAULT_INVALID_SCHEMA": "1"}}))}),
    );
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__echo", &args(json!({"text": "fine"}))),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    // Every other tool is offered, and works.
    assert_eq!(offered_mcp(&mock.requests()[0]), fault_tools("fault"));
    assert_eq!(first_status(&run)["status"], "ready");
    assert_eq!(results(&run), vec![("fine".to_string(), false)]);
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn approving_mcp_calls_needs_a_decider_and_asks_for_each_call() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![answer("never")]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--approve-tools", "mcp__*"],
        &[],
    );
    run.assert_code(2);
    assert_eq!(
        run.stderr,
        "worker: --approve-tools needs someone to decide: add --control stdin (decide commands) or a --pre-tool-hook\n"
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);

    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__echo", &args(json!({"text": "approved"}))),
        call(
            "c2",
            "mcp__fault__write_file",
            &args(json!({"path": "denied.txt", "text": "x"})),
        ),
        answer("done"),
    ]);
    let mut live = Live::start(
        &scene,
        &mock,
        &[
            "--mcp-config",
            &cfg,
            "--control",
            "stdin",
            "--approve-tools",
            "mcp__*",
        ],
        &[],
        None,
    );
    live.send(&json!({"type": "prompt", "message": "go"}));
    let asked = live.wait_for("approval_requested", |e| e["type"] == "approval_requested");
    assert_eq!(
        (&asked["toolCallId"], &asked["toolName"], &asked["input"]),
        (
            &json!("c1"),
            &json!("mcp__fault__echo"),
            &json!({"text": "approved"})
        )
    );
    let id = asked["id"].as_str().unwrap().to_string();
    live.send(&json!({"type": "decide", "id": id, "allow": true}));
    assert_eq!(
        result_text(&live.tool("tool_execution_end", "c1")),
        "approved"
    );
    let asked = live.wait_for("the second approval_requested", |e| {
        e["type"] == "approval_requested" && e["toolCallId"] == "c2"
    });
    let id = asked["id"].as_str().unwrap().to_string();
    live.send(&json!({"type": "decide", "id": id, "allow": false, "reason": "no writes"}));
    let end = live.tool("tool_execution_end", "c2");
    assert_eq!(end["isError"], true);
    assert_eq!(
        result_text(&end),
        "The mcp__fault__write_file call was denied: no writes"
    );
    let run = live.finish();
    run.assert_code(0);
    assert!(!scene.ws.join("denied.txt").exists());
}

/// `tools` in `mcp_status` is how many of the server's tools the run offers (README, and the
/// field's own documentation): not a tool left out for its invalid schema, nor one `--tools`
/// does not name.
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn mcp_status_counts_the_tools_the_run_offers() {
    let scene = Scene::new();
    let cfg = scene.config(
        json!({"fault": fault(json!({"required": true, "env": {"FAULT_INVALID_SCHEMA": "1"}}))}),
    );
    let mock = MockLlm::start(vec![answer("done")]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let offered = offered_mcp(&mock.requests()[0]).len();
    assert_eq!(offered, 16);
    let listed = &run.first("mcp_status")["servers"][0];
    assert_eq!(listed["tools"], offered, "invalid schema: {listed}");

    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--tools", "read,mcp__fault__e*"],
        &[],
    );
    run.assert_code(0);
    let offered = offered_mcp(&mock.requests()[0]).len();
    assert_eq!(offered, 2);
    let listed = &run.first("mcp_status")["servers"][0];
    assert_eq!(listed["tools"], offered, "--tools: {listed}");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn an_optional_server_ready_late_joins_at_the_next_request() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "keep": fault(json!({"required": true})),
        "late": fault(json!({"env": {"FAULT_START_DELAY_MS": "1500"}})),
    }));
    // The first call waits for a gate the test opens once the late server is ready.
    let gated = "while [ ! -e gate ]; do sleep 0.02; done; echo opened";
    let mock = MockLlm::start(vec![
        call("c1", "bash", &args(json!({"command": gated}))),
        call(
            "c2",
            "mcp__late__echo",
            &args(json!({"text": "late but here"})),
        ),
        answer("done"),
    ]);
    let mut live = Live::start(&scene, &mock, &["--mcp-config", &cfg], &[], Some("go"));
    let first = live.wait_for("mcp_status", |e| e["type"] == "mcp_status");
    let late = first["servers"][1].clone();
    let ms = late["ms"].clone();
    assert_eq!(
        late,
        json!({"name": "late", "status": "starting", "required": false, "tools": 0, "ms": ms})
    );
    assert_eq!(first["servers"][0]["status"], "ready");
    let ready = live.wait_for("mcp_status with late ready", |e| {
        e["type"] == "mcp_status" && e["servers"][1]["status"] == "ready"
    });
    assert_eq!(ready["servers"][1]["tools"], 16, "{ready}");
    std::fs::write(scene.ws.join("gate"), "").unwrap();
    let run = live.finish();
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(offered_mcp(&requests[0]), fault_tools("keep"));
    assert_eq!(
        offered_mcp(&requests[1]),
        [fault_tools("keep"), fault_tools("late")].concat()
    );
    assert_eq!(
        results(&run),
        vec![
            ("opened".to_string(), false),
            ("late but here".to_string(), false)
        ]
    );
}
