//! `cargo bench -- turns`: what a turn costs as a run grows long. Replayed runs (no server:
//! only worker's own work is timed) of turns that each `read` a small file.
//!
//! The time a turn takes at turns 10, 100 and 1,000 is measured inside one run, as a consumer
//! sees it. The bench reads the run's events from its stdout; once it has read past the
//! `tool_execution_end` of one of those turns, and again past the turn [`WINDOW`] turns later,
//! it reads the run's CPU time (user plus system, of every thread the run has had, from the
//! process's CPU clock) and how many turns it has seen end. The CPU time between the two
//! readings, divided by the turns between them, is the point's time a turn; each point's least
//! over the rounds is reported (a replayed run repeats the same work, and what disturbs it only
//! ever adds time), with the wall time beside it. A run whose turns cost the same at 1,000 as
//! at 10 has a flat first column. What a run costs once, at its start and at its end
//! (`agent_end` carries the whole conversation), is not a turn's cost and is left out: a run's
//! total time would mix it in.
//!
//! Two consumers are measured, since the run behaves differently for them (see [`Output`]): a
//! pipe the bench reads, as an orchestrator reads the stream, and a file the run never waits
//! on.
//!
//! Then the median peak RSS of runs of 10, 100 and 1,000 turns, with and without the session
//! file (each run measured by the launcher, `support/launcher.rs`), and the memory a turn adds
//! between the middle run and the longest, against the conversation's own bytes a turn adds
//! (its session file, as written).
//!
//! `BENCH_TURNS` sets the longest point (default 1000; the others are a tenth and a
//! hundredth), `BENCH_RUNS` the rounds (default 21).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::launcher;
use crate::runs;

use launcher::{Cmd, Launcher};
use runs::median;

use serde_json::json;

/// Turns between the two readings whose difference is a point's time a turn.
const WINDOW: usize = 200;

/// The rounds the peak RSS is the median of. One run's peak varies by up to 0.4 MiB from the
/// next (which pages of the binary and of the allocator's arenas it touched), and the memory a
/// turn adds is the difference of two such medians over 900 turns: with 5 rounds that read
/// 1.75x to 2.17x from one run of the bench to the next, of a growth whose median over more
/// runs is 1.8x.
const RSS_ROUNDS: usize = 15;

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

/// The arguments of a replayed run of `fixture`, with or without the session file.
fn run_args(dir: &Path, fixture: &Path, session: bool) -> Vec<String> {
    let mut args = vec![
        "run".to_string(),
        "--no-context-files".to_string(),
        "--model".to_string(),
        format!("replay/{}", fixture.display()),
    ];
    if session {
        args.push("--session-dir".to_string());
        args.push(dir.join("sessions").display().to_string());
    } else {
        args.push("--no-session".to_string());
    }
    args
}

/// One replayed run of `fixture`, from the launcher: its peak RSS in MiB.
fn peak_rss(launcher: &Launcher, dir: &Path, fixture: &Path, session: bool) -> f64 {
    let cmd = Cmd::new(env!("CARGO_BIN_EXE_worker"))
        .args(run_args(dir, fixture, session))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .cwd(dir)
        .stdin("go");
    let sample = launcher.run(&cmd);
    assert_eq!(sample.code, 0, "the run failed");
    sample.max_rss_kib as f64 / 1024.0
}

/// A process's CPU time so far, user plus system, of all its threads (those that have ended
/// included), in nanoseconds.
fn cpu_time(pid: u32) -> u64 {
    let mut clock: libc::clockid_t = 0;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: both pointers are to live locals of the right types.
    let read = unsafe {
        libc::clock_getcpuclockid(pid, &raw mut clock) == 0
            && libc::clock_gettime(clock, &raw mut now) == 0
    };
    assert!(read, "the run's CPU clock could not be read");
    u64::try_from(now.tv_sec).unwrap() * 1_000_000_000 + u64::try_from(now.tv_nsec).unwrap()
}

/// What the bench read once it had read past a marked turn's `tool_execution_end`.
struct Reading {
    /// The turns whose tool the bench had seen end by then.
    turns: usize,
    cpu_ns: u64,
    at: Instant,
}

/// The CPU time (ms) and the wall time (ms) a turn between two readings.
fn per_turn(first: &Reading, second: &Reading) -> (f64, f64) {
    let turns = (second.turns - first.turns) as f64;
    (
        (second.cpu_ns - first.cpu_ns) as f64 / 1e6 / turns,
        second.at.duration_since(first.at).as_secs_f64() * 1000.0 / turns,
    )
}

/// Where a timed run's events go.
#[derive(Clone, Copy, PartialEq)]
enum Output {
    /// A pipe the bench reads, as an orchestrator does. It holds 16 KiB (about four turns'
    /// events), and one read takes all it holds: a reading follows the read that passed the
    /// mark, so what the run did after that read is the only error, a few microseconds.
    Pipe,
    /// A file (`> events.jsonl`), which the run never waits on; the bench reads all there is,
    /// then looks again every 50 microseconds. A reading follows the read that passed the mark.
    File,
}

