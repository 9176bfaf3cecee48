//! Against real Dynamo (PyPI `ai-dynamo`, frontend + CPU mocker), both protocol generations.
//!
//! Run by `scripts/dynamo-e2e.sh`, which installs Dynamo 1.2.1 and 1.6.1 into cached
//! virtualenvs and runs these tests (`--ignored`) inside a network namespace with only
//! loopback. A plain `cargo test` lists them as ignored; run by hand without
//! `WORKER_DYNAMO_E2E` (the install cache) they fail, naming the script.
//!
//! For each version: worker runs directly against the frontend (the mocker streams no text
//! and stops at max_tokens, so the run ends with `length`, exit 1), and Dynamo's trace must
//! hold one request row per model request, with worker's identity and x-request-id, matching
//! worker's own `--trace-file` field by field. Then a tool-using run goes through a scripted
//! server that forwards each request verbatim to Dynamo before answering with tool calls,
//! with the ZeroMQ tee pointed at Dynamo's ingest: every tool call must appear in Dynamo's
//! trace, on the same trajectory, after the request that asked for it, and a subagent
//! started from bash must land with its rewritten trajectory and parent.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use crate::support::run_worker;
use serde_json::{Value, json};

fn cache() -> PathBuf {
    match std::env::var_os("WORKER_DYNAMO_E2E") {
        Some(dir) => PathBuf::from(dir),
        None => panic!("WORKER_DYNAMO_E2E is not set: run scripts/dynamo-e2e.sh"),
    }
}

/// `N` distinct free ports below 32768 (Dynamo reads `DYN_SYSTEM_PORT` as an i16). Each
/// is held until all are chosen, so none is picked twice.
fn free_ports<const N: usize>() -> [u16; N] {
    let start = 20000 + (std::process::id() % 10000) as u16;
    let mut held = Vec::with_capacity(N);
    for port in (start..32000).chain(20000..start) {
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push((port, listener));
            if held.len() == N {
                break;
            }
        }
    }
    std::array::from_fn(|i| held[i].0)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A Dynamo frontend and CPU mocker, stopped by pid (process group) on drop.
struct Stack {
    version: &'static str,
    dir: tempfile::TempDir,
    port: u16,
    zmq_port: u16,
    model: String,
    children: Vec<Child>,
}

