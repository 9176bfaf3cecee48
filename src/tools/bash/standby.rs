//! Launchers set up ahead of their command. A sandbox's launcher spends milliseconds on its
//! namespaces, cgroup and view before the command can start; a runner that can
//! ([`crate::tools::CommandRunner::standby`]) starts the next one as soon as a command has
//! been handed to the last, so that by the time the model asks for another command the
//! setting up is done, off the call's path, while the model thinks.
//!
//! A standby is handed a command only when the fingerprint it started with is that of a
//! standby started for this command now: the runner's rules and the files they name are as
//! they were. Any other is let go, and the command gets a launcher started for it (which is
//! then handed the command at once).
//!
//! A waiting standby is tied to worker by its input alone: letting it go, the run's end
//! ([`super::Leftovers::clean_up`]) and worker's death all close that, and it ends by itself,
//! removing what it made (its cgroup), without the run waiting for it. Once handed a command,
//! it is the command's process like any other: registered with the watchdog and the run's
//! leftovers, and tied to worker by the launcher itself.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin};

use super::process::{Spawned, Tie, spawn_with_output};
use crate::sync::LockExt;
use crate::tools::{CommandLine, Runner, Standby};

/// A launcher that is set up (or setting up), waiting for its command. Dropped, its input
/// closes and it ends; tokio reaps it.
struct Waiting {
    child: Child,
    output: pipe::Receiver,
    pgid: Pid,
    input: Option<ChildStdin>,
    fingerprint: Vec<u8>,
}

/// The run's standby, if one waits.
#[derive(Clone, Default)]
pub(super) struct Standbys(Arc<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    waiting: Option<Waiting>,
    /// The run has ended: a standby whose start finishes now is let go at once.
    ended: bool,
}

impl Standbys {
    /// Starts `line`'s command through a standby of `runner`: the one waiting if it was set
    /// up for what a fresh one would be, else a fresh one; then starts the next one. `None`:
    /// the runner has no standbys.
    pub(super) fn start(
        &self,
        runner: &Runner,
        line: &CommandLine<'_>,
    ) -> Option<std::io::Result<Spawned>> {
        let fresh = runner.0.standby(line)?;
        let (waiting, next) = match self.take(&fresh.fingerprint) {
            Some(waiting) => (waiting, Some(fresh)),
            None => match start(fresh) {
                Ok(started) => (started, runner.0.standby(line)),
                Err(err) => return Some(Err(err)),
            },
        };
        let spawned = waiting.hand(line.standby_input());
        if let Some(next) = next {
            self.start_next(next);
        }
        Some(Ok(spawned))
    }

    /// Starts the next standby on a blocking thread. Starting one is a fork and an exec of
    /// worker's binary, which the spawning thread waits for (milliseconds after an idle
    /// moment): on the run's thread, that wait came before the command just handed was even
    /// written to its launcher. A command that comes before the standby is up gets a launcher
    /// of its own, as when none waits; the standby is kept for the one after (a newer one that
    /// waits already is kept instead).
    fn start_next(&self, next: Standby) {
        let slot = self.clone();
        let started = move || {
            let Ok(next) = start(next) else {
                return;
            };
            let mut slot = slot.0.lock_or_recover();
            if !slot.ended && slot.waiting.is_none() {
                slot.waiting = Some(next);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(started)),
            Err(_) => started(),
        }
    }

    /// The standby waiting, if it was set up for `fingerprint` and still waits (one that could
    /// not set up, or was killed, has exited). Any other is let go.
    fn take(&self, fingerprint: &[u8]) -> Option<Waiting> {
        let mut waiting = self.0.lock_or_recover().waiting.take()?;
        (waiting.fingerprint == fingerprint && matches!(waiting.child.try_wait(), Ok(None)))
            .then_some(waiting)
    }

    /// Lets the waiting standby go, and any still starting: they end by themselves.
    pub(super) fn end(&self) {
        let mut slot = self.0.lock_or_recover();
        slot.ended = true;
        drop(slot.waiting.take());
    }
}

/// Starts a standby: its output on one pipe as a command's, its input a pipe of its own.
fn start(standby: Standby) -> std::io::Result<Waiting> {
    let (mut child, output, pgid) =
        spawn_with_output(standby.command, Stdio::piped(), Tie::Standby)?;
    let input = child.stdin.take();
    Ok(Waiting {
        child,
        output,
        pgid,
        input,
        fingerprint: standby.fingerprint,
    })
}

impl Waiting {
    /// Hands it its command: written on a task of its own (the pipe holds 64 KiB, and the
    /// init reads once its view is built), then the input closes. (Starting it took the
    /// runtime, so there is one.) A write that fails loses nothing: a standby that could not
    /// set up has said why on its output, and exits 126.
    fn hand(mut self, command: Vec<u8>) -> Spawned {
        if let Some(mut input) = self.input.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = input.write_all(&command).await;
            });
        }
        Spawned {
            child: self.child,
            output: self.output,
            pgid: self.pgid,
            // The run's leftovers register it with the watchdog now.
            told: false,
        }
    }
}
