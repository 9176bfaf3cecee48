//! Durations on the command line: `90` (seconds), `90s`, `1500ms`, `5m`, `1h`, `1h30m`.

use std::time::Duration;

pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let text = raw.trim();
    if text.is_empty() {
        return Err("empty duration".to_string());
    }
    let parsed = if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        text.parse::<f64>()
            .ok()
            .filter(|secs| secs.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("invalid duration '{raw}'"))?
    } else {
        humantime::parse_duration(text).map_err(|err| {
            format!("invalid duration '{raw}' ({err}); use e.g. 90, 90s, 5m or 1h")
        })?
    };
    if parsed.is_zero() {
        return Err(format!("duration '{raw}' must be greater than zero"));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
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
    }
}
