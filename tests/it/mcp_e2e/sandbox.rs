//! A stdio server runs where the run's commands run: under `--sandbox linux` it writes only
//! in `--cwd` (as `bash` does, see `tests/it/sandbox.rs`), and with or without the sandbox it
//! sees none of worker's own environment.

use super::*;

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_sandboxed_server_writes_only_in_the_working_directory() {
    let scene = Scene::new();
    let outside = scene.etc("escaped.txt");
    let cfg = scene.config(json!({"fault": fault(json!({"required": true}))}));
    let inside = scene.ws.join("inside.txt").display().to_string();
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "mcp__fault__write_file",
            &args(json!({"path": outside, "text": "x"})),
        ),
        call(
            "c2",
            "mcp__fault__write_file",
            &args(json!({"path": inside, "text": "in"})),
        ),
        call(
            "c3",
            "mcp__fault__write_file",
            &args(json!({"path": "relative.txt", "text": "rel"})),
        ),
        answer("done"),
    ]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--sandbox", "linux"],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results.len(), 3, "{}", run.stdout);
    assert!(results[0].1, "{:?}", results[0]);
    assert!(
        results[0].0.contains("Read-only file system")
            || results[0].0.contains("Permission denied"),
        "{:?}",
        results[0]
    );
    assert!(
        !Path::new(&outside).exists(),
        "the server wrote outside --cwd"
    );
    assert_eq!(results[1], (format!("wrote {inside}"), false));
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "in");
    assert_eq!(results[2], ("wrote relative.txt".to_string(), false));
    assert_eq!(
        std::fs::read_to_string(scene.ws.join("relative.txt")).unwrap(),
        "rel",
        "the server starts in --cwd"
    );
    assert_eq!(run.first("sandbox_status")["backend"], "linux");
}

fn the_server_sees_none_of_workers_environment(sandbox: &str) {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({
        "required": true,
        "env": {"FAULT_OWN": "given-by-the-config"},
    }))}));
    let mock = MockLlm::start(vec![call("c1", "mcp__fault__env", "{}"), answer("done")]);
    let marker = unique("worker-only");
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--sandbox", sandbox],
        &[
            ("OPENAI_API_KEY", "sk-openai-e2e-SECRET"),
            ("DYNAMO_API_KEY", "dynamo-e2e-SECRET"),
            ("WORKER_E2E_MARKER", &marker),
        ],
    );
    run.assert_code(0);
    let end = run.first("tool_execution_end");
    assert_eq!(end["isError"], false, "{end}");
    let env: serde_json::Map<String, Value> = serde_json::from_str(&result_text(end))
        .unwrap_or_else(|e| panic!("{sandbox}: not JSON ({e}): {}", result_text(end)));
    for key in [
        "OPENAI_API_KEY",
        "DYNAMO_API_KEY",
        "DYNAMO_BASE_URL",
        "WORKER_E2E_MARKER",
    ] {
        assert!(
            !env.contains_key(key),
            "{sandbox}: the server sees {key}: {env:?}"
        );
    }
    let text = result_text(end);
    for value in ["sk-openai-e2e-SECRET", "dynamo-e2e-SECRET", marker.as_str()] {
        assert!(!text.contains(value), "{sandbox}: {value} in {text}");
    }
    // Its own variable is there (its value is a credential, so redacted in the result), and
    // so is PATH.
    assert!(env.contains_key("FAULT_OWN"), "{sandbox}: {env:?}");
    assert!(env.contains_key("PATH"), "{sandbox}: {env:?}");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn the_server_sees_none_of_workers_environment_without_a_sandbox() {
    the_server_sees_none_of_workers_environment("none");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn the_server_sees_none_of_workers_environment_in_the_sandbox() {
    the_server_sees_none_of_workers_environment("linux");
}

/// Under `--sandbox linux`, a server without `network` has the run's network; `network: []`
/// has none; a list of hosts reaches them only through a proxy of its own (no direct
/// connection, the proxy in its environment).
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_servers_network_allowance_is_enforced_in_the_sandbox() {
    let scene = Scene::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cfg = scene.config(json!({
        "open": fault(json!({"required": true})),
        "closed": fault(json!({"required": true, "network": []})),
        "proxied": fault(json!({"required": true, "network": ["api.example.com"]})),
    }));
    let target = args(json!({"host": "127.0.0.1", "port": port}));
    let mock = MockLlm::start(vec![
        call("c1", "mcp__open__connect", &target),
        call("c2", "mcp__closed__connect", &target),
        call("c3", "mcp__proxied__connect", &target),
        call("c4", "mcp__proxied__env", "{}"),
        call("c5", "mcp__open__env", "{}"),
        answer("done"),
    ]);
    let run = worker_run(
        &scene,
        &mock,
        &["--mcp-config", &cfg, "--sandbox", "linux"],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results.len(), 5, "{}", run.stdout);
    assert_eq!(results[0], ("connected".to_string(), false));
    assert!(results[1].1, "no network, yet: {:?}", results[1]);
    assert!(results[2].1, "only the proxy, yet: {:?}", results[2]);
    let proxied: Value = serde_json::from_str(&results[3].0).unwrap();
    assert!(
        proxied["HTTPS_PROXY"]
            .as_str()
            .is_some_and(|proxy| proxy.starts_with("http://127.0.0.1:")),
        "{proxied}"
    );
    let open: Value = serde_json::from_str(&results[4].0).unwrap();
    assert!(open.get("HTTPS_PROXY").is_none(), "{open}");
    drop(listener);
}

/// With `--sandbox none` the allowance cannot be enforced: a warning says so, and the run
/// goes on.
#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn a_network_allowance_without_the_sandbox_is_a_warning() {
    let scene = Scene::new();
    let cfg = scene.config(json!({"fault": fault(json!({"required": true, "network": []}))}));
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(&scene, &mock, &["--mcp-config", &cfg], &[]);
    run.assert_code(0);
    assert_eq!(
        stderr_lines(&run),
        vec![
            "worker: MCP server 'fault': \"network\" has no effect with --sandbox none: the server has the host's network"
        ]
    );
}
