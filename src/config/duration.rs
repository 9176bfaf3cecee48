//! Durations on the command line: `90` (seconds), `90s`, `1500ms`, `5m`, `1h`, `1h30m`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration flag's value: parsed by [`parse_duration`], shown as `90s` or `1500ms`, so a
/// default written as a [`Duration`] constant is also what `--help` and the README print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagDuration(pub Duration);

impl FromStr for FlagDuration {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        parse_duration(raw).map(FlagDuration)
    }
}

impl fmt::Display for FlagDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.subsec_nanos() == 0 {
            write!(f, "{}s", self.0.as_secs())
        } else {
            write!(f, "{}ms", self.0.as_millis())
        }
    }
}

/// The longest duration a flag may give (100 years): far beyond any run, and far enough from the limits
/// of the clock that a deadline computed from it never overflows.
pub(super) const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// Parses a duration flag: seconds as a bare number (`90`, `1.5`) or with units (`90s`, `1500ms`,
/// `5m`, `1h30m`). Zero and anything longer than 100 years are errors; the message says why.
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let text = raw.trim();
    if text.is_empty() {
        return Err("empty duration".to_string());
    }
    let parsed = if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        text.parse::<f64>()
            .ok()
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .ok_or_else(|| format!("invalid duration '{raw}'"))?
    } else {
        humantime::parse_duration(text).map_err(|err| {
            format!("invalid duration '{raw}' ({err}); use e.g. 90, 90s, 5m or 1h")
        })?
    };
    if parsed.is_zero() {
        return Err(format!("duration '{raw}' must be greater than zero"));
    }
    if parsed > LONGEST {
        return Err(format!(
            "duration '{raw}' is longer than {} days, the longest allowed",
            LONGEST.as_secs() / 86_400
        ));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests;
