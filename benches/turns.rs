//! `cargo bench -- turns`: what a turn costs as a run grows long. Replayed runs (no
//! server: only worker's own work is timed) of turns that each `read` a small file: the time a
//! turn adds around turns 10, 100 and 1,000 (the difference between runs 200 turns apart,
//! divided by 200, of each run's least time over the rounds; CPU time, user plus system, which
//! scheduling noise on a shared machine disturbs less than wall time, and wall time beside it)
//! and the median peak
//! RSS of runs of 10, 100 and 1,000 turns, with and without the session file; every run is
//! measured by the launcher (`support/launcher.rs`). A run whose turns cost the same at 1,000 as
//! at 10 has a flat first column. Then the memory a turn adds between the middle run and the
//! longest, against the conversation's own bytes a turn adds (its session file, as written).
//!
//! `BENCH_TURNS` sets the longest run (default 1000; the others are a tenth and a hundredth),
//! `BENCH_RUNS` the rounds (default 21).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::launcher;
use crate::runs;

use launcher::{Cmd, Launcher};
use runs::median;

use serde_json::json;

/// Turns between the two runs whose difference is a point's time per turn.
const WINDOW: usize = 200;

/// A fixture of `turns` `read` calls, then a final answer.
fn fixture(path: &Path, turns: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        out,
        "{}",
        json!({"workerFixture": 1, "provider": "dynamo", "model": "m"})
    )
    .unwrap();
    let args = json!({"path": "notes.txt"}).to_string();
    for turn in 0..turns {
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("c{turn}"), "type": "function", "function": {"name": "read", "arguments": args}}]}, "finish_reason": "tool_calls"}]});
        let reply = json!({"request": {}, "response": {"events": [chunk, "[DONE]"]}});
        writeln!(out, "{reply}").unwrap();
    }
    let answer =
        json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]});
    let reply = json!({"request": {}, "response": {"events": [answer, "[DONE]"]}});
    writeln!(out, "{reply}").unwrap();
}

/// One replayed run of `fixture`, from the launcher: its wall and CPU time (user plus system)
/// in milliseconds, and its peak RSS in MiB.
fn run(launcher: &Launcher, dir: &Path, fixture: &Path, session: bool) -> (f64, f64, f64) {
    let mut cmd = Cmd::new(env!("CARGO_BIN_EXE_worker"))
        .args(["run", "--no-context-files", "--model"])
        .arg(format!("replay/{}", fixture.display()))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .cwd(dir)
        .stdin("go");
    cmd = if session {
        cmd.arg("--session-dir")
            .arg(dir.join("sessions").display().to_string())
    } else {
        cmd.arg("--no-session")
    };
    let sample = launcher.run(&cmd);
    assert_eq!(sample.code, 0, "the run failed");
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    (
        ms(sample.wall),
        ms(sample.cpu()),
        sample.max_rss_kib as f64 / 1024.0,
    )
}

pub(crate) fn main() {
    // First, while this process is small: see the launcher.
    let launcher = Launcher::start();
    let longest: usize = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
        .max(100);
    let rounds: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21)
        .max(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a short note\n".repeat(8)).unwrap();
    let points = [longest / 100, longest / 10, longest];
    let fixtures: Vec<[std::path::PathBuf; 2]> = points
        .iter()
        .map(|&turns| {
            [turns, turns + WINDOW].map(|n| {
                let path = dir.path().join(format!("fixture-{n}.jsonl"));
                fixture(&path, n);
                path
            })
        })
        .collect();
    println!(
        "turns benchmark: replayed runs of {points:?} turns (a read each), {rounds} rounds; \
         each run's least time, and the median peak RSS"
    );
    for session in [false, true] {
        let label = if session {
            "with the session file"
        } else {
            "--no-session"
        };
        println!("{label}:");
        println!(
            "  {:>6} {:>32} {:>14} {:>10}",
            "turn", "CPU ms a turn adds", "wall ms", "peak RSS"
        );
        let mut base = None;
        let mut peaks = Vec::new();
        for (turns, [short, long]) in points.iter().zip(&fixtures) {
            let (mut before, mut after, mut rss) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                let (wall, cpu, kib) = run(&launcher, dir.path(), short, session);
                before.push((wall, cpu));
                let (wall, cpu, _) = run(&launcher, dir.path(), long, session);
                after.push((wall, cpu));
                rss.push(kib);
            }
            // A replayed run does the same work every time, and what disturbs it (another
            // process, an interrupt, a cold cache) only ever adds time: each run's least time
            // over the rounds is its own cost, and the difference of two such is far steadier
            // than a median of per-round differences, which carry both runs' noise.
            let least = |runs: &[(f64, f64)], of: fn(&(f64, f64)) -> f64| {
                runs.iter().map(of).fold(f64::INFINITY, f64::min)
            };
            let per_turn = |of: fn(&(f64, f64)) -> f64| {
                (least(&after, of) - least(&before, of)) / WINDOW as f64
            };
            let (cpu, wall, rss) = (per_turn(|r| r.1), per_turn(|r| r.0), median(rss));
            let base = *base.get_or_insert(cpu);
            peaks.push(rss);
            println!(
                "  {turns:>6} {cpu:>10.3} ({:>5.2}x, target <= 1.2x) {wall:>14.3} {rss:>6.1} MiB",
                cpu / base,
            );
        }
        if !session {
            continue;
        }
        // The conversation's own bytes a turn: the session file of the longest run less the
        // middle one's, per turn.
        let sizes: Vec<f64> = [points[1], points[2]]
            .iter()
            .map(|turns| {
                let sessions = dir.path().join(format!("sizes-{turns}"));
                let fixture = dir.path().join(format!("fixture-{turns}.jsonl"));
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_worker"));
                cmd.args(["run", "--no-context-files", "--model"])
                    .arg(format!("replay/{}", fixture.display()))
                    .arg("--session-dir")
                    .arg(&sessions)
                    .arg("go")
                    .current_dir(dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                assert!(cmd.status().unwrap().success(), "the run failed");
                std::fs::read_dir(&sessions)
                    .unwrap()
                    .map(|entry| entry.unwrap().metadata().unwrap().len() as f64)
                    .sum()
            })
            .collect();
        let turns = (points[2] - points[1]) as f64;
        let conversation = (sizes[1] - sizes[0]) / turns;
        let memory = (peaks[2] - peaks[1]) * 1024.0 * 1024.0 / turns;
        println!(
            "  memory a turn adds, turns {}..{}: {:.1} KiB for {:.1} KiB of conversation \
             ({:.2}x, target <= 2x)",
            points[1],
            points[2],
            memory / 1024.0,
            conversation / 1024.0,
            memory / conversation
        );
    }
}
