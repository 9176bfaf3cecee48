//! Lenient argument types: models often send `"10"` for 10, `"true"` for true, or a list as
//! `"a, b"`. Each type here accepts those forms (and `null` as absent), rejects anything else
//! with a clear message, and carries the JSON Schema the model is shown for it, so the
//! coercion and the schema are defined together, once, for every tool.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Implements `JsonSchema` for a lenient type as an inline schema.
macro_rules! inline_schema {
    ($type:ty, $schema:tt) => {
        impl JsonSchema for $type {
            fn schema_name() -> Cow<'static, str> {
                stringify!($type).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

/// A non-negative whole number: `10`, `10.0` or `"10"`. Shown to the model as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u64);

inline_schema!(Count, {"type": "number"});

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(de)?;
        as_u64(&value).map(Count).ok_or_else(|| {
            D::Error::custom(format!("expected a non-negative integer, got {value}"))
        })
    }
}

/// A finite number: `1.5` or `"1.5"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number(pub f64);

inline_schema!(Number, {"type": "number"});

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(de)?;
        as_f64(&value)
            .filter(|n| n.is_finite())
            .map(Number)
            .ok_or_else(|| D::Error::custom(format!("expected a number, got {value}")))
    }
}

/// A boolean: `true` or `"true"` (any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

inline_schema!(Flag, {"type": "boolean"});

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        match Value::deserialize(de)? {
            Value::Bool(b) => Ok(Flag(b)),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(Flag(true)),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(Flag(false)),
            value => Err(D::Error::custom(format!("expected a boolean, got {value}"))),
        }
    }
}

/// A required, non-empty string; a number is taken as its decimal text (`42` for a name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

inline_schema!(Text, {"type": "string"});

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        match as_text(Value::deserialize(de)?).map_err(D::Error::custom)? {
            Some(text) => Ok(Text(text)),
            None => Err(D::Error::custom("required (a non-empty string)")),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// An optional string where absent, `null` and `""` all mean "not given". Use with
/// `#[serde(default)]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptText(pub Option<String>);

inline_schema!(OptText, {"type": "string"});

impl<'de> Deserialize<'de> for OptText {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        as_text(Value::deserialize(de)?)
            .map(OptText)
            .map_err(D::Error::custom)
    }
}

impl OptText {
    /// The string, `None` when it was not given.
    pub fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// A required, non-empty list of strings; `"bug, ui"` is taken as `["bug", "ui"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List(pub Vec<String>);

inline_schema!(List, {"type": "array", "items": {"type": "string"}});

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        match as_list(Value::deserialize(de)?).map_err(D::Error::custom)? {
            Some(list) if !list.is_empty() => Ok(List(list)),
            _ => Err(D::Error::custom("required (a non-empty list of strings)")),
        }
    }
}

/// An optional list of strings: absent and `null` are `None`; `[]` is an explicit empty list
/// (e.g. to clear labels). Use with `#[serde(default)]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptList(pub Option<Vec<String>>);

inline_schema!(OptList, {"type": "array", "items": {"type": "string"}});

impl<'de> Deserialize<'de> for OptList {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        as_list(Value::deserialize(de)?)
            .map(OptList)
            .map_err(D::Error::custom)
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
    let whole = float >= 0.0 && float.fract() == 0.0 && float <= u64::MAX as f64;
    #[allow(
        clippy::cast_sign_loss,
        reason = "checked to be a whole number >= 0 first"
    )]
    let number = float as u64;
    whole.then_some(number)
}

/// `None` for null and blank strings.
fn as_text(value: Value) -> Result<Option<String>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Number(n) => Ok(Some(n.to_string())),
        _ => Err("expected a string"),
    }
}

fn as_list(value: Value) -> Result<Option<Vec<String>>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                _ => Err("expected a list of strings"),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Value::String(s) => Ok(Some(
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        )),
        _ => Err("expected a list of strings"),
    }
}

#[cfg(test)]
mod tests;