impl Stack {
    fn boot(cache: &Path, version: &'static str) -> Stack {
        let venv = cache.join(format!("v{}", version.replace('.', "")));
        let python = venv.join("bin/python");
        let model = cache.join("tinymodel").display().to_string();
        let dir = tempfile::tempdir().unwrap();
        let [port, zmq_port, system_port] = free_ports::<3>();
        let common = |cmd: &mut Command| {
            cmd.env("HF_HUB_OFFLINE", "1")
                .env("TRANSFORMERS_OFFLINE", "1")
                .env("DYN_LOG", "info")
                .env("DYN_TCP_RPC_HOST", "127.0.0.1")
                .env("DYN_TCP_RESPONSE_STREAM_HOST", "lo")
                .env("DYN_EVENT_PLANE_HOST", "lo")
                .env("DYN_DISCOVERY_BACKEND", "file")
                .env("DYN_FILE_KV", dir.path().join("kv"))
                .env("DYN_REQUEST_PLANE", "tcp")
                .env("DYN_EVENT_PLANE", "zmq")
                .stdin(Stdio::null())
                .process_group(0);
        };
        use std::os::unix::process::CommandExt;
        let ingest = format!("tcp://127.0.0.1:{zmq_port}");
        let mut frontend = Command::new(&python);
        frontend.args([
            "-m",
            "dynamo.frontend",
            "--http-host",
            "127.0.0.1",
            "--http-port",
            &port.to_string(),
        ]);
        frontend.args([
            "--discovery-backend",
            "file",
            "--request-plane",
            "tcp",
            "--event-plane",
            "zmq",
            "--router-mode",
            "round-robin",
        ]);
        common(&mut frontend);
        if version == "1.2.1" {
            frontend
                .env("DYN_AGENT_TRACE_SINKS", "jsonl")
                .env(
                    "DYN_AGENT_TRACE_OUTPUT_PATH",
                    dir.path().join("dynamo-trace.jsonl"),
                )
                .env("DYN_AGENT_TRACE_JSONL_FLUSH_INTERVAL_MS", "100")
                .env("DYN_AGENT_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT", &ingest);
        } else {
            frontend
                .env("DYN_REQUEST_TRACE", "1")
                .env("DYN_REQUEST_TRACE_SINKS", "file")
                .env("DYN_REQUEST_TRACE_FILE_FORMAT", "jsonl")
                .env(
                    "DYN_REQUEST_TRACE_FILE_PATH",
                    dir.path().join("dynamo-trace.jsonl"),
                )
                .env("DYN_REQUEST_TRACE_FILE_FLUSH_INTERVAL_MS", "100")
                .env("DYN_REQUEST_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT", &ingest);
        }
        frontend
            .stdout(log(dir.path(), "frontend.log"))
            .stderr(log(dir.path(), "frontend.err"));
        let mut mocker = Command::new(&python);
        mocker.args([
            "-m",
            "dynamo.mocker",
            "--model-path",
            &model,
            "--discovery-backend",
            "file",
        ]);
        mocker.args([
            "--request-plane",
            "tcp",
            "--event-plane",
            "zmq",
            "--speedup-ratio",
            "10",
        ]);
        common(&mut mocker);
        mocker.env("DYN_SYSTEM_PORT", system_port.to_string());
        mocker
            .stdout(log(dir.path(), "mocker.log"))
            .stderr(log(dir.path(), "mocker.err"));
        let mut stack = Stack {
            version,
            dir,
            port,
            zmq_port,
            model,
            children: Vec::new(),
        };
        stack
            .children
            .push(frontend.spawn().expect("start the Dynamo frontend"));
        stack
            .children
            .push(mocker.spawn().expect("start the Dynamo mocker"));
        let started = Instant::now();
        let models_url = format!("{}/models", stack.url());
        let client = worker::llm::http_client(Duration::from_secs(2), false).unwrap();
        while !block_on(async {
            match client.get(&models_url).send().await {
                Ok(r) => r.text().await.unwrap_or_default().contains("tinymodel"),
                Err(_) => false,
            }
        }) {
            let exited = stack
                .children
                .iter_mut()
                .any(|c| c.try_wait().ok().flatten().is_some());
            assert!(
                !exited && started.elapsed() < Duration::from_secs(90),
                "Dynamo {version} did not come up:\n{}",
                stack.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!(
            "Dynamo {version} up in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        stack
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn ingest(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.zmq_port)
    }

    fn logs(&self) -> String {
        ["frontend.log", "frontend.err", "mocker.log", "mocker.err"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
                let tail: Vec<&str> = text
                    .lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("--- {f}\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Dynamo's trace rows, once `done` holds for them (it flushes every 100 ms).
    fn rows_until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let rows: Vec<Value> = std::fs::read_dir(self.dir.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("dynamo-trace"))
                .flat_map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter_map(|l| serde_json::from_str(&l).ok())
                .collect();
            if done(&rows) || started.elapsed() > Duration::from_secs(15) {
                return rows;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        for child in &self.children {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for child in &mut self.children {
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
        eprintln!("Dynamo {} stopped", self.version);
    }
}

fn log(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(name)).unwrap()
}

/// The trajectory and parent a Dynamo row carries, in either schema.
fn identity(row: &Value) -> (Option<String>, Option<String>) {
    let event = &row["event"];
    let ctx = &event["agent_context"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    if event["schema"] == "dynamo.agent.trace.v1" {
        (
            text(&ctx["trajectory_id"]),
            text(&ctx["parent_trajectory_id"]),
        )
    } else {
        (text(&ctx["session_id"]), text(&ctx["parent_session_id"]))
    }
}

fn of_type<'a>(rows: &'a [Value], kind: &str, trajectory: &str) -> Vec<&'a Value> {
    rows.iter()
        .filter(|r| {
            r["event"]["event_type"] == kind && identity(r).0.as_deref() == Some(trajectory)
        })
        .collect()
}

fn local_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn same_kind(a: &Value, b: &Value) -> bool {
    (a.is_number() && b.is_number())
        || (a.is_string() && b.is_string())
        || (a.is_object() && b.is_object())
        || (a.is_array() && b.is_array())
        || (a.is_boolean() && b.is_boolean())
}

/// A row of worker's `--trace-file` against the row Dynamo wrote for the same request.
fn compare_request_rows(ours: &Value, theirs: &Value, version: &str) {
    assert!(
        ours["timestamp"].is_u64() && theirs["timestamp"].is_u64(),
        "envelope timestamps"
    );
    let (o, t) = (&ours["event"], &theirs["event"]);
    for key in [
        "event_type",
        "event_time_unix_ms",
        "event_source",
        "agent_context",
        "request",
    ] {
        assert!(
            same_kind(&o[key], &t[key]),
            "{version}: event.{key}: ours {} vs Dynamo {}",
            o[key],
            t[key]
        );
    }
    assert_eq!(o["event_type"], t["event_type"]);
    if version == "1.2.1" {
        assert_eq!(o["schema"], t["schema"]);
        assert_eq!(o["agent_context"], t["agent_context"], "the same four ids");
    } else {
        assert_eq!(t["schema"], "dynamo.request.trace.v1");
        assert_eq!(
            t["agent_context"]["session_id"],
            o["agent_context"]["trajectory_id"]
        );
        assert_eq!(
            t["agent_context"]["parent_session_id"],
            o["agent_context"]["parent_trajectory_id"]
        );
    }
    let (or, tr) = (&o["request"], &t["request"]);
    for key in [
        "request_id",
        "x_request_id",
        "model",
        "input_tokens",
        "output_tokens",
    ] {
        assert_eq!(or[key], tr[key], "{version}: request.{key}");
    }
    for (key, value) in or.as_object().unwrap() {
        if let Some(theirs) = tr.get(key) {
            assert!(
                same_kind(value, theirs),
                "{version}: request.{key}: {value} vs {theirs}"
            );
        }
    }
    // Both clocks are this machine's: the two measurements of one request agree closely.
    let (ours_start, theirs_start) = (
        or["request_received_ms"].as_f64().unwrap(),
        tr["request_received_ms"].as_f64().unwrap(),
    );
    assert!(
        (ours_start - theirs_start).abs() < 1000.0,
        "{version}: received {ours_start} vs {theirs_start}"
    );
}

fn direct_run(stack: &Stack, expected_protocol: &str) {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    let local = ws.path().join("direct-trace.jsonl");
    let trajectory = format!("direct-{version}");
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            "dynamo/default",
            "--max-tokens",
            "8",
            "--no-builtin-tools",
            "--trace-file",
            local.to_str().unwrap(),
        ],
        "hello world",
        &[
            ("DYNAMO_BASE_URL", &stack.url()),
            ("DYN_AGENT_SESSION_ID", "e2e-session"),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
            ("DYN_AGENT_PARENT_TRAJECTORY_ID", "orchestrator"),
        ],
    );
    // The mocker stops every response at max_tokens: a `length` failure, as documented.
    run.assert_code(1);
    assert_eq!(run.first("agent_end")["stopReason"], "length", "{version}");
    assert_eq!(
        run.first("fatal_error")["error"]["kind"],
        "length",
        "{version}"
    );
    assert!(
        run.all("auto_retry_start").is_empty(),
        "{version}: the protocol switch is not a failure"
    );
    assert_eq!(
        run.first("trace_summary")["resolvedProtocol"],
        expected_protocol,
        "{version}"
    );
    let message = &run.all("message_end")[1]["message"];
    assert_eq!(message["usage"]["output"], 8, "{version}");

    let ours = local_rows(&local);
    assert_eq!(
        ours.len(),
        1,
        "{version}: one request_end in worker's own trace"
    );
    let x_request_id = ours[0]["event"]["request"]["x_request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let rows = stack.rows_until(|rows| of_type(rows, "request_end", &trajectory).len() == 1);
    let theirs = of_type(&rows, "request_end", &trajectory);
    assert_eq!(
        theirs.len(),
        1,
        "{version}: one request row per model request:\n{rows:#?}"
    );
    assert_eq!(
        theirs[0]["event"]["request"]["x_request_id"],
        x_request_id.as_str()
    );
    assert_eq!(
        identity(theirs[0]),
        (Some(trajectory.clone()), Some("orchestrator".into()))
    );
    compare_request_rows(&ours[0], theirs[0], version);
}

fn tool_run(stack: &Stack, expected_protocol: &str) {
    let version = stack.version;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let trajectory = format!("tools-{version}");
    let worker = env!("CARGO_BIN_EXE_worker");
    let subagent = format!(
        "PI_SUBAGENT_CHILD=1 PI_SUBAGENT_RUN_ID=e2e PI_SUBAGENT_CHILD_AGENT=helper DYNAMO_BASE_URL={} {worker} run --model dynamo/default --max-tokens 4 --no-builtin-tools 'sub-task' < /dev/null > child.jsonl 2>&1; echo subagent-exit=$?",
        stack.url()
    );
    let bash_args = json!({"command": subagent}).to_string();
    let forwarder = MockLlm::start_forwarding(
        &stack.url(),
        vec![
            Reply::Sse(vec![
                role(),
                tool_call(0, "call-bash", "bash", &bash_args),
                tool_call(1, "call-read", "read", "{\"path\":\"a.txt\"}"),
                finish("tool_calls"),
                done(),
            ]),
            call("call-missing", "read", "{\"path\":\"missing.txt\"}"),
            answer("done"),
        ],
    );
    let run = run_worker(
        ws.path(),
        &[
            "--model",
            &format!("dynamo/{}", stack.model),
            "--max-tokens",
            "8",
        ],
        "use some tools",
        &[
            ("DYNAMO_BASE_URL", &forwarder.url),
            ("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", &stack.ingest()),
            ("DYN_AGENT_SESSION_ID", "e2e-session"),
            ("DYN_AGENT_TRAJECTORY_ID", &trajectory),
        ],
    );
    run.assert_code(0);
    assert_eq!(
        run.first("tool_execution_end")["result"]["content"][0]["text"],
        "subagent-exit=1",
        "{version}: the subagent ran (and hit length)"
    );
    let summary = run.first("trace_summary");
    assert_eq!(summary["resolvedProtocol"], expected_protocol, "{version}");
    assert_eq!(
        (
            summary["toolEventsSent"].as_u64(),
            summary["toolEventsDropped"].as_u64()
        ),
        (Some(6), Some(0)),
        "{version}"
    );

    let calls = ["call-bash", "call-read", "call-missing"];
    let rows = stack.rows_until(|rows| {
        of_type(rows, "request_end", &trajectory).len() == 3
            && calls.iter().all(|c| {
                rows.iter()
                    .filter(|r| r["event"]["tool"]["tool_call_id"] == *c)
                    .count()
                    == 2
            })
            && !of_type(rows, "request_end", "e2e:helper:0").is_empty()
    });
    let mut requests: Vec<u64> = of_type(&rows, "request_end", &trajectory)
        .iter()
        .map(|r| r["event"]["event_time_unix_ms"].as_u64().unwrap())
        .collect();
    requests.sort();
    assert_eq!(
        requests.len(),
        3,
        "{version}: three request rows\n{}",
        stack.logs()
    );
    for (turn, call_id, terminal, status) in [
        (0, "call-bash", "tool_end", "succeeded"),
        (0, "call-read", "tool_end", "succeeded"),
        (1, "call-missing", "tool_error", "error"),
    ] {
        let tool_rows: Vec<&Value> = rows
            .iter()
            .filter(|r| r["event"]["tool"]["tool_call_id"] == call_id)
            .collect();
        let kinds: Vec<&str> = tool_rows
            .iter()
            .map(|r| r["event"]["event_type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.len(), 2, "{version}: {call_id}: {kinds:?}");
        assert!(
            kinds.contains(&"tool_start") && kinds.contains(&terminal),
            "{version}: {call_id}: {kinds:?}"
        );
        for row in &tool_rows {
            assert_eq!(
                identity(row).0.as_deref(),
                Some(trajectory.as_str()),
                "{version}: joined to the requests by trajectory"
            );
            assert_eq!(row["event"]["event_source"], "harness");
            let started = row["event"]["tool"]["started_at_unix_ms"].as_u64().unwrap();
            assert!(
                started >= requests[turn],
                "{version}: {call_id} started at {started}, before its request ended at {}",
                requests[turn]
            );
        }
        let end = tool_rows
            .iter()
            .find(|r| r["event"]["event_type"] == terminal)
            .unwrap();
        assert_eq!(end["event"]["tool"]["status"], status);
        assert_eq!(
            end["event"]["tool"]["tool_class"],
            if call_id == "call-bash" {
                "bash"
            } else {
                "read"
            }
        );
    }
    // The subagent started from bash: its own trajectory, this run as its parent.
    let child = of_type(&rows, "request_end", "e2e:helper:0");
    assert_eq!(child.len(), 1, "{version}: the subagent's request row");
    assert_eq!(identity(child[0]).1.as_deref(), Some(trajectory.as_str()));
    if version == "1.2.1" {
        assert_eq!(
            child[0]["event"]["agent_context"]["session_id"], "e2e-session",
            "the session is shared down the tree"
        );
    }
}

fn exercise(version: &'static str, expected_protocol: &str) {
    let cache = cache();
    let stack = Stack::boot(&cache, version);
    direct_run(&stack, expected_protocol);
    tool_run(&stack, expected_protocol);
}

#[test]
#[ignore = "needs real Dynamo: scripts/dynamo-e2e.sh"]
fn dynamo_1_2_1_agent_trace() {
    exercise("1.2.1", "agent");
}

#[test]
#[ignore = "needs real Dynamo: scripts/dynamo-e2e.sh"]
fn dynamo_1_6_1_request_trace() {
    exercise("1.6.1", "request");
}
