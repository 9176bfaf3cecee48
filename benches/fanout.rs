//! `cargo bench -- fanout`: fanning a task out to 8 subagents in one run
//! (`--subagents`), against the same 8 pieces of work as 8 `worker run` processes started at
//! once, on the same scripted server. Reports, for each, the wall time until all the work is
//! answered, the peak RSS (summed over the processes), and the connections the server saw
//! opened, and the ratios of the two, alternating the two shapes round by round so noise falls
//! on both alike.
//!
//! `BENCH_RUNS` sets the rounds (default 10).

use crate::mock_llm;
use crate::runs;
use crate::wait;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mock_llm::*;
use runs::{median, worker};
use serde_json::json;
use wait::measure;

/// The pieces of work, as subagents and as processes.
const WIDTH: usize = 8;

struct Round {
    wall: Duration,
    rss_mib: f64,
    connections: usize,
}

/// One run whose first answer asks for `WIDTH` subagents.
fn fanned_out(cwd: &std::path::Path) -> Round {
    let mut frames = vec![role()];
    for index in 0..WIDTH {
        frames.push(tool_call(
            u32::try_from(index).unwrap(),
            &format!("t{index}"),
            "task",
            &json!({"description": "piece", "prompt": format!("piece {index}")}).to_string(),
        ));
    }
    frames.extend([finish("tool_calls"), usage(600, 10, 0), done()]);
    let mut replies = vec![Reply::Sse(frames)];
    replies.extend((0..WIDTH).map(|_| answer("piece done")));
    replies.push(answer("all done"));
    let mock = MockLlm::start(replies);
    let max = WIDTH.to_string();
    let (sample, code, _) = measure(
        worker(&mock.url, cwd, &["--subagents", "--max-subagents", &max]),
        b"split the work",
    );
    assert_eq!(code, 0, "the fanned-out run failed");
    assert_eq!(mock.requests().len(), WIDTH + 2);
    Round {
        wall: sample.wall,
        rss_mib: sample.max_rss_kib as f64 / 1024.0,
        connections: peers(&mock),
    }
}

/// `WIDTH` runs at once, each one piece of work.
fn processes(cwd: &std::path::Path) -> Round {
    let mock = MockLlm::start_cycling(vec![answer("piece done")]);
    let started = Instant::now();
    let handles: Vec<_> = (0..WIDTH)
        .map(|_| {
            let cmd = worker(&mock.url, cwd, &[]);
            std::thread::spawn(move || measure(cmd, b"piece"))
        })
        .collect();
    let mut rss = 0.0;
    for handle in handles {
        let (sample, code, _) = handle.join().unwrap();
        assert_eq!(code, 0, "a process failed");
        rss += sample.max_rss_kib as f64 / 1024.0;
    }
    let wall = started.elapsed();
    assert_eq!(mock.requests().len(), WIDTH);
    Round {
        wall,
        rss_mib: rss,
        connections: peers(&mock),
    }
}

/// Distinct client connections the server saw.
fn peers(mock: &MockLlm) -> usize {
    mock.requests()
        .iter()
        .map(|r| r.peer)
        .collect::<BTreeSet<_>>()
        .len()
}

pub(crate) fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let cwd = tempfile::tempdir().unwrap();
    let (mut tree, mut fleet) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        tree.push(fanned_out(cwd.path()));
        fleet.push(processes(cwd.path()));
    }
    let ms = |rounds: &[Round]| {
        median(
            rounds
                .iter()
                .map(|r| r.wall.as_secs_f64() * 1000.0)
                .collect(),
        )
    };
    let mib = |rounds: &[Round]| median(rounds.iter().map(|r| r.rss_mib).collect());
    let conns = |rounds: &[Round]| median(rounds.iter().map(|r| r.connections as f64).collect());
    println!("fan-out benchmark: {WIDTH} pieces of work, {runs} rounds, medians");
    println!(
        "{:<38} {:>12} {:>14} {:>12}",
        "shape", "wall", "peak RSS", "connections"
    );
    for (label, rounds) in [
        ("one run, 8 subagents (--subagents)", &tree),
        ("8 worker processes at once", &fleet),
    ] {
        println!(
            "{label:<38} {:>10.2}ms {:>11.1}MiB {:>12.0}",
            ms(rounds),
            mib(rounds),
            conns(rounds)
        );
    }
    println!(
        "{:<38} {:>11.2}x {:>13.2}x {:>11.2}x",
        "ratio (subagents / processes)",
        ms(&tree) / ms(&fleet),
        mib(&tree) / mib(&fleet),
        conns(&tree) / conns(&fleet).max(1.0)
    );
}
