//! The Dynamo trace bridge through the real binary: identity on requests in both protocol
//! generations, the automatic switch, tool events received by a real ZeroMQ PULL socket,
//! the local trace file, and a root → child → grandchild subagent chain.

use std::time::{Duration, Instant};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};
use serde_json::{Value, json};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    dir
}

fn dynamo(dir: &std::path::Path, url: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--model", "dynamo/m", "--retry-base-delay", "10ms"];
    all.extend_from_slice(args);
    let mut env = env.to_vec();
    env.push(("DYNAMO_BASE_URL", url));
    run_worker(dir, &all, "q", &env)
}

const AGENT_CONTEXT_400: &str = r#"{"message":"Failed to deserialize the JSON body into the target type: nvext: unknown field `agent_context`, expected one of `greed_sampling`, `use_raw_prompt`","type":"Bad Request","code":400}"#;

#[test]
fn auto_switches_to_headers_on_a_400_naming_agent_context_without_a_retry() {
    let dir = workspace();
    let mock = MockLlm::start(vec![
        status(400, AGENT_CONTEXT_400),
        call("c1", "ls", "{}"),
        answer("done"),
    ]);
    let run = dynamo(dir.path(), &mock.url, &["--max-retries", "0"], &[]);
    run.assert_code(0);
    assert!(
        run.all("auto_retry_start").is_empty(),
        "a protocol switch is not a retry"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].body["nvext"]["agent_context"].is_object());
    assert_eq!(
        requests[0].body,
        {
            let mut resent = requests[1].body.clone();
            resent["nvext"] = requests[0].body["nvext"].clone();
            resent
        },
        "the same request is sent again"
    );
    for later in &requests[1..] {
        assert!(
            later.body["nvext"].get("agent_context").is_none(),
            "no body identity after the switch"
        );
        assert!(later.headers.contains_key("x-dynamo-session-id"));
    }
    let status = run.first("trace_status");
    assert_eq!(status["protocol"], "auto");
    assert!(status.get("resolvedProtocol").is_none());
    let summary = run.first("trace_summary");
    assert_eq!(summary["resolvedProtocol"], "request");
    assert_eq!(summary["llmRequests"], 3);
    assert_eq!(run.stats()["llmRequests"], 3);
    assert_eq!(
        run.stats()["tokens"]["output"],
        10,
        "usage of the two answered requests only"
    );
}

#[test]
fn auto_resolves_to_agent_when_the_body_identity_is_accepted() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let run = dynamo(dir.path(), &mock.url, &[], &[]);
    run.assert_code(0);
    assert_eq!(run.first("trace_summary")["resolvedProtocol"], "agent");
}

#[test]
fn fixed_protocols_send_only_their_own_form() {
    let dir = workspace();
    let env = [
        ("DYN_AGENT_SESSION_TYPE_ID", "ci-bot"),
        ("DYN_AGENT_SESSION_ID", "sess-1"),
        ("DYN_AGENT_TRAJECTORY_ID", "traj-1"),
        ("DYN_AGENT_PARENT_TRAJECTORY_ID", "traj-0"),
    ];
    let mock = MockLlm::start(vec![answer("a"), answer("b"), answer("c")]);
    dynamo(
        dir.path(),
        &mock.url,
        &["--dynamo-trace-protocol", "agent"],
        &env,
    )
    .assert_code(0);
    let run = dynamo(
        dir.path(),
        &mock.url,
        &[],
        &[("DYN_AGENT_TRACE_PROTOCOL", "request"), env[2], env[3]],
    );
    run.assert_code(0);
    dynamo(
        dir.path(),
        &mock.url,
        &["--dynamo-trace-protocol", "off"],
        &env,
    )
    .assert_code(0);
    let requests = mock.requests();
    assert_eq!(
        requests[0].body["nvext"]["agent_context"],
        json!({"session_type_id": "ci-bot", "session_id": "sess-1", "trajectory_id": "traj-1", "parent_trajectory_id": "traj-0"})
    );
    assert!(!requests[0].headers.contains_key("x-dynamo-session-id"));
    assert!(requests[1].body["nvext"].get("agent_context").is_none());
    assert_eq!(requests[1].headers["x-dynamo-session-id"], "traj-1");
    assert_eq!(requests[1].headers["x-dynamo-parent-session-id"], "traj-0");
    assert_eq!(run.first("trace_status")["resolvedProtocol"], "request");
    assert!(requests[2].body["nvext"].get("agent_context").is_none());
    assert!(!requests[2].headers.contains_key("x-dynamo-session-id"));
}

