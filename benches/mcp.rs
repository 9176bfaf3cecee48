//! `cargo bench -- mcp`: what MCP servers cost a run, against the same run without them
//! in the same process, rounds alternating so noise falls on every variant alike.
//!
//! - Time to the first model request (from spawning worker to the scripted server receiving
//!   it) with no MCP configuration, with 1 and 5 optional stdio servers (which must not delay
//!   it), and with 1 and 5 required ones (which it waits for: their start is the cost).
//! - Per call: a run of 20 calls to an MCP server's `echo` against 20 calls to the built-in
//!   `ls`, each call timed from the request that asked for it to the request that carried its
//!   result back.
//!
//! The servers are the fault server of the end-to-end tests on the Python MCP SDK
//! (`scripts/mcp-install.sh`; the cache is `WORKER_MCP_E2E`, default
//! `~/.cache/worker-mcp-e2e`). `BENCH_RUNS` sets the rounds (default 10).

use crate::mock_llm;
use crate::runs;
// Only the wall time: the peak RSS wait4 reports counts what worker's servers used.
use crate::wait;

use std::path::{Path, PathBuf};
use std::time::Duration;

use mock_llm::*;
use runs::{median, worker};
use serde_json::json;
use wait::measure;

/// Calls per run in the per-call comparison.
const CALLS: usize = 20;

fn spread(values: &[f64]) -> (f64, f64) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// The Python that runs the fault server.
fn python() -> PathBuf {
    let cache = std::env::var_os("WORKER_MCP_E2E")
        .or_else(|| std::env::var_os("WORKER_MCP_CACHE"))
        .map_or_else(
            || PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/worker-mcp-e2e"),
            PathBuf::from,
        );
    let python = cache.join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/mcp-install.sh first",
        python.display()
    );
    python
}

/// A configuration of `servers` fault servers, required or not.
fn config(dir: &Path, servers: usize, required: bool) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fault_server.py");
    let python = python();
    let server = json!({"command": python, "args": [script], "required": required});
    write_config(
        dir,
        &format!("mcp-{servers}-{required}.json"),
        servers,
        &server,
    )
}

/// A configuration of `servers` copies of `server`.
fn write_config(dir: &Path, name: &str, servers: usize, server: &serde_json::Value) -> PathBuf {
    let entries: serde_json::Map<String, serde_json::Value> = (0..servers)
        .map(|index| (format!("s{index}"), server.clone()))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, json!({"mcpServers": entries}).to_string()).unwrap();
    path
}

/// Milliseconds from spawning worker to its first model request.
fn first_request_ms(cwd: &Path, config: Option<&Path>) -> f64 {
    let mock = MockLlm::start(vec![answer("done")]);
    let mut args = Vec::new();
    if let Some(config) = config {
        args.extend(["--mcp-config", config.to_str().unwrap()]);
    }
    let (_, code, started) = measure(worker(&mock.url, cwd, &args), b"hello");
    assert_eq!(code, 0, "the run failed");
    let requests = mock.requests();
    (requests[0].at - started).as_secs_f64() * 1000.0
}

/// The median milliseconds of one call to `tool` with `args`, over a run of [`CALLS`] calls,
/// and the whole run's.
fn per_call_ms(cwd: &Path, config: &Path, tool: &str, args: &serde_json::Value) -> (f64, f64) {
    let mut replies: Vec<Reply> = (0..CALLS)
        .map(|index| call(&format!("c{index}"), tool, &args.to_string()))
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let (sample, code, _) = measure(
        worker(&mock.url, cwd, &["--mcp-config", config.to_str().unwrap()]),
        b"call it",
    );
    assert_eq!(code, 0, "the run failed");
    let requests = mock.requests();
    assert_eq!(requests.len(), CALLS + 1);
    let call = median(
        requests
            .windows(2)
            .map(|pair| (pair[1].at - pair[0].at).as_secs_f64() * 1000.0)
            .collect(),
    );
    (call, sample.wall.as_secs_f64() * 1000.0)
}

pub(crate) fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join("a.txt"), "a").unwrap();
    let variants: Vec<(&str, Option<PathBuf>)> = vec![
        ("no MCP", None),
        (
            "1 optional stdio server",
            Some(config(dir.path(), 1, false)),
        ),
        (
            "5 optional stdio servers",
            Some(config(dir.path(), 5, false)),
        ),
        (
            "5 optional, silent (sleep)",
            Some(write_config(
                dir.path(),
                "sleepers.json",
                5,
                &json!({"command": "sleep", "args": ["30"]}),
            )),
        ),
        ("1 required stdio server", Some(config(dir.path(), 1, true))),
        (
            "5 required stdio servers",
            Some(config(dir.path(), 5, true)),
        ),
    ];
    let mut first: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let required = config(dir.path(), 1, true);
    let (mut mcp_calls, mut builtin_calls) = (Vec::new(), Vec::new());
    let (mut mcp_runs, mut builtin_runs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (index, (_, config)) in variants.iter().enumerate() {
            first[index].push(first_request_ms(&cwd, config.as_deref()));
        }
        let (call, run) = per_call_ms(&cwd, &required, "mcp__s0__echo", &json!({"text": "hello"}));
        mcp_calls.push(call);
        mcp_runs.push(run);
        let (call, run) = per_call_ms(&cwd, &required, "ls", &json!({}));
        builtin_calls.push(call);
        builtin_runs.push(run);
        // Let the servers of the last run finish exiting before the next round.
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("MCP benchmark: {runs} rounds, medians (min-max)");
    println!(
        "{:<30} {:>24} {:>10}",
        "time to first model request", "ms", "ratio"
    );
    let base = median(first[0].clone());
    for ((label, _), samples) in variants.iter().zip(&first) {
        let (min, max) = spread(samples);
        let value = median(samples.clone());
        println!(
            "{label:<30} {:>9.2} ({min:>5.1}-{max:>6.1}) {:>9.2}x",
            value,
            value / base
        );
    }
    let (mcp, builtin) = (median(mcp_calls.clone()), median(builtin_calls.clone()));
    println!(
        "{:<30} {:>24} {:>10} {:>16}",
        "one call", "ms", "ratio", "run of 20 calls"
    );
    println!(
        "{:<30} {:>9.3} ({:>5.2}-{:>6.2}) {:>10} {:>14.1}ms",
        "built-in ls",
        builtin,
        spread(&builtin_calls).0,
        spread(&builtin_calls).1,
        "",
        median(builtin_runs)
    );
    println!(
        "{:<30} {:>9.3} ({:>5.2}-{:>6.2}) {:>9.2}x {:>14.1}ms",
        "MCP echo (stdio, Python SDK)",
        mcp,
        spread(&mcp_calls).0,
        spread(&mcp_calls).1,
        mcp / builtin,
        median(mcp_runs)
    );
}
