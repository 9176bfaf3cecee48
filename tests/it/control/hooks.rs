//! `--pre-tool-hook` and `--post-tool-hook` on Claude Code's contract, failing closed.

use super::*;

/// A one-call run with `hook_args`; the run, and the mock for its requests.
fn hooked(dir: &Path, command: &str, hook_args: &[&str]) -> (Run, MockLlm) {
    let mock = MockLlm::start(vec![call("c1", "bash", &bash(command)), answer("ok")]);
    let mut args = vec!["--no-session"];
    args.extend_from_slice(hook_args);
    let run = run_dynamo(dir, &mock.url, &args, "task");
    (run, mock)
}

/// A hook that writes `output` (a JSON value) on stdout.
fn printing(output: &Value) -> String {
    let text = output.to_string().replace('\'', "'\\''");
    format!("cat > /dev/null; printf '%s' '{text}'")
}

#[test]
fn an_allowing_hook_sees_the_call_and_lets_it_run() {
    let dir = tempfile::tempdir().unwrap();
    let hook = "cat > hook-input.json";
    let (run, _mock) = hooked(dir.path(), "echo ran", &["--pre-tool-hook", hook]);
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["toolCallId"], "c1");
    assert_eq!(result["toolName"], "bash");
    assert_eq!(result["hook"], hook);
    assert_eq!(result["decision"], "allow");
    assert!(result["durationMs"].is_u64(), "{result}");
    assert_eq!(result.get("reason"), None);
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
    // Claude Code's PreToolUse input.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("hook-input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"], json!({"command": "echo ran"}));
    assert_eq!(input["tool_use_id"], "c1");
    assert!(input["session_id"].is_string());
    let cwd = PathBuf::from(input["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
    // The hook ran before the call.
    let outline = run.outline();
    let at = |kind: &str| outline.iter().position(|t| t == kind).unwrap();
    assert!(at("tool_execution_start") < at("hook_result"));
    assert!(at("hook_result") < at("tool_execution_end"));
}

#[test]
fn a_denying_hook_refuses_the_call_with_its_reason_for_the_model() {
    let deny = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "no deleting here",
    }});
    let legacy = json!({"decision": "block", "reason": "blocked the old way"});
    let cases = [
        (printing(&deny), "no deleting here"),
        (printing(&legacy), "blocked the old way"),
        (
            "cat > /dev/null; echo 'exit two says no' >&2; exit 2".to_string(),
            "exit two says no",
        ),
    ];
    for (hook, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (run, mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", &hook]);
        run.assert_code(0);
        let result = run.first("hook_result");
        assert_eq!(result["decision"], "deny", "{hook}");
        assert_eq!(result["reason"], reason, "{hook}");
        assert_eq!(results(&run), vec![(reason.to_string(), true)], "{hook}");
        assert!(!dir.path().join("made.txt").exists(), "{hook}");
        assert_eq!(content_text(messages(&mock, 1).last().unwrap()), reason);
    }
}

#[test]
fn a_hook_that_fails_refuses_the_call() {
    let cases = [
        (
            "cat > /dev/null; exit 3",
            "pre-tool hook `cat > /dev/null; exit 3` exited with status 3",
        ),
        (
            "kill -9 $$",
            "pre-tool hook `kill -9 $$` was killed by signal 9 (SIGKILL)",
        ),
        (
            "cat > /dev/null; echo '{not json'",
            "pre-tool hook `cat > /dev/null; echo '{not json'` printed output the hook contract does not allow: stdout is not a JSON object",
        ),
    ];
    for (hook, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (run, _mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", hook]);
        run.assert_code(0);
        let result = run.first("hook_result");
        assert_eq!(result["decision"], "failed", "{hook}");
        let said = result["reason"].as_str().unwrap();
        assert!(said.starts_with(reason), "{hook}: {said}");
        assert!(results(&run)[0].1, "{hook}");
        assert!(results(&run)[0].0.starts_with(reason), "{hook}");
        assert!(!dir.path().join("made.txt").exists(), "{hook}");
    }
}

#[test]
fn a_hook_past_its_timeout_is_killed_and_the_call_refused() {
    let dir = tempfile::tempdir().unwrap();
    // The sleep records its pid (the shell's, which it then becomes).
    let hook = "cat > /dev/null; read -r p _ < /proc/self/stat; echo $p > pid; exec sleep 20";
    let started = Instant::now();
    let (run, _mock) = hooked(
        dir.path(),
        "touch made.txt",
        &["--pre-tool-hook", hook, "--hook-timeout", "300ms"],
    );
    run.assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(15));
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "failed");
    let reason = format!("pre-tool hook `{hook}` timed out after 300ms");
    assert_eq!(result["reason"], reason.as_str());
    assert_eq!(results(&run), vec![(reason, true)]);
    assert!(!dir.path().join("made.txt").exists());
    let pid = sleeper_pid(dir.path());
    assert!(
        gone_soon(pid),
        "the hook's process {pid} outlived its timeout"
    );
}

