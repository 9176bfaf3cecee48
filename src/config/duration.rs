//! Durations on the command line: `90` (seconds), `90s`, `1500ms`, `5m`, `1h`, `1h30m`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration flag's value: parsed by [`parse_duration`], shown as `90s` or `1500ms`, so a
/// default written as a [`Duration`] constant is also what `--help` and the README print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagDuration(pub Duration);

impl FromStr for FlagDuration {
    type Err = DurationError;

    fn from_str(raw: &str) -> Result<Self, DurationError> {
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

/// Why a duration was refused; each message names the text as it was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    /// Nothing but whitespace.
    #[error("empty duration")]
    Empty,
    /// A bare number that is not a number of seconds a [`Duration`] holds.
    #[error("invalid duration '{raw}'")]
    InvalidSeconds {
        /// The text as given.
        raw: String,
    },
    /// Text with units that is not a duration.
    #[error("invalid duration '{raw}' ({source}); use e.g. 90, 90s, 5m or 1h")]
    Invalid {
        /// The text as given.
        raw: String,
        /// Why the units did not parse.
        #[source]
        source: humantime::DurationError,
    },
    /// A duration of zero.
    #[error("duration '{raw}' must be greater than zero")]
    Zero {
        /// The text as given.
        raw: String,
    },
    /// A duration beyond [`LONGEST`].
    #[error("duration '{raw}' is longer than {} days, the longest allowed", LONGEST.as_secs() / 86_400)]
    TooLong {
        /// The text as given.
        raw: String,
    },
}

/// Parses a duration flag: seconds as a bare number (`90`, `1.5`) or with units (`90s`, `1500ms`,
/// `5m`, `1h30m`). Zero and anything longer than 100 years are errors; the message says why.
pub fn parse_duration(raw: &str) -> Result<Duration, DurationError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let raw = || raw.to_string();
    let parsed = if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        text.parse::<f64>()
            .ok()
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .ok_or_else(|| DurationError::InvalidSeconds { raw: raw() })?
    } else {
        humantime::parse_duration(text)
            .map_err(|source| DurationError::Invalid { raw: raw(), source })?
    };
    if parsed.is_zero() {
        return Err(DurationError::Zero { raw: raw() });
    }
    if parsed > LONGEST {
        return Err(DurationError::TooLong { raw: raw() });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests;
