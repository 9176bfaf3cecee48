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
