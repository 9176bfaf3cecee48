//! The run's limits from the command line, each checked before the run starts.
//!
//! A count that must be at least 1 and a money amount that must be a positive, finite number
//! are refused here with one line naming the flag (exit 2), rather than ending the run at its
//! first turn or never: `--max-cost NaN` compares false with everything, so it would never
//! stop a run. Durations are checked where they are parsed ([`crate::config::parse_duration`]).

use crate::config::Limits;

use super::RunArgs;

/// The limits the flags ask for, or the one line that says which flag is wrong.
pub fn limits(args: &RunArgs) -> Result<Limits, String> {
    let counts = [
        ("--max-turns", args.max_turns.map(u64::from)),
        ("--max-tool-calls", args.max_tool_calls.map(u64::from)),
        ("--max-total-tokens", args.max_total_tokens),
        ("--max-tokens", args.max_tokens.map(u64::from)),
        ("--context-window", args.context_window),
    ];
    for (flag, value) in counts {
        if value == Some(0) {
            return Err(format!("{flag} must be at least 1"));
        }
    }
    if let Some(cost) = args.max_cost {
        money("--max-cost", cost)?;
    }
    Ok(Limits {
        max_turns: args.max_turns,
        timeout: args.timeout.map(|t| t.0),
        max_retries: args.max_retries,
        retry_base_delay: args.retry_base_delay.0,
        max_tokens: args.max_tokens,
        connect_timeout: args.connect_timeout.0,
        idle_timeout: args.idle_timeout.0,
        bash_timeout_max: args.bash_timeout.0,
        max_tool_calls: args.max_tool_calls,
        max_total_tokens: args.max_total_tokens,
        max_cost: args.max_cost,
        context_window: args.context_window,
    })
}

/// A budget in US dollars: a positive, finite number.
fn money(flag: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{flag} must be a positive number of US dollars, got {value}"
        ))
    }
}

#[cfg(test)]
mod tests;