#[test]
fn a_slow_hook_within_its_timeout_allows() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo ran",
        &[
            "--pre-tool-hook",
            "cat > /dev/null; sleep 0.5",
            "--hook-timeout",
            "10s",
        ],
    );
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "allow");
    assert!(result["durationMs"].as_u64().unwrap() >= 500, "{result}");
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
}

#[test]
fn a_hooks_updated_input_replaces_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "echo rewritten"},
    }});
    let (run, _mock) = hooked(
        dir.path(),
        "echo original",
        &["--pre-tool-hook", &printing(&output)],
    );
    run.assert_code(0);
    let result = run.first("hook_result");
    assert_eq!(result["decision"], "allow");
    assert_eq!(result["updatedInput"], json!({"command": "echo rewritten"}));
    assert_eq!(results(&run), vec![("rewritten".to_string(), false)]);
}

#[test]
fn an_updated_input_that_does_not_fit_the_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": 42},
    }});
    let (run, _mock) = hooked(
        dir.path(),
        "echo original",
        &["--pre-tool-hook", &printing(&output)],
    );
    run.assert_code(0);
    assert_eq!(run.first("hook_result")["decision"], "allow");
    let ends = results(&run);
    assert_eq!(ends.len(), 1);
    assert!(ends[0].1);
    assert!(
        ends[0].0.starts_with(
            "A pre-tool hook replaced the arguments of this bash call with ones that do not match its schema: "
        ),
        "{}",
        ends[0].0
    );
    assert!(!ends[0].0.contains("original"), "neither command ran");
}

#[test]
fn a_post_hook_records_the_tool_response() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo audited",
        &["--post-tool-hook", "cat >> post.jsonl; echo >> post.jsonl"],
    );
    run.assert_code(0);
    // A post hook decides nothing: no hook_result line.
    assert!(run.all("hook_result").is_empty());
    let text = std::fs::read_to_string(dir.path().join("post.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    let record = &records[0];
    assert_eq!(record["hook_event_name"], "PostToolUse");
    assert_eq!(record["tool_name"], "bash");
    assert_eq!(record["tool_use_id"], "c1");
    assert_eq!(record["tool_input"], json!({"command": "echo audited"}));
    assert_eq!(record["tool_response"]["isError"], false);
    assert_eq!(record["tool_response"]["content"][0]["text"], "audited");
}

#[test]
fn without_a_controller_the_hooks_decide_a_listed_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(
        dir.path(),
        "echo ran",
        &[
            "--approve-tools",
            "bash",
            "--pre-tool-hook",
            "cat > /dev/null",
        ],
    );
    run.assert_code(0);
    // Nobody is asked: the hooks' allow resolves the approval.
    assert!(run.all("approval_requested").is_empty());
    let resolved = run.first("approval_resolved");
    assert_eq!(resolved["id"], "approval-1");
    assert_eq!(resolved["toolCallId"], "c1");
    assert_eq!(
        (&resolved["allow"], &resolved["by"]),
        (&json!(true), &json!("hook"))
    );
    assert_eq!(results(&run), vec![("ran".to_string(), false)]);
}

#[test]
fn a_hook_that_asks_without_a_controller_refuses_and_with_one_waits_for_decide() {
    let ask = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "a human should look",
    }});
    let hook = printing(&ask);
    // No controller: nobody can answer, so the call is refused.
    let dir = tempfile::tempdir().unwrap();
    let (run, _mock) = hooked(dir.path(), "touch made.txt", &["--pre-tool-hook", &hook]);
    run.assert_code(0);
    assert_eq!(run.first("hook_result")["decision"], "ask");
    let resolved = run.first("approval_resolved");
    assert_eq!(
        (&resolved["allow"], &resolved["by"]),
        (&json!(false), &json!("hook"))
    );
    assert_eq!(
        results(&run),
        vec![(
            "bash needs an approval and this run has no controller to ask (--control stdin)"
                .to_string(),
            true
        )]
    );
    assert!(!dir.path().join("made.txt").exists());

    // With a controller, the hook's reason goes with the request.
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", &bash("touch made.txt")),
        answer("ok"),
    ]);
    let mut run = Controlled::start(
        dir.path(),
        &mock,
        &["--control", "stdin", "--pre-tool-hook", &hook],
    );
    run.send(&prompt("task"));
    let requested = run.wait_for("approval_requested");
    assert_eq!(requested["reason"], "a human should look");
    run.send(&json!({"type": "decide", "id": requested["id"], "allow": true}));
    let run = run.finish();
    run.assert_code(0);
    assert!(dir.path().join("made.txt").exists());
}
