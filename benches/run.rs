//! `cargo bench --bench run`: the release binary on a scripted 3-turn task against the
//! in-process mock server (ls, read, answer), plus `--version`.
//!
//! Reports wall time per run, time from exec to the first model request, and peak RSS, each
//! next to a baseline measured in the same process (`/bin/true`: the cost of exec and wait on
//! this machine right now), so figures from a loaded machine can still be compared.
//! `BENCH_RUNS` sets the number of runs (default 30).

#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_llm::*;

struct Sample {
    wall: Duration,
    first_request: Option<Duration>,
    max_rss_kib: i64,
}

/// Spawns and waits with wait4, which also reports the child's peak RSS.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std cannot see
fn measure(mut cmd: Command, stdin: &[u8]) -> (Sample, i32, Instant) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain FFI; `rusage` is a zeroed POD the kernel fills, and `pid` is our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        Sample {
            wall,
            first_request: None,
            max_rss_kib: usage.ru_maxrss,
        },
        code,
        started,
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let worker = env!("CARGO_BIN_EXE_worker");
    let workspace = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        workspace.path().join("README.md"),
        "# bench\n\nA two-line toy README.\n",
    )
    .unwrap();
    std::fs::create_dir(workspace.path().join("src")).unwrap();
    std::fs::write(workspace.path().join("src/main.rs"), "fn main() {}\n").unwrap();

    let mock = MockLlm::start_cycling(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "ls", "{}"),
            finish("tool_calls"),
            usage(600, 10, 0),
            done(),
        ]),
        Reply::Sse(vec![
            role(),
            tool_call(0, "c2", "read", "{\"path\":\"README.md\"}"),
            finish("tool_calls"),
            usage(650, 12, 512),
            done(),
        ]),
        Reply::Sse(vec![
            role(),
            text("A toy project"),
            text(" with a README."),
            finish("stop"),
            usage(700, 8, 640),
            done(),
        ]),
    ]);

    let task = |cwd: &std::path::Path| {
        let mut cmd = Command::new(worker);
        cmd.args(["run", "--model", "dynamo/mock-model", "--no-context-files"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DYNAMO_BASE_URL", &mock.url)
            .current_dir(cwd);
        cmd
    };

    // Warm the page cache and the mock.
    for _ in 0..3 {
        measure(
            task(workspace.path()),
            b"List the files here and read the README, then summarize.",
        );
        measure(Command::new("/bin/true"), b"");
    }

    let mut baseline = Vec::new();
    let mut version = Vec::new();
    let mut full = Vec::new();
    for _ in 0..runs {
        baseline.push(measure(Command::new("/bin/true"), b"").0);

        let mut cmd = Command::new(worker);
        cmd.arg("--version");
        version.push(measure(cmd, b"").0);

        mock.clear_requests();
        let (mut sample, code, started) = measure(
            task(workspace.path()),
            b"List the files here and read the README, then summarize.",
        );
        assert_eq!(code, 0, "the 3-turn task failed");
        let requests = mock.requests();
        assert_eq!(requests.len(), 3, "3 model requests per run");
        sample.first_request = Some(requests[0].at.duration_since(started));
        full.push(sample);
    }

    let wall = |s: &[Sample]| median(s.iter().map(|x| ms(x.wall)).collect());
    let rss = |s: &[Sample]| s.iter().map(|x| x.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    let base_wall = wall(&baseline);
    let version_wall = wall(&version);
    let full_wall = wall(&full);
    let first = median(
        full.iter()
            .filter_map(|x| x.first_request.map(ms))
            .collect(),
    );

    println!("worker run benchmark: {runs} runs, medians (baseline = /bin/true, same process)");
    println!(
        "{:<38} {:>10} {:>12} {:>12}",
        "measure", "value", "vs baseline", "target"
    );
    println!(
        "{:<38} {:>8.2}ms {:>12} {:>12}",
        "baseline: exec + wait of /bin/true", base_wall, "1.0x", "-"
    );
    println!(
        "{:<38} {:>8.2}ms {:>11.1}x {:>12}",
        "worker --version",
        version_wall,
        version_wall / base_wall,
        "< 2 ms"
    );
    println!(
        "{:<38} {:>8.2}ms {:>11.1}x {:>12}",
        "exec to first model request",
        first,
        first / base_wall,
        "< 5 ms"
    );
    println!(
        "{:<38} {:>8.2}ms {:>11.1}x {:>12}",
        "3-turn run (ls, read, answer)",
        full_wall,
        full_wall / base_wall,
        "< 35 ms"
    );
    println!(
        "{:<38} {:>7.1}MiB {:>11.1}x {:>12}",
        "peak RSS, 3-turn run (max)",
        rss(&full),
        rss(&full) / rss(&baseline).max(0.001),
        "< 14 MiB"
    );
    println!(
        "{:<38} {:>7.1}MiB {:>12} {:>12}",
        "peak RSS, --version (max)",
        rss(&version),
        "-",
        "-"
    );
}
