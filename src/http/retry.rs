//! When to try a failed request again, and how long to wait first: one rule for every HTTP
//! caller (the model, model discovery, the web providers, GitHub).
//!
//! Exponential backoff (base · 2^(n-1), capped) with up to 25% added jitter so a fleet of workers that
//! failed together does not retry together. A server's `Retry-After` wins over the schedule,
//! within a ceiling: a header asking for an hour is not a reason to sleep for an hour.

use std::time::Duration;

/// When to try a failed HTTP request again and how long to wait first: an exponential schedule with
/// jitter, or the server's `Retry-After` up to a ceiling.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first try; 0 never retries.
    pub max_retries: u32,
    /// The wait before the first retry; each later one doubles it.
    pub base_delay: Duration,
    /// The cap on a scheduled wait, before up to 25% jitter is added.
    pub max_delay: Duration,
    /// The longest `Retry-After` that is honoured as given.
    pub max_server_delay: Duration,
}

impl RetryPolicy {
    /// The longest scheduled wait: above the default schedule's last (64 s), so that wait
    /// outlasts a per-minute rate-limit window.
    pub const MAX_DELAY: Duration = Duration::from_secs(120);
    /// The longest `Retry-After` honoured as given.
    pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(120);

    /// A policy of `max_retries` retries starting at `base_delay`, with the default ceilings
    /// ([`RetryPolicy::MAX_DELAY`], [`RetryPolicy::MAX_SERVER_DELAY`]).
    pub fn new(max_retries: u32, base_delay: Duration) -> Self {
        RetryPolicy {
            max_retries,
            base_delay,
            max_delay: Self::MAX_DELAY,
            max_server_delay: Self::MAX_SERVER_DELAY,
        }
    }

    /// The wait before the next try, after `retries` retries so far, or `None` when the
    /// failure is not transient or the retries are spent. The one place a retry is decided.
    pub fn next_wait(
        &self,
        retries: u32,
        transient: bool,
        server_hint: Option<Duration>,
    ) -> Option<Duration> {
        (transient && retries < self.max_retries).then(|| self.delay(retries + 1, server_hint))
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

/// Whether a response status is worth another try: a request timeout, a rate limit or a
/// server error. Everything else (a refused key, a bad request, a missing model) would fail the
/// same way again.
pub fn transient_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// A response's `Retry-After`, read as [`parse_retry_after`] reads it.
pub fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(parse_retry_after)
}

/// `Retry-After: 3` or `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return server_seconds(secs);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
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

/// A factor in [1.0, 1.25), from the OS random source uuid already uses. Only ever later
/// than the schedule: the schedule is a promise (the last default wait outlasts a 60 s
/// window), and jitter must not break it.
fn jitter() -> f64 {
    let random = (uuid::Uuid::new_v4().as_u128() % 10_000) as f64 / 10_000.0;
    1.0 + 0.25 * random
}

#[cfg(test)]
mod tests;
