//! `cargo bench -- tee`: what the Dynamo tool-event tee costs.
//!
//! 1. Per event, in process: encoding a record to msgpack, and handing it to the relay.
//! 2. Per run: the release binary replays a 10-turn, 30-tool-call task (no session file) four
//!    ways, one of each per round in a rotated order so machine noise falls on all alike: tee
//!    off; tee on with a ZeroMQ PULL peer listening (in this process); tee on with nobody
//!    listening; tee off again (two identical runs' ratio: the resolution of the others).
//!    Reported as the median of the per-round ratios to "off", for wall time and for CPU
//!    time (user plus system, from `wait4` in a launcher process), beside the targets. Every
//!    event of every run with the peer must arrive.
//! 3. The peer row's floor: once a round, the same TCP conversation with a peer (connect, ZMTP
//!    handshake, a run's 60 events in one write, close) made directly from this process, as a
//!    ratio to "off". No tee can cost a run less than its socket's conversation.
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

/// The least a run that tees to a listening peer can pay for it: one ZMTP conversation over
/// loopback, made directly from this process with a blocking socket. It connects, exchanges
/// ZMTP 3.0 greetings and READY commands (NULL mechanism) with `peer`, writes `batch` in one
/// write, and closes: what the tee's socket does in a short run, with none of the tee's own
/// work. Returns how long that took.
fn conversation(peer: std::net::SocketAddr, batch: &[u8]) -> Duration {
    use std::io::{Read, Write};
    let started = Instant::now();
    let mut stream = std::net::TcpStream::connect(peer).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut greeting = [0u8; 64];
    greeting[0] = 0xff;
    greeting[9] = 0x7f;
    greeting[10] = 3;
    greeting[12..16].copy_from_slice(b"NULL");
    stream.write_all(&greeting).unwrap();
    stream.read_exact(&mut greeting).unwrap();
    let mut ready = vec![0x04, 26, 5];
    ready.extend_from_slice(b"READY");
    ready.push(11);
    ready.extend_from_slice(b"Socket-Type");
    ready.extend_from_slice(&4u32.to_be_bytes());
    ready.extend_from_slice(b"PUSH");
    stream.write_all(&ready).unwrap();
    let mut header = [0u8; 2];
    stream.read_exact(&mut header).unwrap();
    let mut command = vec![0u8; usize::from(header[1])];
    stream.read_exact(&mut command).unwrap();
    stream.write_all(batch).unwrap();
    drop(stream);
    started.elapsed()
}

/// `count` three-frame messages (topic, sequence, a `payload`-byte record) as ZMTP frames.
fn batch(count: u64, payload: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for sequence in 0..count {
        let record = vec![0x80; payload];
        for (more, body) in [
            (true, &b"agent-tool-events"[..]),
            (true, &sequence.to_be_bytes()[..]),
            (false, &record[..]),
        ] {
            let flags = u8::from(more);
            match u8::try_from(body.len()) {
                Ok(short) => bytes.extend_from_slice(&[flags, short]),
                Err(_) => {
                    bytes.push(flags | 0x02);
                    bytes.extend_from_slice(&(body.len() as u64).to_be_bytes());
                }
            }
            bytes.extend_from_slice(body);
        }
    }
    bytes
}

/// A PULL peer bound on loopback that drains everything on a runtime thread of this process,
/// calling `seen` with each message. Returns its endpoint.
fn pull_peer(
    rt: &tokio::runtime::Runtime,
    mut seen: impl FnMut(&zeromq::ZmqMessage) + Send + 'static,
) -> String {
    use zeromq::{Socket, SocketRecv};
    let (mut socket, endpoint) = rt.block_on(async {
        let mut socket = zeromq::PullSocket::new();
        let endpoint = socket.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
        (socket, endpoint)
    });
    rt.spawn(async move {
        while let Ok(message) = socket.recv().await {
            seen(&message);
        }
    });
    endpoint
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

    // A PULL peer that counts the events and the bytes of their records.
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let record_bytes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (counter, record_counter) = (received.clone(), record_bytes.clone());
    let peer_endpoint = pull_peer(&rt, move |message| {
        let record = message.get(2).map_or(0, bytes::Bytes::len);
        record_counter.fetch_add(record as u64, std::sync::atomic::Ordering::Relaxed);
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    // A second peer, for the conversations that measure the floor.
    let floor_address: std::net::SocketAddr = pull_peer(&rt, |_| {})
        .trim_start_matches("tcp://")
        .parse()
        .unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let no_peer = format!("tcp://{}", free.local_addr().unwrap());
    drop(free);

    let dir = tempfile::tempdir().unwrap();
    let model = fixture(dir.path());
    for _ in 0..3 {
        run(&launcher, dir.path(), &model, None);
    }
    // One run with the peer, for the size of the records a run sends: the floor's batch is
    // as large as a run's.
    run(&launcher, dir.path(), &model, Some(&peer_endpoint));
    let delivered = |count: u64| {
        let waited = Instant::now();
        while received.load(std::sync::atomic::Ordering::Relaxed) < count
            && waited.elapsed() < Duration::from_secs(2)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        received.load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(delivered(60), 60, "the peer missed events");
    let record = record_bytes.load(std::sync::atomic::Ordering::Relaxed) / 60;
    let floor_batch = batch(60, record as usize);
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
    let mut floor = Vec::new();
    for round in 0..runs {
        for mode in runs::rotated(modes.len(), round) {
            samples[mode].push(run(&launcher, dir.path(), &model, modes[mode].1));
        }
        floor.push(ms(conversation(floor_address, &floor_batch)));
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
    let floor = runs::median(floor);
    let off = runs::median(samples[0].iter().map(|s| ms(s.wall)).collect());
    println!(
        "  the peer row's floor on this machine: the same conversation made directly (connect, \
         ZMTP handshake, the 60 events in one write, close) takes {floor:.2} ms (median), so a \
         run with a listening peer is at least {:.3}x",
        1.0 + floor / off
    );
    // Every run with the peer delivers its 60 events; the peer may still be reading the last.
    let expected = 60 * (runs as u64 + 1);
    let count = delivered(expected);
    println!("  events received by the peer: {count} of {expected} ({record}-byte records)");
    assert_eq!(count, expected, "the peer missed events");
}
