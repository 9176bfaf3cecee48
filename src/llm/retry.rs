//! When to try a failed model request again, and how long to wait first.
//!
//! Exponential backoff (base · 2^(n-1), capped) with ±20% jitter so a fleet of workers that
//! failed together does not retry together. A server's `Retry-After` wins over the schedule,
//! within a ceiling: a header asking for an hour is not a reason to sleep for an hour.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// The longest `Retry-After` that is honoured as given.
    pub max_server_delay: Duration,
}

impl RetryPolicy {
    pub fn new(max_retries: u32, base_delay: Duration) -> Self {
        RetryPolicy {
            max_retries,
            base_delay,
            max_delay: Duration::from_secs(30),
            max_server_delay: Duration::from_secs(120),
        }
    }

    /// The wait before retry number `retry` (1 for the first retry).
    pub fn delay(&self, retry: u32, server_hint: Option<Duration>) -> Duration {
        if let Some(hint) = server_hint {
            return hint.min(self.max_server_delay);
        }
        let exponent = retry.saturating_sub(1).min(20);
        let scheduled = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        scheduled.mul_f64(jitter())
    }
}

/// A server-supplied delay in seconds as a `Duration`: `None` for negative or not-a-number
/// values, saturating (not panicking) for ones too large to represent. [`RetryPolicy::delay`]
/// caps it anyway.
pub fn server_seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// A factor in [0.8, 1.2), from the OS random source uuid already uses.
fn jitter() -> f64 {
    let random = (uuid::Uuid::new_v4().as_u128() % 10_000) as f64 / 10_000.0;
    0.8 + 0.4 * random
}

#[cfg(test)]
mod tests;
