use super::*;

/// The parse, with the error as its message.
fn parsed(raw: &str) -> Result<Duration, String> {
    parse_duration(raw).map_err(|err| err.to_string())
}

#[test]
fn accepts_bare_seconds_and_unit_suffixes() {
    assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
}

#[test]
fn flag_durations_print_as_they_are_typed() {
    assert_eq!(FlagDuration(Duration::from_secs(600)).to_string(), "600s");
    assert_eq!(
        FlagDuration(Duration::from_millis(1500)).to_string(),
        "1500ms"
    );
    assert_eq!("5m".parse(), Ok(FlagDuration(Duration::from_secs(300))));
}

#[test]
fn rejects_zero_garbage_and_empty() {
    assert!(parsed("0").unwrap_err().contains("greater than zero"));
    assert!(
        parsed("soon")
            .unwrap_err()
            .contains("invalid duration 'soon'")
    );
    assert_eq!(parsed("  "), Err("empty duration".to_string()));
    assert_eq!(parsed("1.2.3"), Err("invalid duration '1.2.3'".to_string()));
    // Too large for a Duration: an error, not a panic.
    assert_eq!(
        parsed("99999999999999999999999"),
        Err("invalid duration '99999999999999999999999'".to_string())
    );
    assert!(
        parsed("99999999999999999999999s")
            .unwrap_err()
            .starts_with("invalid duration '99999999999999999999999s' (")
    );
    // Representable, but a deadline that far out would overflow the clock.
    assert_eq!(
        parsed("10000000000000000000"),
        Err(
            "duration '10000000000000000000' is longer than 36500 days, the longest allowed"
                .to_string()
        )
    );
    assert!(
        parsed("101y")
            .unwrap_err()
            .contains("longer than 36500 days")
    );
    assert_eq!(parsed("36500d"), Ok(LONGEST));
}

mod props {
    use super::super::*;
    use super::parsed;
    use proptest::prelude::*;

    /// Every outcome of parsing is either a duration inside (0, LONGEST] or an error that names
    /// the text it rejects (blank text is the one error that has nothing to name).
    fn assert_bounded_or_named(text: &str) {
        match parsed(text) {
            Ok(parsed) => {
                assert!(!parsed.is_zero(), "{text:?} parsed as zero");
                assert!(parsed <= LONGEST, "{text:?} parsed as {parsed:?}");
            }
            Err(message) if text.trim().is_empty() => assert_eq!(message, "empty duration"),
            Err(message) => assert!(
                message.contains(&format!("'{text}'")),
                "{text:?}: {message}"
            ),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_text_parses_within_bounds_or_names_itself(text in "\\PC{0,40}") {
            assert_bounded_or_named(&text);
        }

        #[test]
        fn any_number_parses_within_bounds_or_names_itself(secs in any::<f64>(), digits in "[0-9]{1,40}(\\.[0-9]{0,20})?") {
            assert_bounded_or_named(&secs.to_string());
            assert_bounded_or_named(&digits);
            assert_bounded_or_named(&format!("{digits}ms"));
        }

        #[test]
        fn bare_seconds_agree_with_float_parsing(digits in "[0-9]{1,12}(\\.[0-9]{0,9})?") {
            let secs: f64 = digits.parse().map_err(|err| TestCaseError::fail(format!("{err}")))?;
            match parsed(&digits) {
                Ok(parsed) => {
                    let error = (parsed.as_secs_f64() - secs).abs();
                    prop_assert!(error <= secs * 1e-9 + 1e-9, "{digits} parsed as {parsed:?}");
                }
                Err(message) => prop_assert!(secs == 0.0 || Duration::from_secs_f64(secs) > LONGEST, "{digits}: {message}"),
            }
        }

        #[test]
        fn a_printed_duration_parses_back(ms in 1u64..10_000_000_000) {
            let shown = FlagDuration(Duration::from_millis(ms));
            prop_assert_eq!(shown.to_string().parse::<FlagDuration>(), Ok(shown));
        }
    }
}
