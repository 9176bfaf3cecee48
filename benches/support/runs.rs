//! What the benchmarks that run worker against the scripted server share: the command line
//! and the median.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The median of `values`.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The order to run a round's `count` variants in: each round starts one further on, so
/// whatever running first, or right after another variant, does to a run falls on every
/// variant alike rather than always on the same one.
pub(crate) fn rotated(count: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |k| (k + round) % count)
}

/// `worker run` on the scripted server at `url`, in `cwd`, with only `PATH` from this
/// environment, no context files and no session file.
pub(crate) fn worker(url: &str, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_worker"));
    cmd.args([
        "run",
        "--model",
        "dynamo/mock-model",
        "--no-context-files",
        "--no-session",
    ])
    .args(args)
    .env_clear()
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("DYNAMO_BASE_URL", url)
    .current_dir(cwd);
    cmd
}
