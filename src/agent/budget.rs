//! Budgets that wrap up instead of cutting off: turns, time, tool calls, tokens and cost.
//!
//! At 80% of a budget the next request carries a note (a user message, also printed as
//! `budget_warning`) saying what is left and asking the model to finish: summarize what is
//! done and what remains. At 100% the run stops with `limit_reached` (exit 3), so the last
//! assistant text is the wrap-up rather than a sentence cut in half.

use std::time::Duration;

use crate::config::Limits;
use crate::events::{BudgetWarning, LimitKind, UsageStats};

/// The share of a budget that triggers the wrap-up note.
const WARN_AT: f64 = 0.8;

/// Which budgets have had their note.
#[derive(Debug, Default)]
pub(super) struct Budgets {
    warned: Vec<LimitKind>,
}

impl Budgets {
    /// The budget a run has used up (turns and time are checked where they always were).
    pub(super) fn exhausted(limits: &Limits, stats: &UsageStats) -> Option<LimitKind> {
        if limits
            .max_tool_calls
            .is_some_and(|max| stats.tool_calls >= max)
        {
            return Some(LimitKind::MaxToolCalls);
        }
        if limits
            .max_total_tokens
            .is_some_and(|max| stats.tokens.total >= max)
        {
            return Some(LimitKind::MaxTotalTokens);
        }
        if limits.max_cost.is_some_and(|max| stats.cost >= max) {
            return Some(LimitKind::MaxCost);
        }
        None
    }

    /// Notes for budgets that crossed 80% since the last call (each one once).
    pub(super) fn warnings(
        &mut self,
        limits: &Limits,
        stats: &UsageStats,
        turns_done: u32,
        elapsed: Duration,
    ) -> Vec<BudgetWarning> {
        let candidates = [
            (
                LimitKind::MaxTurns,
                f64::from(turns_done),
                limits.max_turns.map(f64::from),
                "model turns",
            ),
            (
                LimitKind::Timeout,
                elapsed.as_secs_f64(),
                limits.timeout.map(|t| t.as_secs_f64()),
                "seconds",
            ),
            (
                LimitKind::MaxToolCalls,
                f64::from(stats.tool_calls),
                limits.max_tool_calls.map(f64::from),
                "tool calls",
            ),
            (
                LimitKind::MaxTotalTokens,
                stats.tokens.total as f64,
                limits.max_total_tokens.map(|t| t as f64),
                "tokens",
            ),
            (
                LimitKind::MaxCost,
                stats.cost,
                limits.max_cost,
                "US dollars",
            ),
        ];
        let mut notes = Vec::new();
        for (kind, used, limit, unit) in candidates {
            let Some(limit) = limit.filter(|l| *l > 0.0) else {
                continue;
            };
            if used < WARN_AT * limit || self.warned.contains(&kind) {
                continue;
            }
            self.warned.push(kind);
            let shown = |v: f64| {
                if kind == LimitKind::MaxCost {
                    format!("{v:.4}")
                } else {
                    format!("{:.0}", v.round())
                }
            };
            let message = format!(
                "Budget note: {} of {} {unit} used ({} left). Finish now: do not start new work; summarize what is done and what remains.",
                shown(used),
                shown(limit),
                shown((limit - used).max(0.0)),
            );
            notes.push(BudgetWarning {
                budget: kind,
                used,
                limit,
                message,
            });
        }
        notes
    }
}

#[cfg(test)]
mod tests;
