//! `cargo bench -- fleet`: many `worker run` processes at once against one mock server,
//! as an orchestrator running a fleet would. Reports the completion rate, the p50 and p99
//! wall time per run and the total of the runs' peak RSS, beside the same fleet of
//! `/bin/true` measured in the same process (the cost of spawning that many processes on this
//! machine right now). The spread (p99 over p50) is given for both: how evenly the machine
//! shares its cores among that many processes is its own, and `/bin/true`'s spread shows it.
//!
//! `BENCH_FLEET` sets how many run at once (default 200).

use crate::launcher;
use crate::mock_llm;

use std::time::{Duration, Instant};

use launcher::{Cmd, Launcher, Sample};
use mock_llm::*;

/// A run's sample and exit code.
struct Outcome {
    sample: Sample,
    code: i32,
}

/// Starts `size` copies of `cmd` at once (from the launcher, so that each one's peak RSS is
/// its own) and waits for all of them.
fn fleet(launcher: &Launcher, size: usize, cmd: &Cmd) -> (Vec<Outcome>, Duration) {
    let started = Instant::now();
    let samples = launcher.run_many(&vec![cmd.clone(); size]);
    let outcomes = samples
        .into_iter()
        .map(|sample| Outcome {
            code: sample.code,
            sample,
        })
        .collect();
    (outcomes, started.elapsed())
}

fn percentile(outcomes: &[Outcome], p: f64) -> f64 {
    let mut walls: Vec<f64> = outcomes
        .iter()
        .map(|o| o.sample.wall.as_secs_f64() * 1000.0)
        .collect();
    walls.sort_by(f64::total_cmp);
    #[allow(clippy::cast_sign_loss, reason = "p is a fraction in 0..=1")]
    let index = ((walls.len() as f64 - 1.0) * p).round() as usize;
    walls[index]
}

pub(crate) fn main() {
    let launcher = Launcher::start();
    let size: usize = std::env::var("BENCH_FLEET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let worker = env!("CARGO_BIN_EXE_worker");
    let workspace = tempfile::tempdir().expect("tempdir");
    let mock = MockLlm::start_cycling(vec![answer("Done.")]);
    let task = Cmd::new(worker)
        .args(["run", "--model", "dynamo/mock-model", "--no-context-files"])
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DYNAMO_BASE_URL", &mock.url)
        .cwd(workspace.path())
        .stdin("Answer in one word.");

    let (baseline, baseline_total) = fleet(&launcher, size, &Cmd::new("/bin/true"));
    let (runs, total) = fleet(&launcher, size, &task);
    let completed = runs.iter().filter(|o| o.code == 0).count();
    let rss_mib: f64 = runs
        .iter()
        .map(|o| o.sample.max_rss_kib as f64 / 1024.0)
        .sum();
    let p50 = percentile(&runs, 0.5);
    let p99 = percentile(&runs, 0.99);
    let base50 = percentile(&baseline, 0.5);
    let base99 = percentile(&baseline, 0.99);
    println!("fleet benchmark: {size} concurrent runs against one mock (baseline = /bin/true)");
    println!(
        "  completed                        {completed}/{size} ({:.1}%)",
        100.0 * completed as f64 / size as f64
    );
    println!(
        "  wall per run, p50                {p50:>8.1} ms   ({:.1}x /bin/true's p50 {base50:.1} ms)",
        p50 / base50
    );
    println!("  wall per run, p99                {p99:>8.1} ms   (/bin/true's p99 {base99:.1} ms)");
    println!(
        "  spread, p99/p50                  {:>8.2}      (/bin/true's {:.2})",
        p99 / p50,
        base99 / base50
    );
    println!(
        "  whole fleet                      {:>8.1} ms   (/bin/true fleet {:.1} ms)",
        total.as_secs_f64() * 1000.0,
        baseline_total.as_secs_f64() * 1000.0
    );
    println!(
        "  total peak RSS                   {rss_mib:>8.1} MiB ({:.1} MiB a run)",
        rss_mib / size as f64
    );
    assert_eq!(completed, size, "every run of the fleet must complete");
}
