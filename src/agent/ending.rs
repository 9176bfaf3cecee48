//! The one stderr line that says why a run did not succeed, in words a person can act on.
//!
//! An orchestrator that only keeps the stderr tail of a failed process (lastlight does) must
//! still learn the cause: which request failed, after how many tries, where it went and what
//! the server said; which limit stopped the run; which signal ended it.

use crate::control::AbortReason;
use crate::events::{FatalError, FatalErrorKind, LimitKind, LimitReached};

/// How a run that did not succeed ended, for [`failure_line`].
pub(super) enum Failure<'a> {
    Fatal {
        error: &'a FatalError,
        /// Model requests made for the turn that failed (retries included).
        requests: u32,
        /// Where they went (a URL, or the replay fixture).
        target: &'a str,
    },
    Limit(&'a LimitReached),
    /// Stopped from outside, and the reason an abort command gave.
    Aborted(Option<AbortReason>, Option<&'a str>),
}

/// The line (without the `worker: ` prefix the binary adds).
pub(super) fn failure_line(failure: Failure<'_>) -> String {
    match failure {
        Failure::Fatal {
            error,
            requests,
            target,
        } => match error.kind {
            FatalErrorKind::Http
            | FatalErrorKind::Transport
            | FatalErrorKind::Stream
            | FatalErrorKind::Replay => {
                let retries = match requests.saturating_sub(1) {
                    0 => String::new(),
                    1 => " after 1 retry".to_string(),
                    n => format!(" after {n} retries"),
                };
                format!(
                    "model request to {target} failed{retries}: {}",
                    error.message
                )
            }
            FatalErrorKind::Length => {
                "the model hit the output limit (finish_reason length); raise --max-tokens or ask for less"
                    .to_string()
            }
            FatalErrorKind::ContentFilter => format!("the model stopped: {}", error.message),
            FatalErrorKind::ModelDiscovery => format!("model discovery failed: {}", error.message),
            FatalErrorKind::Auth => error.message.clone(),
            FatalErrorKind::Internal => format!("run failed: {}", error.message),
            FatalErrorKind::ContextOverflow => format!(
                "the conversation does not fit the model's context window: {}",
                error.message
            ),
            FatalErrorKind::OutputSchema => format!(
                "the final answer does not match --output-schema: {}",
                error.message
            ),
            FatalErrorKind::Dependency => error.message.clone(),
        },
        Failure::Limit(limit) => match limit.limit {
            LimitKind::MaxTurns => format!(
                "limit reached: max turns {} (the model wanted to go on)",
                limit.max_turns.unwrap_or(limit.turns)
            ),
            LimitKind::Timeout => format!(
                "limit reached: timeout {} s after {:.1} s",
                limit.timeout_ms.unwrap_or(0) as f64 / 1000.0,
                limit.elapsed_ms as f64 / 1000.0
            ),
            LimitKind::MaxToolCalls => format!(
                "limit reached: max tool calls {}",
                limit.budget_limit.unwrap_or(0.0)
            ),
            LimitKind::MaxTotalTokens => format!(
                "limit reached: max total tokens {}",
                limit.budget_limit.unwrap_or(0.0)
            ),
            LimitKind::MaxCost => format!(
                "limit reached: max cost {} USD (spent {:.4})",
                limit.budget_limit.unwrap_or(0.0),
                limit.used.unwrap_or(0.0)
            ),
            LimitKind::RepeatedFailures => format!(
                "limit reached: the same {} call failed {} times in a row (--max-repeated-failures)",
                limit.tool_name.as_deref().unwrap_or("tool"),
                limit.used.unwrap_or(0.0)
            ),
        },
        Failure::Aborted(Some(AbortReason::Command), note) => match note {
            Some(note) => format!("stopped by an abort command: {note}"),
            None => "stopped by an abort command".to_string(),
        },
        Failure::Aborted(reason, _) => match reason {
            Some(AbortReason::Interrupt) => "interrupted by SIGINT".to_string(),
            Some(AbortReason::Terminate) => "terminated by SIGTERM".to_string(),
            Some(AbortReason::OutputClosed) => "stopped: the reader closed stdout".to_string(),
            Some(AbortReason::Timeout | AbortReason::Command) | None => "aborted".to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
