//! `cargo bench --bench tee`: what the Dynamo tool-event tee costs.
//!
//! 1. Per event, in process: encoding a record to msgpack, and handing it to the relay.
//! 2. Per run: the release binary replays a 10-turn, 30-tool-call task three ways, runs
//!    interleaved so machine noise falls on all alike: tee off; tee on with a ZeroMQ PULL peer
//!    listening (in this process); tee on with nobody listening. Reported as ratios to "off".
//!
//! `BENCH_RUNS` (default 20) sets the runs per mode.

// A benchmark stops on any failure; unwrapping is how it says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use worker::dynamo::identity::AgentIdentity;
use worker::dynamo::records::{AgentTraceRecord, EventType, ToolEvent, ToolStatus, to_msgpack};
use worker::dynamo::relay::Relay;

fn per_event_costs(rt: &tokio::runtime::Runtime) {
    let identity = AgentIdentity {
        session_type_id: "worker".into(),
        session_id: "0199a213-81c0-7800-8aa1-bbab2a035a53".into(),
        trajectory_id: "0199a213-81c0-7800-8aa1-bbab2a035a53".into(),
        parent_trajectory_id: Some("run7:scout:0".into()),
    };
    let tool = ToolEvent {
        tool_call_id: "call_8f3a2c".into(),
        tool_class: "bash".into(),
        started_at_unix_ms: Some(1_795_343_920_177),
        ended_at_unix_ms: Some(1_795_343_920_219),
        status: Some(ToolStatus::Succeeded),
        duration_ms: Some(42.125),
        output_bytes: Some(1234),
        error_type: None,
        source_request_id: Some("0199a213-81c0-7800-8aa1-bbab2a035a53:r0:t3:a1".into()),
        consumer_request_id: Some("0199a213-81c0-7800-8aa1-bbab2a035a53:r0:t4:a1".into()),
        parent_request_id: None,
    };
    let n = 200_000;
    let started = Instant::now();
    let mut bytes = 0;
    for i in 0..n {
        let record =
            AgentTraceRecord::tool(EventType::ToolEnd, 1_795_343_920_219 + i, &identity, &tool);
        bytes += to_msgpack(&record).unwrap().len();
    }
    let encode = started.elapsed().as_nanos() as f64 / n as f64;

    // Enqueue into a relay whose peer is absent: the cost on the run's side of the queue.
    let _guard = rt.enter();
    let relay = Relay::start("tcp://127.0.0.1:9", "agent-tool-events", n as usize).unwrap();
    let payload = to_msgpack(&AgentTraceRecord::tool(
        EventType::ToolEnd,
        0,
        &identity,
        &tool,
    ))
    .unwrap();
    let started = Instant::now();
    for _ in 0..n {
        relay.publish(payload.clone());
    }
    let enqueue = started.elapsed().as_nanos() as f64 / n as f64;
    rt.block_on(relay.close(Duration::ZERO));
    println!("per tool event ({} bytes of msgpack):", bytes / n as usize);
    println!(
        "  {:<40} {:>8.0} ns",
        "encode (rmp_serde::to_vec_named)", encode
    );
    println!(
        "  {:<40} {:>8.0} ns",
        "enqueue (Relay::publish, never waits)", enqueue
    );
}

fn fixture(dir: &std::path::Path) -> String {
    let mut lines =
        vec![json!({"workerFixture": 1, "provider": "dynamo", "model": "m"}).to_string()];
    for turn in 0..10 {
        let calls = [
            ("ls", json!({})),
            ("read", json!({"path": "README.md"})),
            ("grep", json!({"pattern": "bench"})),
        ];
        let mut events: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("c{turn}-{i}"), "function": {"name": name, "arguments": args.to_string()}}]}}]})
            })
            .collect();
        events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
        events.push(json!("[DONE]"));
        lines.push(json!({"response": {"events": events}}).to_string());
    }
    lines.push(json!({"response": {"events": [{"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}, "[DONE]"]}}).to_string());
    let path = dir.join("fixture.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    std::fs::write(dir.join("README.md"), "# bench\n").unwrap();
    format!("replay/{}", path.display())
}

fn run(worker: &str, dir: &std::path::Path, model: &str, endpoint: Option<&str>) -> Duration {
    let mut cmd = Command::new(worker);
    cmd.args(["run", "--model", model, "--no-context-files"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(endpoint) = endpoint {
        cmd.env("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", endpoint);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(b"look around");
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "the replayed run failed");
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    per_event_costs(&rt);

    // A PULL peer that drains everything, on a runtime thread of this process.
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = received.clone();
    let peer = rt.block_on(async {
        use zeromq::Socket;
        let mut socket = zeromq::PullSocket::new();
        let endpoint = socket.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        (socket, endpoint)
    });
    let (mut socket, peer_endpoint) = peer;
    rt.spawn(async move {
        use zeromq::SocketRecv;
        while socket.recv().await.is_ok() {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let no_peer = format!("tcp://{}", free.local_addr().unwrap());
    drop(free);

    let worker = env!("CARGO_BIN_EXE_worker");
    let dir = tempfile::tempdir().unwrap();
    let model = fixture(dir.path());
    for _ in 0..3 {
        run(worker, dir.path(), &model, None);
    }
    let (mut off, mut with_peer, mut without_peer) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        off.push(run(worker, dir.path(), &model, None));
        with_peer.push(run(worker, dir.path(), &model, Some(&peer_endpoint)));
        without_peer.push(run(worker, dir.path(), &model, Some(&no_peer)));
    }
    let (off, with_peer, without_peer) = (median(off), median(with_peer), median(without_peer));
    println!("\nreplayed 10-turn run with 30 tool calls (60 events), median of {runs}:");
    println!("  {:<28} {:>8.2} ms   1.000x", "tee off", off);
    println!(
        "  {:<28} {:>8.2} ms   {:.3}x",
        "tee on, peer listening",
        with_peer,
        with_peer / off
    );
    println!(
        "  {:<28} {:>8.2} ms   {:.3}x",
        "tee on, no peer",
        without_peer,
        without_peer / off
    );
    println!(
        "  events received by the peer: {}",
        received.load(std::sync::atomic::Ordering::Relaxed)
    );
}
