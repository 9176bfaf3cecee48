use super::*;

#[test]
fn delays_double_within_jitter_and_are_capped() {
    let policy = RetryPolicy::new(5, Duration::from_secs(1));
    for (retry, nominal) in [(1, 1.0), (2, 2.0), (3, 4.0), (8, 120.0)] {
        let delay = policy.delay(retry, None).as_secs_f64();
        assert!(
            delay >= nominal && delay < nominal * 1.25,
            "retry {retry}: {delay}"
        );
    }
}

#[test]
fn retry_after_wins_up_to_a_ceiling() {
    let policy = RetryPolicy::new(3, Duration::from_secs(1));
    assert_eq!(
        policy.delay(1, Some(Duration::from_secs(7))),
        Duration::from_secs(7)
    );
    assert_eq!(
        policy.delay(1, Some(Duration::from_secs(3600))),
        Duration::from_secs(120)
    );
}
