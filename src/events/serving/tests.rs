use super::*;
use serde_json::json;

#[test]
fn totals_average_only_what_was_reported() {
    let mut totals = ServingTotals::default();
    totals.add(
        &Serving {
            worker_id: Some("7".into()),
            ttft_ms: Some(10.0),
            cached_tokens: Some(0),
            ..Serving::default()
        },
        100,
    );
    totals.add(
        &Serving {
            worker_id: Some("7".into()),
            ttft_ms: Some(4.0),
            queue_ms: Some(1.5),
            cached_tokens: Some(96),
            ..Serving::default()
        },
        120,
    );
    // A report without a cached count adds no prompt tokens to the ratio.
    totals.add(
        &Serving {
            worker_id: Some("8".into()),
            ..Serving::default()
        },
        1000,
    );
    assert_eq!(
        serde_json::to_value(&totals).unwrap(),
        json!({"requests": 3, "promptTokens": 220, "cachedTokens": 96, "cachedRatio": 0.4364,
                   "meanTtftMs": 7.0, "meanQueueMs": 1.5, "workers": 2})
    );
}

#[test]
fn an_empty_report_serializes_to_an_empty_object() {
    assert_eq!(serde_json::to_value(Serving::default()).unwrap(), json!({}));
}
