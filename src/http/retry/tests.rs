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

#[test]
fn retry_after_accepts_seconds_and_dates() {
    assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
    assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
        Some(Duration::ZERO)
    );
    assert_eq!(parse_retry_after("soon"), None);
    assert_eq!(parse_retry_after("-1"), None);
    assert_eq!(parse_retry_after("NaN"), None);
    // Absurd values saturate instead of panicking; the retry policy caps them.
    assert_eq!(parse_retry_after("1e308"), Some(Duration::MAX));
    assert_eq!(parse_retry_after("inf"), Some(Duration::MAX));
    assert_eq!(
        parse_retry_after("99999999999999999999"),
        Some(Duration::MAX)
    );
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_retry_after_value_is_a_delay_or_none(text in "\\PC{0,40}", secs in any::<f64>()) {
            // A delay only from a number or an HTTP date; surrounding blanks change nothing.
            let delay = parse_retry_after(&text);
            let number_or_date = text.trim().parse::<f64>().is_ok()
                || httpdate::parse_http_date(text.trim()).is_ok();
            prop_assert!(delay.is_none() || number_or_date, "{text:?} read as {delay:?}");
            let padded = parse_retry_after(&format!(" {text}\t"));
            if text.trim().parse::<f64>().is_ok() {
                prop_assert_eq!(padded, delay);
            } else {
                // A date's delay counts down between the two calls.
                prop_assert_eq!(padded.is_some(), delay.is_some());
            }
            let parsed = parse_retry_after(&secs.to_string());
            prop_assert_eq!(parsed.is_some(), secs >= 0.0 && !secs.is_nan());
            prop_assert_eq!(parse_retry_after(&format!(" {secs}\t")), parsed);
        }
    }
}

#[test]
fn timeouts_rate_limits_and_server_errors_are_transient_nothing_else() {
    for status in [408, 429, 500, 502, 503, 504, 529, 599] {
        assert!(transient_status(status), "{status}");
    }
    for status in [200, 301, 400, 401, 403, 404, 407, 409, 422, 428, 430, 600] {
        assert!(!transient_status(status), "{status}");
    }
}

#[test]
fn a_retry_is_decided_by_transience_and_the_count_alone() {
    let policy = RetryPolicy::new(2, Duration::from_millis(100));
    let hint = Some(Duration::from_secs(3));
    assert_eq!(
        policy.next_wait(0, true, hint),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        policy.next_wait(1, true, hint),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        policy.next_wait(2, true, hint),
        None,
        "the retries are spent"
    );
    assert_eq!(policy.next_wait(0, false, hint), None, "not transient");
    // Without a hint, the schedule of the retry about to be made.
    let second = policy.next_wait(1, true, None).unwrap();
    assert!(second >= Duration::from_millis(200) && second < Duration::from_millis(250));
    assert_eq!(
        RetryPolicy::new(0, Duration::ZERO).next_wait(0, true, None),
        None
    );
}

#[test]
fn retry_after_is_read_from_the_headers() {
    let mut headers = http::HeaderMap::new();
    assert_eq!(retry_after(&headers), None);
    headers.insert("retry-after", http::HeaderValue::from_static("7"));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    headers.insert("retry-after", http::HeaderValue::from_static("later"));
    assert_eq!(retry_after(&headers), None);
}
