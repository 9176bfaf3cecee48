//! Secret values that must never leave the process: API keys, GitHub tokens, and the
//! installation tokens minted during the run.
//!
//! One shared set per run. Tool results are redacted before the model sees them, and every
//! line the emitter writes, every recorded fixture and trace is redacted again on the way out,
//! so a token cannot escape even through a command that prints its environment.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::sync::RwLockExt;

pub const REDACTED: &str = "[REDACTED]";
/// Shorter values are ignored: redacting them would mangle ordinary text.
const MIN_LEN: usize = 6;

#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Arc<RwLock<Vec<String>>>,
}

impl Secrets {
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Self {
        let secrets = Secrets::default();
        for value in values {
            secrets.add(value);
        }
        secrets
    }

    /// Adds a value (kept longest first, so a secret containing another is replaced whole).
    pub fn add(&self, value: impl Into<String>) {
        let value = value.into();
        if value.len() < MIN_LEN {
            return;
        }
        let mut values = self.values.write_or_recover();
        if !values.contains(&value) {
            values.push(value);
            values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.values.read_or_recover().is_empty()
    }

    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let values = self.values.read_or_recover();
        let mut out = Cow::Borrowed(text);
        for secret in values.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// Redacts every string inside a JSON value.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(clean) = self.redact(text) {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_value(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn longest_secrets_win_and_short_values_are_ignored() {
        let secrets = Secrets::from_values([
            "abc".to_string(),
            "token-123".to_string(),
            "token-123456".to_string(),
        ]);
        assert_eq!(
            secrets.redact("x token-123456 y token-123 abc"),
            "x [REDACTED] y [REDACTED] abc"
        );
        secrets.add("minted-later");
        let mut value = json!({"a": ["minted-later"], "b": {"c": "ok"}});
        secrets.redact_value(&mut value);
        assert_eq!(value, json!({"a": ["[REDACTED]"], "b": {"c": "ok"}}));
    }

    #[test]
    fn clones_share_the_set() {
        let secrets = Secrets::default();
        let other = secrets.clone();
        other.add("shared-secret");
        assert_eq!(secrets.redact("shared-secret"), "[REDACTED]");
    }
}
