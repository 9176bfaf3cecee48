//! The run's limits from the command line, each checked before the run starts.
//!
//! A count that must be at least 1 and a money amount that must be a positive, finite number
//! are refused here with one line naming the flag (exit 2), rather than ending the run at its
//! first turn or never: `--max-cost NaN` compares false with everything, so it would never
//! stop a run. Durations are checked where they are parsed ([`crate::config::parse_duration`]).
//!
//! The model retry schedule mixes three sources field by field, as agentic-pi does: the flag
//! (or its variable), else Pi's `settings.json` `retry` block, else the defaults. A `retry`
//! block with `enabled: false` turns model retries off whatever the count says (Pi's rule).
//! Tools' own HTTP retries (web search, GitHub) follow the flags, else their short defaults;
//! `settings.json` is about model requests only.

use std::time::Duration;

use crate::config::{Limits, defaults};
use crate::http::RetryPolicy;

use super::RunArgs;
use super::pi_agent::FileRetry;

/// A limit flag's value that cannot be a limit; the message names the flag.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum LimitsError {
    /// A count of zero.
    #[error("{flag} must be at least 1")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// A budget that is not a positive, finite number.
    #[error("{flag} must be a positive number of US dollars, got {value}")]
    NotMoney {
        /// The flag.
        flag: &'static str,
        /// The value it was given.
        value: f64,
    },
}

/// The limits the flags (and Pi's retry settings) ask for, and a warning when the two
/// disagree; or the one line that says which flag is wrong.
pub(super) fn limits(
    args: &RunArgs,
    file: &FileRetry,
) -> Result<(Limits, Option<String>), LimitsError> {
    let counts = [
        ("--max-turns", args.max_turns.map(u64::from)),
        ("--max-tool-calls", args.max_tool_calls.map(u64::from)),
        ("--max-total-tokens", args.max_total_tokens),
        ("--max-tokens", args.max_tokens.map(u64::from)),
        ("--context-window", args.context_window),
        (
            "--max-repeated-failures",
            args.max_repeated_failures.map(u64::from),
        ),
    ];
    for (flag, value) in counts {
        if value == Some(0) {
            return Err(LimitsError::Zero { flag });
        }
    }
    if let Some(cost) = args.max_cost {
        money("--max-cost", cost)?;
    }
    let (max_retries, retry_base_delay, warning) = model_retry(args, file);
    let limits = Limits {
        max_turns: args.max_turns,
        timeout: args.timeout.map(|t| t.0),
        max_retries,
        retry_base_delay,
        max_tokens: args.max_tokens,
        connect_timeout: args.connect_timeout.0,
        idle_timeout: args.idle_timeout.0,
        bash_timeout_max: args.bash_timeout.0,
        max_tool_calls: args.max_tool_calls,
        max_total_tokens: args.max_total_tokens,
        max_cost: args.max_cost,
        max_repeated_failures: args.max_repeated_failures,
        context_window: args.context_window,
    };
    Ok((limits, warning))
}

/// Model request retries and their first delay: flag, else file, else default, per field.
fn model_retry(args: &RunArgs, file: &FileRetry) -> (u32, Duration, Option<String>) {
    let base_delay = args
        .retry_base_delay
        .map(|d| d.0)
        .or(file.base_delay)
        .unwrap_or(defaults::RETRY_BASE_DELAY);
    if file.enabled == Some(false) {
        let warning = args.max_retries.filter(|n| *n > 0).map(|n| {
            format!(
                "--max-retries {n} is not used: Pi's settings.json says retry.enabled false, so no model request is retried"
            )
        });
        return (0, base_delay, warning);
    }
    let max_retries = args
        .max_retries
        .or(file.max_retries)
        .unwrap_or(defaults::MAX_RETRIES);
    (max_retries, base_delay, None)
}

/// The retry policy of tools' own HTTP requests (web search, GitHub).
pub(super) fn tool_retry(args: &RunArgs) -> RetryPolicy {
    RetryPolicy::new(
        args.max_retries.unwrap_or(defaults::TOOL_MAX_RETRIES),
        tool_retry_base_delay(args),
    )
}

/// The first delay of tools' own HTTP retries.
pub(super) fn tool_retry_base_delay(args: &RunArgs) -> Duration {
    args.retry_base_delay
        .map_or(defaults::TOOL_RETRY_BASE_DELAY, |d| d.0)
}

/// A budget in US dollars: a positive, finite number.
fn money(flag: &'static str, value: f64) -> Result<(), LimitsError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(LimitsError::NotMoney { flag, value })
    }
}

#[cfg(test)]
mod tests;
