//! `cargo bench -- long`: one long replayed run — many turns, each a bash call printing
//! 100 KB — at several lengths, to show that peak RSS grows only with the conversation the
//! run must keep (each result is cut to 50 KB for the model), not with everything printed.
//! Reports peak RSS per length beside the conversation's size, and the RSS a turn adds.
//!
//! `BENCH_TURNS` sets the longest run (default 300); the others are a half and a sixth of it.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

/// A fixture of `turns` bash calls, then a final answer.
fn fixture(path: &std::path::Path, turns: usize) {
    let mut out = std::fs::File::create(path).unwrap();
    writeln!(
        out,
        "{}",
        json!({"workerFixture": 1, "provider": "dynamo", "model": "m"})
    )
    .unwrap();
    let command = "head -c 100000 /dev/zero | tr '\\0' a | fold -w 100";
    for turn in 0..turns {
        let args = json!({"command": command}).to_string();
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("c{turn}"), "type": "function", "function": {"name": "bash", "arguments": args}}]}, "finish_reason": "tool_calls"}]});
        writeln!(
            out,
            "{}",
            json!({"request": {}, "response": {"events": [chunk, "[DONE]"]}})
        )
        .unwrap();
    }
    let answer =
        json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]});
    writeln!(
        out,
        "{}",
        json!({"request": {}, "response": {"events": [answer, "[DONE]"]}})
    )
    .unwrap();
}

/// Peak RSS (KiB) and stdout bytes of one run, measured by GNU time from its own process.
fn run(fixture: &std::path::Path, dir: &std::path::Path) -> (u64, usize) {
    let report = dir.join("time.txt");
    let mut child = Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_worker"))
        .args(["run", "--no-context-files", "--model"])
        .arg(format!("replay/{}", fixture.display()))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn /usr/bin/time (package time)");
    child.stdin.take().unwrap().write_all(b"go").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the run failed");
    let kib = std::fs::read_to_string(&report)
        .unwrap()
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    (kib, output.stdout.len())
}

pub(crate) fn main() {
    let longest: usize = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().unwrap();
    println!("long-run benchmark: replayed bash turns printing 100 KB each (results cut to 50 KB)");
    println!("  {:>6} {:>14} {:>16}", "turns", "peak RSS", "stdout");
    let mut points = Vec::new();
    for turns in [longest / 6, longest / 2, longest] {
        let path = dir.path().join(format!("fixture-{turns}.jsonl"));
        fixture(&path, turns);
        let (kib, stdout) = run(&path, dir.path());
        println!(
            "  {turns:>6} {:>11.1} MiB {:>12.1} MiB",
            kib as f64 / 1024.0,
            stdout as f64 / (1024.0 * 1024.0)
        );
        points.push((turns, kib));
    }
    let (first, last) = (points[0], points[points.len() - 1]);
    let per_turn = (last.1 as f64 - first.1 as f64) / (last.0 - first.0) as f64;
    println!(
        "  RSS added per turn: {per_turn:.0} KiB (each turn keeps a ~50 KB result in the conversation)"
    );
}
