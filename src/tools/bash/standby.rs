//! Launchers set up ahead of their command. A sandbox's launcher spends milliseconds on its
//! namespaces, cgroup and view before the command can start; a runner that can
//! ([`crate::tools::CommandRunner::standby`]) starts the next one as soon as a command has
//! been handed to the last, so that by the time the model asks for another command the
//! setting up is done, off the call's path, while the model thinks.
//!
//! A standby is handed a command only when the fingerprint it started with is that of a
//! standby started for this command now: the runner's rules and the files they name are as
//! they were. Any other is ended, and the command gets a launcher started for it (which is
//! then handed the command at once). The run's end ([`super::Leftovers::clean_up`]) ends the
//! one left: its input closes, and it removes what it made (its cgroup) and exits.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin};

use super::process::{Spawned, spawn_with_output};
use crate::sync::LockExt;
use crate::tools::{CommandLine, Runner, Standby};

/// How long the run's end waits for a standby it ended to exit (it takes about a millisecond;
/// one that does not is killed).
const END_LIMIT: Duration = Duration::from_secs(1);

/// A launcher that is set up, waiting for its command.
pub(super) struct Waiting {
    child: Child,
    output: pipe::Receiver,
    pgid: Pid,
    input: Option<ChildStdin>,
    fingerprint: Vec<u8>,
    told: bool,
}

/// The run's standby, and those ended but not yet seen to exit.
#[derive(Clone, Default)]
pub(super) struct Standbys(Arc<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    waiting: Option<Waiting>,
    /// Ended, not yet seen to exit.
    ended: Vec<Waiting>,
    /// The process groups of those that exited, for the watchdog to forget.
    gone: Vec<Pid>,
}

impl Slot {
    /// Ends `waiting`, and lets go of the ended ones that exited (so a run whose standbys keep
    /// being replaced holds no more than the few still exiting).
    fn end(&mut self, waiting: Waiting) {
        self.ended.push(waiting.ended());
        let gone = &mut self.gone;
        self.ended.retain_mut(|waiting| {
            let exited = matches!(waiting.child.try_wait(), Ok(Some(_)));
            if exited {
                gone.push(waiting.pgid);
            }
            !exited
        });
    }
}

impl Standbys {
    /// Starts `line`'s command through a standby of `runner`: the one waiting if it was set
    /// up for what `fresh` is, else `fresh` itself; then starts the next one. `None`: the
    /// runner has no standbys.
    pub(super) fn start(
        &self,
        runner: &Runner,
        line: &CommandLine<'_>,
        watchdog: Option<std::os::fd::RawFd>,
    ) -> Option<std::io::Result<Spawned>> {
        let fresh = runner.0.standby(line)?;
        let waiting = self.take(&fresh.fingerprint);
        let (waiting, next) = match waiting {
            Some(waiting) => (waiting, Some(fresh)),
            None => match start(fresh, watchdog) {
                Ok(started) => (started, runner.0.standby(line)),
                Err(err) => return Some(Err(err)),
            },
        };
        let spawned = waiting.hand(line.standby_input());
        if let Some(next) = next
            && let Ok(next) = start(next, watchdog)
        {
            self.put(next);
        }
        Some(Ok(spawned))
    }

    /// The standby waiting, if it was set up for `fingerprint` and still waits; one set up
    /// for anything else, or that ended (it could not set up, or was killed), is ended.
    fn take(&self, fingerprint: &[u8]) -> Option<Waiting> {
        let mut slot = self.0.lock_or_recover();
        let mut waiting = slot.waiting.take()?;
        if waiting.fingerprint == fingerprint && matches!(waiting.child.try_wait(), Ok(None)) {
            return Some(waiting);
        }
        slot.end(waiting);
        None
    }

    fn put(&self, waiting: Waiting) {
        let mut slot = self.0.lock_or_recover();
        if let Some(old) = slot.waiting.replace(waiting) {
            slot.end(old);
        }
    }

    /// The process groups of ended standbys that have exited since last asked.
    pub(super) fn gone(&self) -> Vec<Pid> {
        std::mem::take(&mut self.0.lock_or_recover().gone)
    }

    /// Ends every standby and waits (at most [`END_LIMIT`]) for each to exit; returns the
    /// process groups of those that did, for the watchdog to forget.
    pub(super) fn end_all(&self) -> Vec<Pid> {
        let (ending, gone) = {
            let mut slot = self.0.lock_or_recover();
            let mut ending = std::mem::take(&mut slot.ended);
            ending.extend(slot.waiting.take().map(Waiting::ended));
            (ending, std::mem::take(&mut slot.gone))
        };
        let deadline = Instant::now() + END_LIMIT;
        let exited = ending.into_iter().filter_map(|mut waiting| {
            let exited = loop {
                match waiting.child.try_wait() {
                    Ok(Some(_)) => break true,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    // Killed as it is dropped.
                    Ok(None) | Err(_) => break false,
                }
            };
            exited.then_some(waiting.pgid)
        });
        gone.into_iter().chain(exited).collect()
    }
}

/// Starts a standby: its output on one pipe as a command's, its input a pipe of its own.
fn start(standby: Standby, watchdog: Option<std::os::fd::RawFd>) -> std::io::Result<Waiting> {
    let (mut child, output, pgid) =
        spawn_with_output(standby.command, Stdio::piped(), watchdog, None)?;
    let input = child.stdin.take();
    Ok(Waiting {
        child,
        output,
        pgid,
        input,
        fingerprint: standby.fingerprint,
        told: watchdog.is_some(),
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
            told: self.told,
        }
    }

    /// Closes its input, which ends it once it has read it.
    fn ended(mut self) -> Waiting {
        self.input = None;
        self
    }
}
