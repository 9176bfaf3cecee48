//! `cargo bench -- tee`: what the Dynamo tool-event tee costs.
//!
//! 1. Per event, in process: encoding a record to msgpack, and handing it to the relay.
//! 2. Per run: the release binary replays a 10-turn, 30-tool-call task (no session file) four
//!    ways, one of each per round in a rotated order so machine noise falls on all alike: tee
//!    off; tee on with a ZeroMQ PULL peer listening (in this process); tee on with nobody
//!    listening; tee off again (two identical runs' ratio: the resolution of the others).
//!    Reported as the median of the per-round ratios to "off", for wall time and for CPU
//!    time (user plus system, from `wait4` in a launcher process), beside the targets.
//!
//! `BENCH_RUNS` (default 100) sets the rounds.

use std::time::{Duration, Instant};

use crate::launcher;
use crate::runs;

use launcher::{Cmd, Launcher, Sample};

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

/// The replayed run in `dir`, teeing to `endpoint` when given.
fn run(launcher: &Launcher, dir: &std::path::Path, model: &str, endpoint: Option<&str>) -> Sample {
    let mut cmd = Cmd::new(env!("CARGO_BIN_EXE_worker"))
        .args([
            "run",
            "--model",
            model,
            "--no-context-files",
            "--no-session",
        ])
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .cwd(dir)
        .stdin("look around");
    if let Some(endpoint) = endpoint {
        cmd = cmd.env("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", endpoint);
    }
    let sample = launcher.run(&cmd);
    assert_eq!(sample.code, 0, "the replayed run failed");
    sample
}

/// A way to run: its label, the tee endpoint, and the targets (wall, CPU) of its ratios.
type Mode<'a> = (&'a str, Option<&'a str>, Option<(f64, f64)>);

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

pub(crate) fn main() {
    // First, while this process is small: the launcher's children inherit nothing of it.
    let launcher = Launcher::start();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
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

    let dir = tempfile::tempdir().unwrap();
    let model = fixture(dir.path());
    for _ in 0..3 {
        run(&launcher, dir.path(), &model, None);
    }
    let modes: [Mode; 4] = [
        ("tee off", None, None),
        (
            "tee on, peer listening",
            Some(&peer_endpoint),
            Some((1.02, 1.05)),
        ),
        ("tee on, no peer", Some(&no_peer), None),
        // "tee off" once more: what two identical runs read, the resolution of the others.
        ("tee off again", None, None),
    ];
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); modes.len()];
    for round in 0..runs {
        for mode in runs::rotated(modes.len(), round) {
            samples[mode].push(run(&launcher, dir.path(), &model, modes[mode].1));
        }
    }
    let ratio = |mode: usize, of: fn(&Sample) -> Duration| {
        runs::median(
            samples[mode]
                .iter()
                .zip(&samples[0])
                .map(|(run, off)| ms(of(run)) / ms(of(off)))
                .collect(),
        )
    };
    let wall = |sample: &Sample| sample.wall;
    let cpu = |sample: &Sample| sample.cpu();
    println!(
        "\nreplayed 10-turn run with 30 tool calls (60 events), {runs} rounds; medians, and the median of per-round ratios to \"tee off\" [target]:"
    );
    for (mode, (label, _, target)) in modes.iter().enumerate() {
        let median_of = |of: fn(&Sample) -> Duration| {
            runs::median(samples[mode].iter().map(|s| ms(of(s))).collect())
        };
        let shown = |value: f64, limit: Option<f64>, below: bool| match limit {
            Some(limit) if below => format!("{value:.3}x [< {limit}x]"),
            Some(limit) => format!("{value:.3}x [<= {limit}x]"),
            None => format!("{value:.3}x"),
        };
        println!(
            "  {:<24} wall {:>6.2} ms {:<18} CPU {:>6.2} ms {}",
            label,
            median_of(wall),
            shown(ratio(mode, wall), target.map(|t| t.0), true),
            median_of(cpu),
            shown(ratio(mode, cpu), target.map(|t| t.1), false),
        );
    }
    // Every run with the peer delivers its 60 events; the peer may still be reading the last.
    let expected = 60 * runs as u64;
    let waited = Instant::now();
    let count = || received.load(std::sync::atomic::Ordering::Relaxed);
    while count() < expected && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("  events received by the peer: {} of {expected}", count());
    assert_eq!(count(), expected, "the peer missed events");
}
