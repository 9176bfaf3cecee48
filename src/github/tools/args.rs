//! Reading a GitHub tool's arguments, and building API paths from them.
//!
//! Numbers may arrive as strings and lists as comma-separated strings (models do both); a
//! missing or malformed argument is a validation error naming the field. Path segments are
//! percent-encoded, so a label called `needs review` or a file called `a b.md` works.

use serde_json::Value;

use super::Failure;

pub struct Args {
    tool: &'static str,
    value: Value,
}

impl Args {
    pub fn new(tool: &'static str, value: Value) -> Self {
        Args { tool, value }
    }

    fn invalid(&self, field: &str, problem: &str) -> Failure {
        let received = serde_json::to_string_pretty(&self.value).unwrap_or_default();
        Failure::Invalid(format!(
            "Validation failed for tool \"{}\":\n  - {field}: {problem}\n\nReceived arguments:\n{received}",
            self.tool
        ))
    }

    pub fn str(&self, field: &str) -> Result<String, Failure> {
        self.opt_str(field)?
            .ok_or_else(|| self.invalid(field, "required (a non-empty string)"))
    }

    pub fn opt_str(&self, field: &str) -> Result<Option<String>, Failure> {
        match self.value.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(self.invalid(field, "expected a string")),
        }
    }

    /// Text where an empty string is meaningful (a file's content, a body).
    pub fn text(&self, field: &str) -> Result<String, Failure> {
        match self.value.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(self.invalid(field, "required (a string)")),
        }
    }

    pub fn num(&self, field: &str) -> Result<u64, Failure> {
        self.opt_num(field)?
            .ok_or_else(|| self.invalid(field, "required (a number)"))
    }

    pub fn opt_num(&self, field: &str) -> Result<Option<u64>, Failure> {
        let number = match self.value.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        number
            .map(Some)
            .ok_or_else(|| self.invalid(field, "expected a non-negative integer"))
    }

    /// A list of strings; a comma-separated string is accepted too. `Some(vec![])` is an
    /// explicit empty list (e.g. to clear labels).
    pub fn opt_list(&self, field: &str) -> Result<Option<Vec<String>>, Failure> {
        match self.value.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.invalid(field, "expected a list of strings"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(Value::String(s)) => Ok(Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            )),
            Some(_) => Err(self.invalid(field, "expected a list of strings")),
        }
    }

    pub fn list(&self, field: &str) -> Result<Vec<String>, Failure> {
        match self.opt_list(field)? {
            Some(list) if !list.is_empty() => Ok(list),
            _ => Err(self.invalid(field, "required (a non-empty list of strings)")),
        }
    }

    /// One of `allowed`, or `None` when absent.
    pub fn opt_choice(&self, field: &str, allowed: &[&str]) -> Result<Option<String>, Failure> {
        match self.opt_str(field)? {
            None => Ok(None),
            Some(value) if allowed.contains(&value.as_str()) => Ok(Some(value)),
            Some(_) => Err(self.invalid(field, &format!("expected one of {}", allowed.join(", ")))),
        }
    }

    /// `page` and `per_page` (capped at 100) as query pairs.
    pub fn paging(
        &self,
        default_per_page: u64,
    ) -> Result<Vec<(&'static str, Option<String>)>, Failure> {
        Ok(vec![
            ("page", self.opt_num("page")?.map(|n| n.to_string())),
            (
                "per_page",
                Some(
                    self.opt_num("per_page")?
                        .unwrap_or(default_per_page)
                        .clamp(1, 100)
                        .to_string(),
                ),
            ),
        ])
    }

    pub fn raw(&self, field: &str) -> Option<&Value> {
        self.value.get(field).filter(|v| !v.is_null())
    }

    /// `/repos/{owner}/{repo}` with both segments encoded.
    pub fn repo_path(&self) -> Result<String, Failure> {
        Ok(format!(
            "/repos/{}/{}",
            segment(&self.str("owner")?),
            segment(&self.str("repo")?)
        ))
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn segment(text: &str) -> String {
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
pub fn file_path(path: &str) -> String {
    path.trim_matches('/')
        .split('/')
        .map(segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// `?a=1&b=x` from the pairs that have a value (or "" when none do).
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
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
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Args {
        Args::new("github_x", value)
    }

    fn message(failure: Failure) -> String {
        match failure {
            Failure::Invalid(m) => m,
            _ => panic!("not a validation failure"),
        }
    }

    #[test]
    fn lenient_numbers_and_lists() {
        let a = args(json!({"n": "12", "m": 3.0, "l": "bug, ui", "e": []}));
        assert_eq!(a.num("n").ok(), Some(12));
        assert_eq!(a.num("m").ok(), Some(3));
        assert_eq!(
            a.opt_list("l").ok().flatten(),
            Some(vec!["bug".to_string(), "ui".to_string()])
        );
        assert_eq!(a.opt_list("e").ok().flatten(), Some(vec![]));
        assert_eq!(a.opt_list("missing").ok().flatten(), None);
    }

    #[test]
    fn missing_and_malformed_fields_name_the_field() {
        let a = args(json!({"owner": "o", "n": -1}));
        assert_eq!(
            message(a.str("repo").unwrap_err()),
            "Validation failed for tool \"github_x\":\n  - repo: required (a non-empty string)\n\nReceived arguments:\n{\n  \"owner\": \"o\",\n  \"n\": -1\n}"
        );
        assert!(
            message(a.num("n").unwrap_err()).contains("  - n: expected a non-negative integer")
        );
        assert!(
            message(
                args(json!({"s": "x"}))
                    .opt_choice("s", &["open", "closed"])
                    .unwrap_err()
            )
            .contains("expected one of open, closed")
        );
    }

    #[test]
    fn paths_and_queries_are_encoded() {
        assert_eq!(segment("needs review"), "needs%20review");
        assert_eq!(file_path("/docs/a b/ü.md"), "docs/a%20b/%C3%BC.md");
        assert_eq!(
            query(&[
                ("state", Some("open".into())),
                ("labels", None),
                ("q", Some("is:pr author:me".into()))
            ]),
            "?state=open&q=is%3Apr%20author%3Ame"
        );
        assert_eq!(query(&[("a", None)]), "");
    }
}
