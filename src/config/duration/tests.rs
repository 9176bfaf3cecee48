use super::*;

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
    assert!(
        parse_duration("0")
            .unwrap_err()
            .contains("greater than zero")
    );
    assert!(
        parse_duration("soon")
            .unwrap_err()
            .contains("invalid duration 'soon'")
    );
    assert!(parse_duration("  ").is_err());
    assert!(parse_duration("1.2.3").is_err());
    // Too large for a Duration: an error, not a panic.
    assert_eq!(
        parse_duration("99999999999999999999999"),
        Err("invalid duration '99999999999999999999999'".to_string())
    );
    assert!(parse_duration("99999999999999999999999s").is_err());
    // Representable, but a deadline that far out would overflow the clock.
    assert_eq!(
        parse_duration("10000000000000000000"),
        Err(
            "duration '10000000000000000000' is longer than 36500 days, the longest allowed"
                .to_string()
        )
    );
    assert!(parse_duration("101y").is_err());
    assert_eq!(parse_duration("36500d"), Ok(LONGEST));
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_text_parses_or_is_an_error_never_a_panic(text in "\\PC{0,40}") {
            let _ = parse_duration(&text);
        }

        #[test]
        fn any_number_parses_or_is_an_error(secs in any::<f64>(), digits in "[0-9]{1,40}(\\.[0-9]{0,20})?") {
            let _ = parse_duration(&secs.to_string());
            let _ = parse_duration(&digits);
            let _ = parse_duration(&format!("{digits}ms"));
        }

        #[test]
        fn a_printed_duration_parses_back(ms in 1u64..10_000_000_000) {
            let shown = FlagDuration(Duration::from_millis(ms));
            prop_assert_eq!(shown.to_string().parse::<FlagDuration>(), Ok(shown));
        }
    }
}
