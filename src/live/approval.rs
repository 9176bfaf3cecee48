//! The approvals a run waits for: each has an id the controller's `decide` names, is answered
//! once, and is remembered after, so a second answer is told it came too late rather than
//! that the id is unknown.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

use crate::sync::LockExt;

/// A controller's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decision {
    pub allow: bool,
    pub reason: Option<String>,
}

/// Why a `decide` was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum DecideError {
    #[error("no approval {0:?} was requested")]
    Unknown(String),
    #[error("approval {0:?} was already resolved")]
    AlreadyResolved(String),
}

#[derive(Default)]
pub(super) struct Approvals {
    next: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    waiting: HashMap<String, oneshot::Sender<Decision>>,
    resolved: HashSet<String>,
}

impl Approvals {
    /// A new approval: its id, and where its decision arrives.
    pub(super) fn open(&self) -> (String, oneshot::Receiver<Decision>) {
        let id = format!("approval-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (sender, receiver) = oneshot::channel();
        self.state
            .lock_or_recover()
            .waiting
            .insert(id.clone(), sender);
        (id, receiver)
    }

    /// Takes approval `id` for a decision: from now on it is resolved; the decision goes
    /// through what this returns ([`Decider::send`]), once the answer is written.
    pub(super) fn take(&self, id: &str) -> Result<Decider, DecideError> {
        let mut state = self.state.lock_or_recover();
        let Some(waiting) = state.waiting.remove(id) else {
            return Err(if state.resolved.contains(id) {
                DecideError::AlreadyResolved(id.to_string())
            } else {
                DecideError::Unknown(id.to_string())
            });
        };
        state.resolved.insert(id.to_string());
        Ok(Decider(waiting))
    }

    /// Answers approval `id` now.
    #[cfg(test)]
    pub(super) fn decide(&self, id: &str, decision: Decision) -> Result<(), DecideError> {
        self.take(id).map(|decider| decider.send(decision))
    }

    /// Approval `id` is over without a decision (its timeout, an abort): later answers are
    /// too late.
    pub(super) fn close(&self, id: &str) {
        let mut state = self.state.lock_or_recover();
        state.waiting.remove(id);
        state.resolved.insert(id.to_string());
    }
}

/// A taken approval, waiting for its decision to be sent.
pub(super) struct Decider(oneshot::Sender<Decision>);

impl Decider {
    /// Sends the decision. A call that stopped waiting meanwhile (its timeout, an abort)
    /// resolved itself; the decision is then dropped.
    pub(super) fn send(self, decision: Decision) {
        let _ = self.0.send(decision);
    }
}

#[cfg(test)]
mod tests;
