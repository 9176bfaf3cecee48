//! MCP configuration through the binary, with no MCP server installed (the servers here are
//! `sh` one-liners that never speak MCP): malformed files, the project file and
//! `--mcp-project`, `worker mcp check` without servers, and a required server that never
//! answers. The end-to-end tests against real servers are in `mcp_e2e`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, pids_with, run_worker, worker_command};

/// Writes `text` to `dir/name`; its absolute path.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn servers(servers: Value) -> String {
    json!({ "mcpServers": servers }).to_string()
}

fn worker_run(cwd: &Path, mock: &MockLlm, args: &[&str]) -> Run {
    let mut all = vec!["--model", "dynamo/mock-model", "--retry-base-delay", "10ms"];
    all.extend_from_slice(args);
    run_worker(cwd, &all, "go", &[("DYNAMO_BASE_URL", &mock.url)])
}

/// A usage error: exit 2, nothing on stdout, exactly one stderr line; that line.
fn usage_error(run: &Run) -> String {
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    lines[0].to_string()
}

#[test]
fn a_malformed_configuration_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![]);
    let cases = [
        ("syntax.json", "{\"mcpServers\": {", ""),
        ("shape.json", "{\"mcpServers\": []}", "mcpServers"),
        (
            "args.json",
            "{\"mcpServers\": {\"x\": {\"command\": \"sh\", \"args\": 5}}}",
            "mcpServers.x.args",
        ),
        (
            "name.json",
            "{\"mcpServers\": {\"a b\": {\"command\": \"sh\"}}}",
            "server 'a b'",
        ),
        (
            "glob.json",
            "{\"mcpServers\": {\"x\": {\"command\": \"sh\", \"enabledTools\": [\"[\"]}}}",
            "enabledTools",
        ),
    ];
    for (name, text, says) in cases {
        let path = write(dir.path(), name, text);
        let run = worker_run(dir.path(), &mock, &["--mcp-config", &path]);
        let line = usage_error(&run);
        assert!(
            line.starts_with(&format!("worker: --mcp-config {path}: ")),
            "{name}: {line}"
        );
        assert!(line.contains(says), "{name}: {line}");
    }
    let missing = dir.path().join("missing.json").display().to_string();
    let run = worker_run(dir.path(), &mock, &["--mcp-config", &missing]);
    assert_eq!(
        usage_error(&run),
        format!("worker: --mcp-config {missing}: No such file or directory (os error 2)")
    );
    assert!(mock.requests().is_empty());
}

/// A JSON syntax error says where it is, with nothing meaningless before it.
#[test]
fn a_syntax_error_is_reported_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![]);
    let path = write(dir.path(), "syntax.json", "{\"mcpServers\": {");
    let run = worker_run(dir.path(), &mock, &["--mcp-config", &path]);
    assert_eq!(
        usage_error(&run),
        format!("worker: --mcp-config {path}: EOF while parsing an object at line 1 column 16")
    );
}

#[test]
fn a_project_file_is_used_only_with_mcp_project() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    // A server that would leave a mark in --cwd if it were ever started.
    write(
        cwd,
        ".mcp.json",
        &servers(
            json!({"repo": {"command": "sh", "args": ["-c", "touch MARK"], "required": true}}),
        ),
    );
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(cwd, &mock, &[]);
    run.assert_code(0);
    assert!(run.all("mcp_status").is_empty(), "{}", run.stdout);
    assert!(
        !cwd.join("MARK").exists(),
        "the project's server was started"
    );
    assert_eq!(mock.requests().len(), 1);

    // With --mcp-project it starts (and, not speaking MCP, fails the run that requires it).
    let mock = MockLlm::start(vec![answer("never")]);
    let run = worker_run(cwd, &mock, &["--mcp-project"]);
    run.assert_code(2);
    assert!(
        cwd.join("MARK").exists(),
        "the project's server was not started"
    );
    let server = &run.first("mcp_status")["servers"][0];
    assert_eq!(
        (&server["name"], &server["status"]),
        (&json!("repo"), &json!("failed"))
    );
    assert!(
        run.stderr
            .starts_with("worker: required MCP server 'repo' is not ready: ")
    );
    assert!(mock.requests().is_empty());
}

#[test]
fn a_later_file_replaces_a_server_of_the_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    write(
        cwd,
        ".mcp.json",
        &servers(
            json!({"repo": {"command": "sh", "args": ["-c", "touch MARK"], "required": true}}),
        ),
    );
    let etc = tempfile::tempdir().unwrap();
    let mine = write(
        etc.path(),
        "mine.json",
        &servers(json!({"repo": {"command": "sh", "disabled": true}})),
    );
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(cwd, &mock, &["--mcp-project", "--mcp-config", &mine]);
    run.assert_code(0);
    assert_eq!(
        run.first("mcp_status")["servers"],
        json!([{"name": "repo", "status": "disabled", "required": false, "tools": 0, "ms": 0}])
    );
    assert!(!cwd.join("MARK").exists());
}

