//! Calls and their results: every kind of content, errors, long output, a changed tool list,
//! a server that dies mid-call, a call that outlasts its timeout, credentials, and a recorded
//! run replayed.

use super::*;

/// The `tool_execution_end` of call `id`.
fn end_of<'a>(run: &'a Run, id: &str) -> &'a Value {
    run.all("tool_execution_end")
        .into_iter()
        .find(|end| end["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool_execution_end for {id}:\n{}", run.stdout))
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn results_keep_text_structured_content_errors_images_and_resources() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__image", "{}"),
        call("c2", "mcp__fault__add", &args(json!({"a": 2, "b": 40}))),
        call(
            "c3",
            "mcp__fault__fail",
            &args(json!({"message": "it broke"})),
        ),
        call("c4", "mcp__fault__resource", "{}"),
        // Arguments the server's schema refuses: its own error result.
        call("c5", "mcp__fault__add", &args(json!({"a": "two", "b": 1}))),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);

    let image = end_of(&run, "c1");
    assert_eq!(image["isError"], false);
    assert_eq!(
        result_text(image),
        "[image: image/png, 75B; images are not passed to the model]\na 2x2 PNG image"
    );
    let kept = &image["result"]["details"]["content"];
    assert_eq!(kept.as_array().map(Vec::len), Some(1), "{kept}");
    assert_eq!(kept[0]["type"], "image");
    assert_eq!(kept[0]["mimeType"], "image/png");
    assert!(
        kept[0]["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("iVBORw0KGgo")),
        "the PNG's data: {kept}"
    );

    let add = end_of(&run, "c2");
    assert_eq!(result_text(add), "2+40=42");
    assert_eq!(add["isError"], false);
    assert_eq!(
        add["result"]["details"],
        json!({"server": "fault", "tool": "add", "structuredContent": {"sum": 42}})
    );

    let fail = end_of(&run, "c3");
    assert_eq!(fail["isError"], true);
    assert_eq!(result_text(fail), "it broke");

    let resource = end_of(&run, "c4");
    assert_eq!(resource["isError"], false);
    assert_eq!(
        result_text(resource),
        "[resource file:///fault/notes.txt]\nresource body"
    );

    let refused = end_of(&run, "c5");
    assert_eq!(refused["isError"], true);
    assert!(
        result_text(refused).starts_with("invalid arguments for add: "),
        "{refused}"
    );

    // The model reads the same text: the image as its line, the error as an error.
    let last = mock.requests().last().unwrap().body["messages"].clone();
    let tool_texts: Vec<String> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            m["content"]
                .as_str()
                .map_or_else(|| m["content"].to_string(), str::to_string)
        })
        .collect();
    assert_eq!(tool_texts.len(), 5, "{last}");
    assert!(
        tool_texts[0].starts_with("[image: image/png"),
        "{tool_texts:?}"
    );
    assert!(
        !tool_texts[0].contains("iVBORw0KGgo"),
        "no image data for the model"
    );
    assert_eq!(tool_texts[1], "2+40=42");
    assert!(tool_texts[2].contains("it broke"), "{tool_texts:?}");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_huge_result_is_cut_and_spilled_whole_until_the_run_ends() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__huge", &args(json!({"bytes": 200_000}))),
        // The run stays alive while the spill file is looked at.
        slow_answer(Duration::from_secs(3), "done"),
    ]);
    let mut live = Live::start(&scene, &mock, &["--mcp-config", &cfg], &[], Some("go"));
    let end = live.tool("tool_execution_end", "c1");
    let details = &end["result"]["details"];
    let spill = PathBuf::from(details["fullOutputPath"].as_str().expect("fullOutputPath"));
    let whole = std::fs::read_to_string(&spill).expect("the spill file exists during the run");
    assert_eq!(whole.len(), 200_000);
    assert!(whole.starts_with("line 0\nline 1\n"));
    assert_eq!(details["truncation"]["truncated"], true, "{details}");
    let text = result_text(&end);
    assert!(text.len() <= 51 * 1024, "{}", text.len());
    assert!(text.starts_with("line 0\nline 1\n"));
    assert!(
        text.contains(&format!("Full output: {}]", spill.display())),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert_eq!(end["isError"], false);
    let run = live.finish();
    run.assert_code(0);
    assert!(!spill.exists(), "the spill file is removed with the run");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_changed_tool_list_is_offered_at_the_next_request() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__add_tool", "{}"),
        call("c2", "mcp__fault__late", "{}"),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(!offered_mcp(&requests[0]).contains(&"mcp__fault__late".to_string()));
    let mut with_late = fault_tools("fault");
    with_late.push("mcp__fault__late".to_string());
    assert_eq!(offered_mcp(&requests[1]), with_late);
    assert_eq!(offered_mcp(&requests[2]), with_late);
    assert_eq!(
        results(&run),
        vec![
            ("added".to_string(), false),
            ("late tool".to_string(), false)
        ]
    );
    // The new count is announced.
    assert!(
        statuses(&run)
            .iter()
            .any(|servers| servers[0]["status"] == "ready" && servers[0]["tools"] == 17),
        "{:?}",
        statuses(&run)
    );
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn an_optional_server_that_dies_mid_call_takes_its_tools_and_the_run_goes_on() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "fault": fault(json!({})),
        "keep": fault(json!({"required": true})),
    }));
    // Nothing waits for the optional server: the first call waits for a gate the test opens
    // once it is ready, so the crash is asked for when its tools are offered.
    let gated = "while [ ! -e gate ]; do sleep 0.02; done; echo opened";
    let mock = MockLlm::start(vec![
        call("c0", "bash", &args(json!({"command": gated}))),
        call("c1", "mcp__fault__crash", "{}"),
        call(
            "c2",
            "mcp__keep__echo",
            &args(json!({"text": "still here"})),
        ),
        answer("done"),
    ]);
    let mut live = Live::start(&scene, &mock, &["--mcp-config", &cfg], &[], Some("go"));
    live.wait_for("mcp_status with fault ready", |e| {
        e["type"] == "mcp_status" && e["servers"][0]["status"] == "ready"
    });
    std::fs::write(scene.ws.join("gate"), "").unwrap();
    let run = live.finish();
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        offered_mcp(&requests[1]),
        [fault_tools("fault"), fault_tools("keep")].concat(),
        "both servers' tools when the crash was asked for"
    );
    let crash = end_of(&run, "c1");
    assert_eq!(crash["isError"], true);
    assert!(
        result_text(crash).starts_with("MCP server 'fault' is not available: "),
        "{crash}"
    );
    // A later mcp_status says it failed, and why.
    let failed = statuses(&run)
        .into_iter()
        .find_map(|servers| {
            servers
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == "fault" && s["status"] == "failed")
                .cloned()
        })
        .unwrap_or_else(|| panic!("no mcp_status with fault failed:\n{}", run.stdout));
    assert_eq!(
        (&failed["tools"], &failed["required"]),
        (&json!(0), &json!(false))
    );
    // Why: the exit, or the connection closing under the call (whichever worker saw first).
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the server exited with status 3")
            || error.contains("the connection was lost (the connection closed during the call)"),
        "{failed}"
    );
    // Its tools are gone from the next request; the other server's stay and work.
    assert_eq!(offered_mcp(&requests[2]), fault_tools("keep"));
    assert_eq!(offered_mcp(&requests[3]), fault_tools("keep"));
    assert_eq!(result_text(end_of(&run, "c2")), "still here");
    assert_eq!(end_of(&run, "c2")["isError"], false);
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_call_past_its_timeout_is_an_error_and_is_cancelled_at_the_server() {
    let scene = Scene::new();
    let log = scene.etc.join("cancel.log");
    let wire = scene.etc.join("wire.jsonl");
    let cfg = scene.config(json!({"fault": fault_teed(&wire, json!({
        "required": true,
        "toolTimeoutMs": 300,
        "env": {"FAULT_CANCEL_LOG": log.display().to_string()},
    }))}));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__hang", "{}"),
        call("c2", "mcp__fault__slow", &args(json!({"ms": 50}))),
        answer("done"),
    ]);
    let started = Instant::now();
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let hang = end_of(&run, "c1");
    assert_eq!(hang["isError"], true);
    assert_eq!(
        result_text(hang),
        "MCP tool mcp__fault__hang timed out after 300 ms (toolTimeoutMs, or the run's remaining time); the server was told to cancel it"
    );
    assert_eq!(
        hang["result"]["details"],
        json!({"server": "fault", "timedOut": true})
    );
    assert_cancelled_on_the_wire(&wire, "hang");
    // The server heard of it (a line in its log), and went on serving.
    let text = wait_for_line(&log, "cancelled hang", Duration::from_secs(5));
    assert_eq!(text, "cancelled hang\n");
    assert_eq!(result_text(end_of(&run, "c2")), "slept 50");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Worker sent the server `notifications/cancelled` for its one call of `tool`, once.