#[test]
fn a_subagent_child_is_rewritten_by_the_bridge() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let env = [
        ("PI_SUBAGENT_CHILD", "1"),
        ("DYN_AGENT_TRAJECTORY_ID", "parent-traj"),
        ("PI_SUBAGENT_RUN_ID", "run9"),
        ("PI_SUBAGENT_CHILD_AGENT", "scout"),
        ("PI_SUBAGENT_CHILD_INDEX", "2"),
    ];
    let run = dynamo(
        dir.path(),
        &mock.url,
        &["--dynamo-trace-protocol", "agent"],
        &env,
    );
    run.assert_code(0);
    let status = run.first("trace_status");
    assert_eq!(status["subagentBridge"], true);
    assert_eq!(
        status["agentContext"],
        json!({"session_type_id": "worker", "session_id": "run9:scout:2", "trajectory_id": "run9:scout:2", "parent_trajectory_id": "parent-traj"})
    );
    assert_eq!(
        mock.requests()[0].body["nvext"]["agent_context"],
        status["agentContext"]
    );
}

#[test]
fn the_openai_provider_gets_no_identity_and_no_trace_lines() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let run = run_worker(
        dir.path(),
        &["--model", "openai/m"],
        "q",
        &[("OPENAI_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert!(
        mock.requests()[0].body["nvext"]
            .get("agent_context")
            .is_none()
    );
    assert!(
        !mock.requests()[0]
            .headers
            .contains_key("x-dynamo-session-id")
    );
    assert!(!run.types().contains(&"trace_status".to_string()));
}

/// A reply in a run whose tool events a test counts, held back so that the tee has connected
/// before the tools run. The run's end waits (within its linger) for a connection under way,
/// but events published after a connection attempt timed out are dropped (and counted),
/// which a debug build on a loaded machine could otherwise see here.
fn delivery_time(reply: Reply) -> Reply {
    delayed(Duration::from_millis(500), reply)
}

/// A real PULL socket, collecting messages in the background.
pub(crate) struct Pull {
    pub(crate) endpoint: String,
    messages: std::sync::Arc<std::sync::Mutex<Vec<Vec<Vec<u8>>>>>,
}

impl Pull {
    /// Bound on 127.0.0.1.
    pub(crate) fn bind() -> Pull {
        Pull::bind_at("tcp://127.0.0.1:0")
    }

    fn bind_at(spec: &str) -> Pull {
        let spec = spec.to_string();
        use zeromq::{Socket, SocketRecv};
        let messages: std::sync::Arc<std::sync::Mutex<Vec<Vec<Vec<u8>>>>> =
            std::sync::Arc::default();
        let sink = messages.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut socket = zeromq::PullSocket::new();
                let endpoint = socket.bind(&spec).await.unwrap();
                tx.send(endpoint.to_string()).unwrap();
                while let Ok(message) = socket.recv().await {
                    let frames = message.into_vec().into_iter().map(|b| b.to_vec()).collect();
                    sink.lock().unwrap().push(frames);
                }
            });
        });
        Pull {
            endpoint: rx.recv().unwrap(),
            messages,
        }
    }

    /// Waits until `count` messages arrived (or 5 s passed).
    pub(crate) fn wait_for(&self, count: usize) -> Vec<Vec<Vec<u8>>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.messages.lock().unwrap().len() < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.messages.lock().unwrap().clone()
    }
}

