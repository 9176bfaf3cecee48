//! Stopping a run from outside: signals, the wall-clock budget, a closed stdout, an `abort`
//! command.
//!
//! One [`RunControl`] is shared by everything a run starts. Aborting cancels its token (every
//! model request and tool watches it) and records the first reason, which decides how the run
//! ends: `aborted` (5/130/143/141) or `timeout` (3). A stop is graceful: running tools get
//! their grace to wind down and the stream ends with its terminal events. Asking again while
//! it winds down ([`RunControl::hurry`]) is for the binary to end the process at once.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::exit::ExitStatus;

/// Why a run was stopped from outside; the first reason recorded decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortReason {
    /// SIGINT: exit 130.
    Interrupt,
    /// SIGTERM: exit 143.
    Terminate,
    /// `--timeout` expired: exit 3.
    Timeout,
    /// The reader closed stdout: exit 141, quietly.
    OutputClosed,
    /// An `abort` command (`--control stdin`): exit 5.
    Command,
}

impl AbortReason {
    /// The exit status a run stopped for this reason ends with.
    pub fn exit_status(self) -> ExitStatus {
        match self {
            AbortReason::Interrupt => ExitStatus::Interrupted,
            AbortReason::Terminate => ExitStatus::Terminated,
            AbortReason::Timeout => ExitStatus::Limit,
            AbortReason::OutputClosed => ExitStatus::ClosedStdout,
            AbortReason::Command => ExitStatus::Aborted,
        }
    }
}

/// The shared stop switch of one run: a cancellation token and the first abort reason. Clones
/// share both.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    token: CancellationToken,
    reason: Arc<OnceLock<AbortReason>>,
    /// The reason an `abort` command gave, for the stderr line.
    note: Arc<OnceLock<String>>,
    /// Cancelled by a second stop while the first winds down.
    hurry: CancellationToken,
}

impl RunControl {
    /// The control of a run that has not been aborted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the run. Only the first reason counts; later calls are no-ops.
    pub fn abort(&self, reason: AbortReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    /// Stops the run for an `abort` command, keeping the reason it gave (when it is the
    /// first stop).
    pub fn abort_with_note(&self, reason: AbortReason, note: Option<String>) {
        if self.reason.set(reason).is_ok()
            && let Some(note) = note
        {
            let _ = self.note.set(note);
        }
        self.token.cancel();
    }

    /// The reason the stopping command gave, if it gave one.
    pub fn note(&self) -> Option<&str> {
        self.note.get().map(String::as_str)
    }

    /// A second stop while the first winds down: whoever owns the process ends it now.
    pub fn hurry(&self) {
        self.hurry.cancel();
    }

    /// Resolves once [`RunControl::hurry`] was called.
    pub async fn hurried(&self) {
        self.hurry.cancelled().await;
    }

    /// The first reason the run was aborted for; `None` while it runs on.
    pub fn reason(&self) -> Option<AbortReason> {
        self.reason.get().copied()
    }

    /// Whether the run was aborted (its token is cancelled).
    pub fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The token every model request and tool watches; cancelled by [`RunControl::abort`].
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Resolves once the run is aborted.
    pub async fn aborted(&self) {
        self.token.cancelled().await;
    }
}