fn assert_cancelled_on_the_wire(wire: &Path, tool: &str) {
    let messages = wire_messages(wire);
    let id = messages
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .map_or_else(
            || panic!("no tools/call of {tool}: {messages:?}"),
            |m| m["id"].clone(),
        );
    let cancelled: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{messages:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], id, "{messages:?}");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_configured_credential_is_redacted_from_the_stream_and_the_session() {
    let scene = Scene::new();
    let secret = format!("s3cret-{}", unique("value"));
    let cfg = scene.config(
        json!({"fault": fault(json!({"required": true, "env": {"FAULT_SECRET": "${MY_SECRET}"}}))}),
    );
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__secret", "{}"), answer("done")]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg],
        &[("MY_SECRET", &secret)],
    );
    run.assert_code(0);
    let end = end_of(&run, "c1");
    assert_eq!(end["isError"], false);
    assert_eq!(result_text(end), "the secret is [REDACTED]");
    assert!(!run.stdout.contains(&secret), "the secret is on stdout");
    assert!(!run.stderr.contains(&secret), "the secret is on stderr");
    let session = run.events[0]["sessionFile"]
        .as_str()
        .expect("a session file");
    let saved = std::fs::read_to_string(session).unwrap();
    assert!(saved.contains("the secret is [REDACTED]"), "{saved}");
    assert!(
        !saved.contains(&secret),
        "the secret is in the session file"
    );
    // Nor did the model read it.
    let last = mock.requests().last().unwrap().body.to_string();
    assert!(!last.contains(&secret), "the secret was sent to the model");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_recorded_run_replays_with_the_same_tool_results() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let fixture = scene.etc("rec.jsonl");
    let mock = MockLlm::start(vec![
        call("c1", "mcp__fault__echo", &args(json!({"text": "recorded"}))),
        call("c2", "mcp__fault__add", &args(json!({"a": 1, "b": 2}))),
        call(
            "c3",
            "mcp__fault__fail",
            &args(json!({"message": "as before"})),
        ),
        answer("done"),
    ]);
    let live = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--record", &fixture],
        &[],
    );
    live.assert_code(0);
    let replay_model = format!("replay/{fixture}");
    let replayed = run_worker(
        &scene.ws,
        &["--model", &replay_model, "--mcp-config", &cfg],
        "go",
        &[],
    );
    replayed.assert_code(0);
    let outcome = |run: &Run| -> Vec<(Value, Value, Value)> {
        run.all("tool_execution_end")
            .iter()
            .map(|end| {
                (
                    end["toolCallId"].clone(),
                    end["result"].clone(),
                    end["isError"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(outcome(&live).len(), 3);
    assert_eq!(outcome(&replayed), outcome(&live));
    assert_eq!(first_status(&replayed)["status"], "ready");
}

/// The run's `--timeout` bounds a call whose own timeout is longer: the call is cancelled at
/// the server and the run ends as out of time (exit 3).
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn the_runs_timeout_bounds_a_call() {
    let scene = Scene::new();
    let log = scene.etc.join("cancel.log");
    let wire = scene.etc.join("wire.jsonl");
    let cfg = scene.config(json!({"fault": fault_teed(&wire, json!({
        "required": true,
        "env": {"FAULT_CANCEL_LOG": log.display().to_string()},
    }))}));
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__hang", "{}"), answer("never")]);
    let started = Instant::now();
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--timeout", "3s"],
        &[],
    );
    run.assert_code(3);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let end = end_of(&run, "c1");
    assert_eq!(end["isError"], true, "{end}");
    assert_cancelled_on_the_wire(&wire, "hang");
    let text = wait_for_line(&log, "cancelled hang", Duration::from_secs(5));
    assert_eq!(text, "cancelled hang\n");
}

/// README: a required server that dies later fails the run at its next step (exit 1).
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_required_server_that_dies_fails_the_run_at_its_next_step() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__crash", "{}"), answer("never")]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(1);
    assert_eq!(end_of(&run, "c1")["isError"], true);
    let fatal = run.first("fatal_error");
    assert_eq!(fatal["error"]["name"], "DependencyError", "{fatal}");
    assert!(
        fatal["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("required MCP server 'fault' is not ready: ")),
        "{fatal}"
    );
    assert_eq!(mock.requests().len(), 1, "no request after the server died");
    assert_eq!(run.last()["type"], "usage_snapshot");
}
