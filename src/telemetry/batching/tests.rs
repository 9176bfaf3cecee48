use super::*;
use std::collections::HashMap;

struct Vars(HashMap<&'static str, &'static str>);

impl Env for Vars {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|value| (*value).to_string())
    }
}

#[test]
fn the_sdk_defaults_hold_when_nothing_is_set() {
    let batching = Batching::from_env(&Vars(HashMap::new()));
    assert_eq!(
        batching,
        Batching {
            span_delay: Duration::from_millis(5000),
            max_queue: 2048,
            max_batch: 512,
            metric_interval: Duration::from_millis(60_000),
        }
    );
}

#[test]
fn the_standard_variables_set_each_value_and_nonsense_is_ignored() {
    let batching = Batching::from_env(&Vars(HashMap::from([
        ("OTEL_BSP_SCHEDULE_DELAY", " 250 "),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "1500"),
    ])));
    assert_eq!(batching.span_delay, Duration::from_millis(250));
    assert_eq!(batching.max_queue, 100);
    assert_eq!(batching.max_batch, 10);
    assert_eq!(batching.metric_interval, Duration::from_millis(1500));

    let nonsense = Batching::from_env(&Vars(HashMap::from([
        ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "0"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "-1"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "99999999999999999999999"),
    ])));
    assert_eq!(nonsense, Batching::from_env(&Vars(HashMap::new())));
}

#[test]
fn a_batch_is_never_larger_than_the_queue() {
    let batching = Batching::from_env(&Vars(HashMap::from([
        ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512"),
    ])));
    assert_eq!((batching.max_queue, batching.max_batch), (8, 8));
}
