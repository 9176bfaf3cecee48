//! Trimming GitHub's JSON to what a model needs.
//!
//! API objects repeat dozens of `*_url` links, node ids, avatars and reaction counts; a
//! single issue list can be mostly noise. Kept: numbers, titles, states, bodies, `html_url`,
//! authors (as their login), labels, timestamps, refs, shas. Dropped: API links (`*_url`
//! except `html_url`, `clone_url` and `download_url`, and `url` where `html_url` exists),
//! `node_id`, avatars, reactions, `_links`, and nulls that say nothing.

use serde_json::{Map, Value};

const DROP: [&str; 9] = [
    "node_id",
    "gravatar_id",
    "_links",
    "reactions",
    "performed_via_github_app",
    "user_view_type",
    "sub_issues_summary",
    "issue_dependencies_summary",
    "security_and_analysis",
];
const KEEP_URLS: [&str; 3] = ["html_url", "clone_url", "download_url"];
/// Nulls that carry meaning (not merged, not closed).
const KEEP_NULL: [&str; 4] = ["merged_at", "closed_at", "merged", "mergeable"];

pub(super) fn trim(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(trim).collect()),
        Value::Object(map) => trim_object(map),
        other => other,
    }
}

fn trim_object(map: Map<String, Value>) -> Value {
    if is_account(&map) {
        let mut account = Map::new();
        account.insert("login".into(), map["login"].clone());
        if map.get("type").and_then(Value::as_str) == Some("Bot") {
            account.insert("type".into(), Value::String("Bot".into()));
        }
        return Value::Object(account);
    }
    let has_html_url = map.contains_key("html_url");
    let mut out = Map::new();
    for (key, value) in map {
        let noisy_url = key.ends_with("_url") && !KEEP_URLS.contains(&key.as_str());
        let drop = DROP.contains(&key.as_str())
            || noisy_url
            || (key == "url" && has_html_url)
            || (value.is_null() && !KEEP_NULL.contains(&key.as_str()));
        if !drop {
            out.insert(key, trim(value));
        }
    }
    Value::Object(out)
}

/// A user or organization: reduced to its login.
fn is_account(map: &Map<String, Value>) -> bool {
    map.contains_key("login") && (map.contains_key("avatar_url") || map.contains_key("site_admin"))
}

#[cfg(test)]
mod tests;
