//! `cargo bench --bench turns`: what a turn costs as a run grows long. One run of 1,000 turns
//! against the scripted server, each turn a `read` of a small file, reports the time per turn
//! around turns 10, 100 and 1,000 (from the server's own clock: the gap between the request
//! that asked for a call and the one that carried its result back, which is worker's whole
//! turn: parsing the answer, the call, the session file, the next request's body, and the
//! scripted server reading that body) and, from runs stopped there, the peak RSS at 10, 100
//! and 1,000 turns beside the size of the last request. A run whose turns cost the same at
//! 1,000 as at 10 has a flat first column.
//!
//! `BENCH_TURNS` sets the longest run (default 1000); the others are a tenth and a hundredth.

// A benchmark stops on any failure; unwrapping is how it says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/support/mock_llm.rs"]
mod mock_llm;
use mock_llm::*;
use serde_json::json;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A run of `turns` calls, then an answer: the gaps between its requests in milliseconds,
/// its peak RSS in MiB (by GNU time, a small parent, so no copy of this process counts), and
/// the size of its last request in KiB.
fn run(cwd: &std::path::Path, turns: usize, session: bool) -> (Vec<f64>, f64, f64) {
    let args = json!({"path": "notes.txt"}).to_string();
    let mut replies: Vec<Reply> = (0..turns)
        .map(|turn| call(&format!("c{turn}"), "read", &args))
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let report = cwd.join("time.txt");
    let worker = command(&mock.url, cwd, session);
    let mut timed = std::process::Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(worker.get_program())
        .args(worker.get_args())
        .env_clear()
        .envs(worker.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = timed.spawn().expect("spawn /usr/bin/time (package time)");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"read it again and again")
        .unwrap();
    assert!(child.wait().unwrap().success(), "the run failed");
    let kib: f64 = std::fs::read_to_string(&report)
        .unwrap()
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    let requests = mock.requests();
    assert_eq!(requests.len(), turns + 1);
    let gaps = requests
        .windows(2)
        .map(|pair| (pair[1].at - pair[0].at).as_secs_f64() * 1000.0)
        .collect();
    let last = serde_json::to_vec(&requests[turns].body).unwrap().len();
    (gaps, kib / 1024.0, last as f64 / 1024.0)
}

/// `worker run` on the scripted server at `url`; `session`: with its session file (in `cwd`).
fn command(url: &str, cwd: &std::path::Path, session: bool) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_worker"));
    cmd.args(["run", "--model", "dynamo/mock-model", "--no-context-files"]);
    if session {
        cmd.arg("--session-dir").arg(cwd.join("sessions"));
    } else {
        cmd.arg("--no-session");
    }
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DYNAMO_BASE_URL", url)
        .current_dir(cwd);
    cmd
}

/// The median gap of the ten turns up to `turn` (1-based).
fn around(gaps: &[f64], turn: usize) -> f64 {
    let end = turn.min(gaps.len());
    median(gaps[end.saturating_sub(10)..end].to_vec())
}

fn main() {
    let longest: usize = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
        .max(100);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a short note\n".repeat(8)).unwrap();
    let points = [longest / 100, longest / 10, longest];
    println!("turns benchmark: one run of {longest} turns (a read each), and runs of {points:?}");
    for session in [false, true] {
        let label = if session {
            "with the session file"
        } else {
            "--no-session"
        };
        let (gaps, _, _) = run(dir.path(), longest, session);
        println!("{label}:");
        println!(
            "  {:>6} {:>14} {:>12} {:>14}",
            "turn", "ms per turn", "peak RSS", "last request"
        );
        let base = around(&gaps, points[0]);
        for turns in points {
            let (_, rss, body) = run(dir.path(), turns, session);
            let per_turn = around(&gaps, turns);
            println!(
                "  {turns:>6} {per_turn:>8.3} ({:>4.2}x) {rss:>8.1} MiB {body:>10.1} KiB",
                per_turn / base
            );
        }
    }
}
