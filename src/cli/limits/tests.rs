use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};

fn checked(flags: &[&str]) -> Result<Limits, String> {
    let mut argv = vec!["worker", "run", "--model", "dynamo/m"];
    argv.extend_from_slice(flags);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(args) => limits(&args),
        _ => unreachable!(),
    }
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
