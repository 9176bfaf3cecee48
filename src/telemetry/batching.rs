//! How telemetry is batched: the standard `OTEL_BSP_*` and `OTEL_METRIC_EXPORT_INTERVAL`
//! variables, with the SDK's defaults.

use std::time::Duration;

use crate::config::Env;

/// How spans are batched and how often metrics are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// The longest an ended span waits before it is sent.
    pub span_delay: Duration,
    /// The most spans waiting; more are dropped.
    pub max_queue: usize,
    /// The most spans one export carries.
    pub max_batch: usize,
    /// How often metrics are sent during a run.
    pub metric_interval: Duration,
}

impl Default for Batching {
    fn default() -> Batching {
        Batching {
            span_delay: Duration::from_secs(5),
            max_queue: 2048,
            max_batch: 512,
            metric_interval: Duration::from_secs(60),
        }
    }
}

impl Batching {
    /// The standard variables' values, where set to a positive number.
    pub fn from_env(env: &dyn Env) -> Batching {
        let number = |name: &str| {
            env.get(name)
                .and_then(|value| value.trim().parse::<u64>().ok())
                .filter(|&n| n > 0)
        };
        let defaults = Batching::default();
        let count = |name: &str, default: usize| {
            number(name).map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        let max_queue = count("OTEL_BSP_MAX_QUEUE_SIZE", defaults.max_queue);
        Batching {
            span_delay: number("OTEL_BSP_SCHEDULE_DELAY")
                .map_or(defaults.span_delay, Duration::from_millis),
            max_queue,
            // A batch larger than the queue could never fill.
            max_batch: count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaults.max_batch).min(max_queue),
            metric_interval: number("OTEL_METRIC_EXPORT_INTERVAL")
                .map_or(defaults.metric_interval, Duration::from_millis),
        }
    }
}

#[cfg(test)]
mod tests;
