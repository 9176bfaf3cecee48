//! The built-in tools' parameter schemas, stored as derived.
//!
//! Every run sends every active tool's schema with its first request, and deriving them with
//! `schemars` (a tree of JSON values built per field, then its transforms) was the largest piece
//! of a run's own work before that request: a tenth of a short replayed run's instructions. The
//! argument types stay the one source of truth: `parameters.jsonl` holds what
//! [`super::define::derive_parameters`] makes for each built-in tool's type, one line per type
//! keyed by its Rust type name, and a test fails when any line differs from a fresh derivation
//! (`WORKER_BLESS=src/tools/parameters.jsonl cargo test --lib stored` rewrites it and prints the
//! diff). Requests carry the stored text as it is ([`super::Tool::parameters_text`]): a run
//! neither derives nor parses the built-in schemas. A type with no line (an extension's tool, or
//! a tool added without blessing) has its schema derived, as before: a missing line costs time,
//! never correctness.

use serde_json::Value;

/// `{"args":"<type name>","parameters":<schema>}` per line.
const STORED: &str = include_str!("parameters.jsonl");

/// The stored schema of the argument type named `type_name`, as the text requests carry.
pub(super) fn text(type_name: &str) -> Option<&'static str> {
    STORED.lines().find_map(|line| {
        line.strip_prefix(r#"{"args":""#)?
            .strip_prefix(type_name)?
            .strip_prefix(r#"","parameters":"#)?
            .strip_suffix('}')
    })
}

/// The stored schema of the argument type named `type_name`, as a value.
pub(super) fn parameters(type_name: &str) -> Option<Value> {
    serde_json::from_str(text(type_name)?).ok()
}

#[cfg(test)]
mod tests;
