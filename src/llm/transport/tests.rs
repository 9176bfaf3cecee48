use super::*;

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
            let _ = parse_retry_after(&text);
            let parsed = parse_retry_after(&secs.to_string());
            prop_assert_eq!(parsed.is_some(), secs >= 0.0 && !secs.is_nan());
        }
    }
}
