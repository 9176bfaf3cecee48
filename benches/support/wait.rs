//! What the benchmarks share: running a command and reaping it with `wait4`, which also
//! reports the child's peak RSS.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Sample {
    pub wall: Duration,
    pub max_rss_kib: i64,
}

/// Spawns and waits with wait4, which also reports the child's peak RSS.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std cannot see
pub(crate) fn measure(mut cmd: Command, stdin: &[u8]) -> (Sample, i32, Instant) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    let pid = child.id().cast_signed();
    let mut status = 0;
    // SAFETY: plain FFI; `rusage` is a zeroed POD the kernel fills, and `pid` is our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
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
            max_rss_kib: usage.ru_maxrss,
        },
        code,
        started,
    )
}