pub(crate) fn decode(frames: &[Vec<u8>]) -> (String, u64, Value) {
    assert_eq!(frames.len(), 3, "topic, sequence, record");
    let topic = String::from_utf8(frames[0].clone()).unwrap();
    let sequence = u64::from_be_bytes(frames[1].as_slice().try_into().unwrap());
    // Named keys: msgpack maps decode into a JSON object.
    assert_eq!(frames[2][0] & 0xf0, 0x80, "a msgpack map");
    (topic, sequence, rmp_serde::from_slice(&frames[2]).unwrap())
}

#[test]
fn tool_events_reach_a_pull_socket_over_ipc() {
    let dir = workspace();
    let socket = dir.path().join("ingest.sock");
    let pull = Pull::bind_at(&format!("ipc://{}", socket.display()));
    let mock = MockLlm::start(vec![
        delivery_time(call("c-ls", "ls", "{}")),
        delivery_time(answer("done")),
    ]);
    let env = [("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", pull.endpoint.as_str())];
    let run = dynamo(dir.path(), &mock.url, &[], &env);
    run.assert_code(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let summary = run.first("trace_summary");
    assert_eq!(summary["toolEventsSent"], 2, "{summary}");
    assert_eq!(summary["toolEventsDropped"], 0);
    assert_eq!(summary["toolEventsUnconfirmed"], 0);
    assert!(summary.get("toolEventsError").is_none(), "{summary}");
    let kinds: Vec<Value> = pull
        .wait_for(2)
        .iter()
        .map(|m| decode(m).2["event_type"].clone())
        .collect();
    assert_eq!(kinds, [json!("tool_start"), json!("tool_end")]);
}

#[test]
fn tool_events_reach_a_real_pull_socket_as_v1_records() {
    let dir = workspace();
    let pull = Pull::bind();
    let mock = MockLlm::start(vec![
        delivery_time(Reply::Sse(vec![
            role(),
            tool_call(0, "c-read", "read", "{\"path\":\"a.txt\"}"),
            tool_call(1, "c-miss", "read", "{\"path\":\"nope\"}"),
            finish("tool_calls"),
            done(),
        ])),
        delivery_time(answer("done")),
    ]);
    let env = [
        ("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", pull.endpoint.as_str()),
        ("DYN_AGENT_TRAJECTORY_ID", "traj-z"),
    ];
    let run = dynamo(dir.path(), &mock.url, &[], &env);
    run.assert_code(0);
    let status = run.first("trace_status");
    assert_eq!(
        status["toolEvents"],
        json!({"endpoint": pull.endpoint, "topic": "agent-tool-events", "queueCapacity": 10000})
    );
    assert_eq!(run.tool_event_counts(), (Some(4), Some(0), Some(0)));

    let messages = pull.wait_for(4);
    let decoded: Vec<(String, u64, Value)> = messages.iter().map(|m| decode(m)).collect();
    assert_eq!(
        decoded.iter().map(|d| d.1).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(decoded.iter().all(|d| d.0 == "agent-tool-events"));
    let records: Vec<&Value> = decoded.iter().map(|d| &d.2).collect();
    let ctx =
        json!({"session_type_id": "worker", "session_id": "traj-z", "trajectory_id": "traj-z"});
    for record in &records {
        assert_eq!(record["schema"], "dynamo.agent.trace.v1");
        assert_eq!(record["event_source"], "harness");
        assert_eq!(record["agent_context"], ctx);
        assert!(record.get("request").is_none());
    }
    let starts: Vec<&&Value> = records
        .iter()
        .filter(|r| r["event_type"] == "tool_start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0]["tool"]["status"], "running");
    let end = records
        .iter()
        .find(|r| r["event_type"] == "tool_end")
        .unwrap();
    assert_eq!(end["tool"]["tool_call_id"], "c-read");
    assert_eq!(end["tool"]["tool_class"], "read");
    assert_eq!(end["tool"]["status"], "succeeded");
    assert_eq!(end["tool"]["output_bytes"], 5);
    assert!(end["tool"]["duration_ms"].is_f64());
    let t = &end["tool"];
    assert!(t["ended_at_unix_ms"].as_u64() >= t["started_at_unix_ms"].as_u64());
    let error = records
        .iter()
        .find(|r| r["event_type"] == "tool_error")
        .unwrap();
    assert_eq!(error["tool"]["tool_call_id"], "c-miss");
    assert_eq!(error["tool"]["status"], "error");
    assert_eq!(error["tool"]["error_type"], "tool_error");
}

#[test]
fn after_a_switch_tool_events_use_the_flat_request_trace_shape() {
    let dir = workspace();
    let pull = Pull::bind();
    let mock = MockLlm::start(vec![
        status(400, AGENT_CONTEXT_400),
        delivery_time(call("c1", "ls", "{}")),
        delivery_time(answer("done")),
    ]);
    let env = [
        (
            "DYN_AGENT_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT",
            pull.endpoint.as_str(),
        ),
        ("DYN_AGENT_TOOL_EVENTS_ZMQ_TOPIC", "my-topic"),
        ("DYN_AGENT_TRAJECTORY_ID", "traj-r"),
        ("DYN_AGENT_PARENT_TRAJECTORY_ID", "traj-p"),
    ];
    dynamo(dir.path(), &mock.url, &[], &env).assert_code(0);
    let decoded: Vec<(String, u64, Value)> = pull.wait_for(2).iter().map(|m| decode(m)).collect();
    assert_eq!(decoded.len(), 2);
    assert_eq!(decoded[0].0, "my-topic");
    let start = &decoded[0].2;
    assert_eq!(
        start
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            "schema",
            "event_type",
            "event_time_unix_ms",
            "session_id",
            "parent_session_id",
            "tool"
        ]
    );
    assert_eq!(start["schema"], "dynamo.request.trace.v1");
    assert_eq!(start["session_id"], "traj-r");
    assert_eq!(start["parent_session_id"], "traj-p");
    assert_eq!(decoded[1].2["event_type"], "tool_end");
}

#[test]
fn a_replayed_run_delivers_every_event_to_a_listening_peer() {
    // A replayed run has no model to wait for: it ends about as soon as the tee's handshake
    // does, and used to end before it in about a third of runs, dropping every event.
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/quickstart/model.jsonl");
    let workspace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/quickstart/workspace");
    let model = format!("replay/{}", fixture.display());
    let pull = Pull::bind();
    let runs = 8;
    for attempt in 0..runs {
        let run = run_worker(
            &workspace,
            &["--model", &model, "--no-session"],
            "List the files here and read the README.",
            &[("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", pull.endpoint.as_str())],
        );
        run.assert_code(0);
        let summary = run.first("trace_summary");
        assert_eq!(
            run.tool_event_counts(),
            (Some(4), Some(0), Some(0)),
            "run {attempt}: {summary}"
        );
    }
    assert_eq!(pull.wait_for(4 * runs).len(), 4 * runs);
}

#[test]
fn with_no_peer_the_run_is_not_slowed_and_drops_are_counted() {
    let dir = workspace();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", free.local_addr().unwrap());
    drop(free);
    let mock = MockLlm::start(vec![
        call("c1", "ls", "{}"),
        call("c2", "ls", "{}"),
        answer("done"),
    ]);
    let started = Instant::now();
    let run = dynamo(
        dir.path(),
        &mock.url,
        &[],
        &[("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", &endpoint)],
    );
    run.assert_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.tool_event_counts(), (Some(0), Some(4), Some(0)));
}

#[test]
fn an_invalid_endpoint_is_a_warning_not_a_failure() {
    let dir = workspace();
    let mock = MockLlm::start(vec![answer("hi")]);
    let run = dynamo(
        dir.path(),
        &mock.url,
        &[],
        &[("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", "localhost:20390")],
    );
    run.assert_code(0);
    assert_eq!(
        run.stderr,
        "worker: tool events disabled: 'localhost:20390' is not a ZeroMQ endpoint (e.g. tcp://127.0.0.1:20390)\n"
    );
    assert_eq!(run.first("trace_status")["toolEvents"], Value::Null);
}

mod trace_file;