/// One replayed run of `fixture`: a reading for each turn in `marks` (counted from 0,
/// ascending), taken once the bench has read that turn's `tool_execution_end`.
fn marked_run(
    dir: &Path,
    fixture: &Path,
    session: bool,
    marks: &[usize],
    output: Output,
) -> Vec<Reading> {
    let (stdout, mut events) = match output {
        Output::Pipe => {
            // Close-on-exec: only the run's stdout may hold the pipe, or whatever it starts
            // that outlives it would keep the bench reading.
            let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
            nix::fcntl::fcntl(&write_end, nix::fcntl::FcntlArg::F_SETPIPE_SZ(16384)).unwrap();
            (Stdio::from(write_end), std::fs::File::from(read_end))
        }
        Output::File => {
            let path = dir.join("events.jsonl");
            let file = std::fs::File::create(&path).unwrap();
            (Stdio::from(file), std::fs::File::open(&path).unwrap())
        }
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_worker"))
        .args(run_args(dir, fixture, session))
        .arg("go")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut readings, mut ended, mut exited) = (Vec::new(), 0, false);
    let (mut chunk, mut pending) = (vec![0u8; 1 << 16], Vec::new());
    loop {
        let read = events.read(&mut chunk).unwrap();
        if read == 0 {
            // A pipe ends when the run does; a file is read once more after the run exited.
            if output == Output::Pipe || exited {
                break;
            }
            exited = child.try_wait().unwrap().is_some();
            if !exited {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            continue;
        }
        pending.extend_from_slice(&chunk[..read]);
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|&byte| byte == b'\n') {
            let line = &pending[start..start + end];
            start += end + 1;
            if line.starts_with(b"{\"type\":\"tool_execution_end\"") {
                ended += 1;
            }
        }
        pending.drain(..start);
        // Past a mark: the turn counted from 0 as `mark` is the `mark + 1`th to end.
        while marks.get(readings.len()).is_some_and(|&mark| ended > mark) {
            readings.push(Reading {
                turns: ended,
                cpu_ns: cpu_time(child.id()),
                at: Instant::now(),
            });
        }
    }
    assert!(child.wait().unwrap().success(), "the run failed");
    assert_eq!(readings.len(), marks.len(), "the run ended early");
    readings
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
    let fixtures: Vec<std::path::PathBuf> = points
        .iter()
        // The timed run: its last mark is turn `longest + WINDOW` counted from 0, so it has one
        // turn more.
        .chain(std::iter::once(&(longest + WINDOW + 1)))
        .map(|&turns| {
            let path = dir.path().join(format!("fixture-{turns}.jsonl"));
            fixture(&path, turns);
            path
        })
        .collect();
    let timed = &fixtures[points.len()];
    // Each point's two readings, in the order the run reaches them.
    let mut marks: Vec<usize> = points.iter().flat_map(|&p| [p, p + WINDOW]).collect();
    marks.sort_unstable();
    marks.dedup();
    let at = |turn: usize| marks.iter().position(|&m| m == turn).unwrap();
    println!(
        "turns benchmark: the time a turn takes at turns {points:?} (over the {WINDOW} turns \
         from each) inside one run of {} turns, least of {rounds} rounds; the median peak RSS \
         of runs of {points:?} turns",
        longest + WINDOW + 1
    );
    // The median peak RSS of a run of each point's length, without and with the session file.
    let peaks: Vec<Vec<f64>> = [false, true]
        .iter()
        .map(|&session| {
            fixtures[..points.len()]
                .iter()
                .map(|fixture| {
                    median(
                        (0..RSS_ROUNDS)
                            .map(|_| peak_rss(&launcher, dir.path(), fixture, session))
                            .collect(),
                    )
                })
                .collect()
        })
        .collect();
    for (session, output) in [
        (false, Output::Pipe),
        (false, Output::File),
        (true, Output::Pipe),
    ] {
        println!(
            "{}, events {}:",
            if session {
                "with the session file"
            } else {
                "--no-session"
            },
            match output {
                Output::Pipe => "read from a pipe",
                Output::File => "written to a file",
            }
        );
        println!(
            "  {:>6} {:>32} {:>14} {:>10}",
            "turn", "CPU ms a turn", "wall ms", "peak RSS"
        );
        let mut least = vec![(f64::INFINITY, f64::INFINITY); points.len()];
        for _ in 0..rounds {
            let readings = marked_run(dir.path(), timed, session, &marks, output);
            for (point, least) in points.iter().zip(&mut least) {
                let (cpu, wall) = per_turn(&readings[at(*point)], &readings[at(point + WINDOW)]);
                *least = (least.0.min(cpu), least.1.min(wall));
            }
        }
        let base = least[0].0;
        let peaks = &peaks[usize::from(session)];
        for ((turns, (cpu, wall)), rss) in points.iter().zip(&least).zip(peaks) {
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
