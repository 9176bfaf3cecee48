//! `worker mcp check`: every server started as a run would, one JSON line each.

use super::*;

/// `worker mcp check <args>` in `scene.ws`: exit code, stdout lines parsed, stderr.
fn check(scene: &Scene, args: &[&str]) -> (i32, Vec<Value>, String) {
    let output = worker_command(&scene.ws)
        .args(["mcp", "check"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    (
        output.status.code().unwrap_or(-1),
        lines,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn check_lists_each_servers_tools_and_exits_0_when_the_required_ones_are_ready() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "fault": fault(json!({"required": true, "disabledTools": ["crash"]})),
        "gone": {"command": "/nonexistent/prog"},
        "off": fault(json!({"disabled": true})),
    }));
    let (code, lines, stderr) = check(&scene, &["--mcp-config", &cfg]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!(lines.len(), 3, "one line per server: {lines:?}");
    let mut names = fault_tools("fault");
    names.retain(|name| name != "mcp__fault__crash");
    let ms = lines[0]["ms"].clone();
    assert_eq!(
        lines[0],
        json!({"name": "fault", "status": "ready", "required": true, "tools": 15, "ms": ms,
               "toolNames": names})
    );
    assert_eq!(
        (
            &lines[1]["name"],
            &lines[1]["status"],
            &lines[1]["toolNames"]
        ),
        (&json!("gone"), &json!("failed"), &json!([]))
    );
    let error = lines[1]["error"].as_str().unwrap();
    assert!(error.contains("/nonexistent/prog"), "{error}");
    assert_eq!(
        (&lines[2]["name"], &lines[2]["status"]),
        (&json!("off"), &json!("disabled"))
    );
    // The optional server's failure is worth a line on stderr, not a failed check.
    assert_eq!(stderr, format!("worker: MCP server 'gone': {error}\n"));
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn check_exits_2_when_a_required_server_is_not_ready() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "fault": fault(json!({"required": true})),
        "slow": fault(json!({
            "required": true,
            "startupTimeoutMs": 300,
            "env": {"FAULT_START_DELAY_MS": "3000"},
        })),
    }));
    let (code, lines, stderr) = check(&scene, &["--mcp-config", &cfg]);
    assert_eq!(code, 2, "{lines:?}\n{stderr}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["status"], "ready");
    assert_eq!(lines[0]["toolNames"], json!(fault_tools("fault")));
    assert_eq!(lines[1]["status"], "timeout");
    assert_eq!(
        stderr,
        "worker: MCP server 'slow': not ready within 300 ms (startupTimeoutMs)\n"
    );
}

/// `toolNames` are the tools a run would offer: not one whose schema is invalid.
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn check_lists_only_the_tools_a_run_would_offer() {
    let scene = Scene::new();
    let cfg = scene.config(json!({
        "fault": fault(json!({"required": true, "env": {"FAULT_INVALID_SCHEMA": "1"}})),
    }));
    let (code, lines, stderr) = check(&scene, &["--mcp-config", &cfg]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    assert_eq!(
        lines[0]["toolNames"],
        json!(fault_tools("fault")),
        "{}",
        lines[0]
    );
    assert_eq!(lines[0]["tools"], 16);
}
