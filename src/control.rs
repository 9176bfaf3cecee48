//! Stopping a run from outside: signals, the wall-clock budget, a closed stdout.
//!
//! One [`RunControl`] is shared by everything a run starts. Aborting cancels its token (every
//! model request and tool watches it) and records the first reason, which decides how the run
//! ends: `aborted` (130/143/141) or `timeout` (3).

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
}

impl AbortReason {
    /// The exit status a run stopped for this reason ends with.
    pub fn exit_status(self) -> ExitStatus {
        match self {
            AbortReason::Interrupt => ExitStatus::Interrupted,
            AbortReason::Terminate => ExitStatus::Terminated,
            AbortReason::Timeout => ExitStatus::Limit,
            AbortReason::OutputClosed => ExitStatus::ClosedStdout,
        }
    }
}

/// The shared stop switch of one run: a cancellation token and the first abort reason. Clones
/// share both.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    token: CancellationToken,
    reason: Arc<OnceLock<AbortReason>>,
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
