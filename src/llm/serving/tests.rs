use super::*;
use serde_json::json;

fn usage(prompt: u64, completion: u64, cached: Option<u64>) -> WireUsage {
    serde_json::from_value(json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": cached.map(|c| json!({"cached_tokens": c})),
    }))
    .unwrap()
}

/// The shape Dynamo 1.6.1's frontend streams (ids past 2^53 included).
#[test]
fn dynamo_1_6_report_becomes_the_turn_serving() {
    let mut report = ServerReport::default();
    report.push(&json!({"worker_id": {"prefill_worker_id": 9789333173440994938u64, "prefill_dp_rank": 0,
                                          "decode_worker_id": 9789333173440994938u64, "decode_dp_rank": 0}}));
    report.push(&json!({"worker_id": {"prefill_worker_id": 9789333173440994938u64, "prefill_dp_rank": 0,
                                          "decode_worker_id": 9789333173440994938u64, "decode_dp_rank": 0},
                            "timing": {"request_received_ms": 1795451936118u64, "prefill_wait_time_ms": 3.99,
                                       "prefill_time_ms": 8.18, "ttft_ms": 12.0, "total_time_ms": 20.0,
                                       "kv_hit_rate": 0.96875, "router_queue_depth": 2}}));
    let serving = report
        .serving(Some(&usage(2010, 5, Some(1984))), Some("s:r0:t1:a1"))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&serving).unwrap(),
        json!({"requestId": "s:r0:t1:a1", "workerId": "9789333173440994938", "dpRank": 0,
                   "ttftMs": 12.0, "itlMs": 2.0, "queueMs": 3.99, "cachedTokens": 1984,
                   "kvHitRate": 0.96875, "routerQueueDepth": 2})
    );
}

#[test]
fn a_disaggregated_report_names_both_workers() {
    let mut report = ServerReport::default();
    report.push(
        &json!({"worker_id": {"prefill_worker_id": 1, "prefill_dp_rank": 3,
                                          "decode_worker_id": "2", "decode_dp_rank": 1}}),
    );
    let serving = report.serving(None, None).unwrap();
    assert_eq!(
        (serving.worker_id.as_deref(), serving.dp_rank),
        (Some("2"), Some(1))
    );
    assert_eq!(
        (
            serving.prefill_worker_id.as_deref(),
            serving.prefill_dp_rank
        ),
        (Some("1"), Some(3))
    );
}

#[test]
fn nothing_reported_is_no_report_and_odd_shapes_are_ignored() {
    let mut report = ServerReport::default();
    assert!(
        report
            .serving(Some(&usage(10, 2, None)), Some("r"))
            .is_none()
    );
    report.push(&json!({"worker_id": "w", "timing": [1, 2]}));
    report.push(&json!(null));
    assert!(report.serving(None, Some("r")).is_none());
    // A cached-token count alone is a report (any OpenAI-compatible server).
    let serving = report
        .serving(Some(&usage(10, 1, Some(0))), Some("r"))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&serving).unwrap(),
        json!({"requestId": "r", "cachedTokens": 0})
    );
}
