use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};

fn args(flags: &[&str]) -> RunArgs {
    let mut argv = vec!["worker", "run", "--model", "dynamo/m"];
    argv.extend_from_slice(flags);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(args) => *args,
        _ => unreachable!(),
    }
}

fn checked(flags: &[&str]) -> Result<Limits, String> {
    limits(&args(flags), &FileRetry::default())
        .map(|(limits, _)| limits)
        .map_err(|err| err.to_string())
}

/// The model retry schedule for these flags over this `retry` block.
fn retry(flags: &[&str], file: FileRetry) -> (u32, Duration, Option<String>) {
    let (limits, warning) = limits(&args(flags), &file).unwrap();
    (limits.max_retries, limits.retry_base_delay, warning)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// The cases of agentic-pi's retry.test.ts, "resolveRetrySettings (precedence: flag > file >
// default)".

#[test]
fn retry_test_no_flags_no_file_gives_the_defaults_enabled() {
    assert_eq!(
        retry(&[], FileRetry::default()),
        (5, Duration::from_secs(4), None)
    );
}

#[test]
fn retry_test_operator_settings_win_over_the_defaults() {
    let file = FileRetry {
        enabled: None,
        max_retries: Some(10),
        base_delay: Some(ms(1000)),
    };
    assert_eq!(retry(&[], file), (10, ms(1000), None));
}

#[test]
fn retry_test_flags_win_over_file_and_defaults() {
    let file = FileRetry {
        enabled: None,
        max_retries: Some(10),
        base_delay: Some(ms(1000)),
    };
    let flags = ["--max-retries", "2", "--retry-base-delay", "500ms"];
    assert_eq!(retry(&flags, file), (2, ms(500), None));
}

#[test]
fn retry_test_flags_and_file_mix_per_field() {
    let file = FileRetry {
        enabled: None,
        max_retries: None,
        base_delay: Some(ms(3000)),
    };
    assert_eq!(retry(&["--max-retries", "7"], file), (7, ms(3000), None));
}

#[test]
fn retry_test_max_retries_zero_is_respected() {
    assert_eq!(retry(&["--max-retries", "0"], FileRetry::default()).0, 0);
}

#[test]
fn retry_test_enabled_false_means_no_retries_and_a_flag_asking_for_some_is_told() {
    let off = FileRetry {
        enabled: Some(false),
        max_retries: None,
        base_delay: None,
    };
    assert_eq!(retry(&[], off.clone()), (0, Duration::from_secs(4), None));
    // A flag asking for none agrees with the file: nothing to tell.
    assert_eq!(
        retry(&["--max-retries", "0"], off.clone()),
        (0, Duration::from_secs(4), None)
    );
    let (count, _, warning) = retry(&["--max-retries", "3"], off);
    assert_eq!(count, 0);
    assert_eq!(
        warning.as_deref(),
        Some(
            "--max-retries 3 is not used: Pi's settings.json says retry.enabled false, so no model request is retried"
        )
    );
}

#[test]
fn tools_keep_their_short_retry_schedule_unless_the_flags_say_otherwise() {
    let policy = tool_retry(&args(&[]));
    assert_eq!(
        (policy.max_retries, policy.base_delay),
        (3, Duration::from_secs(1))
    );
    let policy = tool_retry(&args(&["--max-retries", "1", "--retry-base-delay", "10ms"]));
    assert_eq!((policy.max_retries, policy.base_delay), (1, ms(10)));
}

#[test]
fn a_cost_budget_must_be_a_positive_finite_number() {
    for (given, shown) in [
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("1e309", "inf"),
        ("-1", "-1"),
        ("0", "0"),
    ] {
        assert_eq!(
            checked(&["--max-cost", given]).unwrap_err(),
            format!("--max-cost must be a positive number of US dollars, got {shown}"),
            "{given}"
        );
    }
    assert_eq!(
        checked(&["--max-cost", "0.25"]).unwrap().max_cost,
        Some(0.25)
    );
}

#[test]
fn a_count_must_be_at_least_one() {
    for flag in [
        "--max-turns",
        "--max-tool-calls",
        "--max-total-tokens",
        "--max-tokens",
        "--context-window",
    ] {
        assert_eq!(
            checked(&[flag, "0"]).unwrap_err(),
            format!("{flag} must be at least 1")
        );
        assert!(checked(&[flag, "1"]).is_ok(), "{flag}");
    }
}

#[test]
fn the_flags_become_the_limits() {
    let limits = checked(&["--max-tool-calls", "7", "--timeout", "90s"]).unwrap();
    assert_eq!(limits.max_tool_calls, Some(7));
    assert_eq!(limits.timeout, Some(std::time::Duration::from_secs(90)));
}

/// retry.test.ts, "default schedule rides out a ~60s window (final wait >= 60s)", with the
/// jitter drawn many times.
#[test]
fn retry_test_the_default_schedule_rides_out_a_60s_window() {
    let (limits, _) = limits(&args(&[]), &FileRetry::default()).unwrap();
    let policy = RetryPolicy::new(limits.max_retries, limits.retry_base_delay);
    for _ in 0..100 {
        let last = policy.delay(limits.max_retries, None);
        assert!(last >= Duration::from_secs(60), "{last:?}");
    }
}