#[test]
fn mcp_project_without_the_file_is_a_warning_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(dir.path(), &mock, &["--mcp-project"]);
    run.assert_code(0);
    let project = dir.path().join(".mcp.json");
    assert_eq!(
        run.stderr,
        format!(
            "worker: --mcp-project: {} does not exist; no project servers\n",
            project.display()
        )
    );
    assert_eq!(mock.requests().len(), 1);
    assert!(run.all("mcp_status").is_empty(), "{}", run.stdout);
}

#[test]
fn mcp_check_without_any_configuration_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = worker_command(dir.path())
        .args(["mcp", "check"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "worker: worker mcp check: no servers to check: give --mcp-config FILE or --mcp-project\n"
    );
}

#[test]
fn servers_that_cannot_be_used_fail_alone_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "mcp.json",
        &servers(json!({
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "unset": {"command": "${WORKER_MCP_TEST_UNSET_VARIABLE}"},
            "nocommand": {"args": ["x"]},
        })),
    );
    let mock = MockLlm::start(vec![answer("done")]);
    let run = worker_run(dir.path(), &mock, &["--mcp-config", &cfg]);
    run.assert_code(0);
    let servers = run.first("mcp_status")["servers"].clone();
    let error = |name: &str| -> (String, String) {
        let server = servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {servers}"));
        (
            server["status"].as_str().unwrap().to_string(),
            server["error"].as_str().unwrap_or_default().to_string(),
        )
    };
    assert_eq!(
        error("legacy"),
        (
            "failed".to_string(),
            "type \"sse\" (the legacy HTTP+SSE transport) is not supported; use the server's streamable HTTP endpoint (type \"http\")".to_string()
        )
    );
    assert_eq!(
        error("unset"),
        (
            "failed".to_string(),
            "${WORKER_MCP_TEST_UNSET_VARIABLE} is not set".to_string()
        )
    );
    assert_eq!(
        error("nocommand"),
        (
            "failed".to_string(),
            "a stdio server needs \"command\"".to_string()
        )
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_required_server_that_never_answers_times_out_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    // A number of seconds no other test sleeps: how the process is found in /proc.
    let seconds = format!("30.{}", std::process::id());
    let cfg = write(
        dir.path(),
        "mcp.json",
        &servers(json!({"mute": {
            "command": "sh",
            "args": ["-c", format!("sleep {seconds}")],
            "required": true,
            "startupTimeoutMs": 300,
        }})),
    );
    let mock = MockLlm::start(vec![answer("never")]);
    let started = Instant::now();
    let run = worker_run(dir.path(), &mock, &["--mcp-config", &cfg]);
    let took = started.elapsed();
    run.assert_code(2);
    // Well before the 30 s the server would take (a loaded machine gets some slack).
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(
        run.stderr,
        "worker: required MCP server 'mute' is not ready: not ready within 300 ms (startupTimeoutMs)\n"
    );
    let server = &run.first("mcp_status")["servers"][0];
    let ms = server["ms"].as_u64().unwrap();
    assert_eq!(
        server,
        &json!({"name": "mute", "status": "timeout", "required": true, "tools": 0, "ms": ms,
                "error": "not ready within 300 ms (startupTimeoutMs)"})
    );
    assert_eq!(run.first("fatal_error")["error"]["name"], "DependencyError");
    assert!(mock.requests().is_empty());
    assert_eq!(
        pids_with("cmdline", &seconds),
        Vec::<i32>::new(),
        "the server's sleep is left"
    );
}

/// A required HTTP server nothing listens on ends the run before any request, and the error
/// says why (the connection was refused), not only that a request could not be sent.
#[test]
fn an_http_server_nobody_listens_on_fails_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = write(
        dir.path(),
        "mcp.json",
        &servers(
            json!({"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "required": true}}),
        ),
    );
    let mock = MockLlm::start(vec![answer("never")]);
    let run = worker_run(dir.path(), &mock, &["--mcp-config", &cfg]);
    run.assert_code(2);
    assert!(mock.requests().is_empty());
    let server = &run.first("mcp_status")["servers"][0];
    assert_eq!(server["status"], "failed", "{server}");
    let error = server["error"].as_str().unwrap();
    assert_eq!(
        run.stderr,
        format!("worker: required MCP server 'web' is not ready: {error}\n")
    );
    assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
    assert!(error.contains("Connection refused"), "{error}");
}
