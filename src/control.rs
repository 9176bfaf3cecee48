//! Stopping a run from outside: signals, the wall-clock budget, a closed stdout.
//!
//! One [`RunControl`] is shared by everything a run starts. Aborting cancels its token (every
//! model request and tool watches it) and records the first reason, which decides how the run
//! ends: `aborted` (130/143/141) or `timeout` (3).

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::exit::ExitStatus;

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
    pub fn exit_status(self) -> ExitStatus {
        match self {
            AbortReason::Interrupt => ExitStatus::Interrupted,
            AbortReason::Terminate => ExitStatus::Terminated,
            AbortReason::Timeout => ExitStatus::Limit,
            AbortReason::OutputClosed => ExitStatus::ClosedStdout,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunControl {
    token: CancellationToken,
    reason: Arc<OnceLock<AbortReason>>,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the run. Only the first reason counts; later calls are no-ops.
    pub fn abort(&self, reason: AbortReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub fn reason(&self) -> Option<AbortReason> {
        self.reason.get().copied()
    }

    pub fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Resolves once the run is aborted.
    pub async fn aborted(&self) {
        self.token.cancelled().await
    }
}
