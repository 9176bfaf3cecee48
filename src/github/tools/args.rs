//! Argument pieces shared by the GitHub tools, and building API paths from them.
//!
//! Numbers may arrive as strings and lists as comma-separated strings (models do both): the
//! lenient types of [`crate::tools::args`] take care of that. Path segments are
//! percent-encoded, so a label called `needs review` or a file called `a b.md` works.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::args::{Count, Text};

/// `owner` and `repo`, the first two parameters of most tools.
#[derive(Deserialize, JsonSchema)]
pub(super) struct Repo {
    /// Repository owner (user or organization)
    pub owner: Text,
    /// Repository name
    pub repo: Text,
}

impl Repo {
    /// `/repos/{owner}/{repo}` with both segments encoded.
    pub(super) fn path(&self) -> String {
        format!("/repos/{}/{}", segment(&self.owner), segment(&self.repo))
    }
}

/// A repository and an issue (or pull request) in it.
#[derive(Deserialize, JsonSchema)]
pub(super) struct IssueRef {
    #[serde(flatten)]
    pub repo: Repo,
    /// Issue (or pull request) number
    pub issue_number: Count,
}

impl IssueRef {
    pub(super) fn path(&self) -> String {
        format!("{}/issues/{}", self.repo.path(), self.issue_number.0)
    }
}

/// A repository and a pull request in it.
#[derive(Deserialize, JsonSchema)]
pub(super) struct PullRef {
    #[serde(flatten)]
    pub repo: Repo,
    /// Pull request number
    pub pull_number: Count,
}

impl PullRef {
    pub(super) fn path(&self) -> String {
        format!("{}/pulls/{}", self.repo.path(), self.pull_number.0)
    }
}

/// `page` and `per_page`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct Paging {
    /// Page number, from 1 (default 1)
    pub page: Option<Count>,
    /// Results per page, up to 100 (default 30)
    pub per_page: Option<Count>,
}

impl Paging {
    /// As query pairs, `per_page` defaulted and capped at 100.
    pub(super) fn pairs(&self) -> [(&'static str, Option<String>); 2] {
        [
            ("page", self.page.map(|n| n.0.to_string())),
            (
                "per_page",
                Some(self.per_page.map_or(30, |n| n.0).clamp(1, 100).to_string()),
            ),
        ]
    }
}

/// A list filter on issue or pull request state.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum State {
    Open,
    Closed,
    All,
}

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum Direction {
    Asc,
    Desc,
}

/// An enum argument's wire text (its serde name).
pub(super) fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(super) fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A file path: each segment encoded, slashes kept.
pub(super) fn file_path(path: &str) -> String {
    path.trim_matches('/')
        .split('/')
        .map(segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// `?a=1&b=x` from the pairs that have a value (or "" when none do).
pub(super) fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key}={}", segment(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

#[cfg(test)]
mod tests;
