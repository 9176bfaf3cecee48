//! Lenient argument fields: models often send `"10"` for 10 or `"true"` for true. These
//! accept both forms (and `null` as absent) and reject anything else with a clear message.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub fn opt_u64<'de, D: Deserializer<'de>>(de: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(value) => as_u64(&value).map(Some).ok_or_else(|| {
            D::Error::custom(format!("expected a non-negative integer, got {value}"))
        }),
    }
}

pub fn opt_f64<'de, D: Deserializer<'de>>(de: D) -> Result<Option<f64>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(value) => as_f64(&value)
            .filter(|n| n.is_finite())
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("expected a number, got {value}"))),
    }
}

pub fn opt_bool<'de, D: Deserializer<'de>>(de: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(value) => Err(D::Error::custom(format!("expected a boolean, got {value}"))),
    }
}

fn as_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_u64(value: &Value) -> Option<u64> {
    if let Value::Number(n) = value
        && let Some(n) = n.as_u64()
    {
        return Some(n);
    }
    let float = as_f64(value)?;
    (float >= 0.0 && float.fract() == 0.0 && float <= u64::MAX as f64).then_some(float as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    struct P {
        #[serde(default, deserialize_with = "opt_u64")]
        n: Option<u64>,
        #[serde(default, deserialize_with = "opt_bool")]
        b: Option<bool>,
    }

    #[test]
    fn numbers_and_booleans_may_arrive_as_strings() {
        let p: P = serde_json::from_value(json!({"n": "10", "b": "TRUE"})).unwrap();
        assert_eq!(
            p,
            P {
                n: Some(10),
                b: Some(true)
            }
        );
        let p: P = serde_json::from_value(json!({"n": 3.0, "b": null})).unwrap();
        assert_eq!(
            p,
            P {
                n: Some(3),
                b: None
            }
        );
        let p: P = serde_json::from_value(json!({})).unwrap();
        assert_eq!(p, P { n: None, b: None });
    }

    #[test]
    fn negative_fractional_and_wrong_types_are_rejected() {
        for bad in [
            json!({"n": -1}),
            json!({"n": 1.5}),
            json!({"n": "x"}),
            json!({"b": 1}),
        ] {
            assert!(serde_json::from_value::<P>(bad.clone()).is_err(), "{bad}");
        }
        let err = serde_json::from_value::<P>(json!({"n": "ten"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected a non-negative integer, got \"ten\""
        );
    }
}
