//! Keeping tool output within what a model should read: 2000 lines or 50 KiB.
//!
//! `read` keeps the head (the model continues with `offset`), `bash` keeps the tail (errors
//! come last). Cuts fall between lines; only a single line longer than the byte budget is cut
//! inside, and never inside a UTF-8 character. The numbers go to `details.truncation` so a
//! consumer can tell what was dropped.

use serde::Serialize;

pub use crate::text::{ceil_char_boundary, floor_char_boundary};
use serde_json::{Map, Value, json};

use crate::events::{TextContent, ToolResult};

/// The most lines of tool output the model is shown.
pub const MAX_LINES: usize = 2000;
/// The most bytes of tool output the model is shown (50 KiB).
pub const MAX_BYTES: usize = 50 * 1024;

/// Which budget cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    /// The line budget ran out first.
    Lines,
    /// The byte budget ran out first.
    Bytes,
}

/// What was cut from a tool's output, as `details.truncation` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which budget cut it; `None` when nothing was cut.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole output.
    pub total_lines: usize,
    /// Bytes in the whole output.
    pub total_bytes: usize,
    /// Lines shown.
    pub output_lines: usize,
    /// Bytes shown.
    pub output_bytes: usize,
    /// The one line kept (the last) was cut inside because it alone exceeds the byte budget (tail
    /// only).
    pub last_line_partial: bool,
    /// The first line alone exceeds the byte budget, so nothing is shown (head only).
    pub first_line_exceeds_limit: bool,
    /// The line budget applied.
    pub max_lines: usize,
    /// The byte budget applied.
    pub max_bytes: usize,
}

/// The lines of `text`; a final newline ends the last line rather than starting a new one.
pub fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

impl Truncation {
    /// The record of cutting `text` (of `total_lines` lines) to `output` (`kept` lines) under
    /// `limits` (lines, bytes); neither edge case flagged.
    fn of(
        text: &str,
        total_lines: usize,
        output: &str,
        kept: usize,
        by: Option<TruncatedBy>,
        (max_lines, max_bytes): (usize, usize),
    ) -> Truncation {
        Truncation {
            truncated: by.is_some(),
            truncated_by: by,
            total_lines,
            total_bytes: text.len(),
            output_lines: kept,
            output_bytes: output.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// How many whole lines, taken in the given order, fit both budgets, and which one stopped it.
fn lines_that_fit<'a>(
    lines: impl Iterator<Item = &'a &'a str>,
    max_lines: usize,
    max_bytes: usize,
) -> (usize, Option<TruncatedBy>) {
    let mut kept = 0;
    let mut bytes = 0;
    for line in lines {
        if kept == max_lines {
            return (kept, Some(TruncatedBy::Lines));
        }
        let cost = line.len() + usize::from(kept > 0);
        if bytes + cost > max_bytes {
            return (kept, Some(TruncatedBy::Bytes));
        }
        bytes += cost;
        kept += 1;
    }
    (kept, None)
}

/// Keeps whole lines from the start.
pub fn truncate_head(text: &str, max_lines: usize, max_bytes: usize) -> (String, Truncation) {
    let lines = split_lines(text);
    let (kept, by) = lines_that_fit(lines.iter(), max_lines, max_bytes);
    let output = lines[..kept].join("\n");
    let truncation = Truncation {
        first_line_exceeds_limit: kept == 0 && by == Some(TruncatedBy::Bytes),
        ..Truncation::of(text, lines.len(), &output, kept, by, (max_lines, max_bytes))
    };
    (output, truncation)
}

/// Keeps whole lines from the end; a last line longer than the budget keeps its tail.
pub fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize) -> (String, Truncation) {
    let lines = split_lines(text);
    let (mut kept, by) = lines_that_fit(lines.iter().rev(), max_lines, max_bytes);
    let mut last_line_partial = false;
    let output = if kept == 0 && by == Some(TruncatedBy::Bytes) {
        let last = lines[lines.len() - 1];
        last_line_partial = true;
        kept = 1;
        last[ceil_char_boundary(last, last.len() - max_bytes)..].to_string()
    } else {
        lines[lines.len() - kept..].join("\n")
    };
    let truncation = Truncation {
        last_line_partial,
        ..Truncation::of(text, lines.len(), &output, kept, by, (max_lines, max_bytes))
    };
    (output, truncation)
}

/// `1.5KB`, `50.0KB`, `12B`, `3.2MB`.
pub fn format_size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if (bytes as f64) < KIB * KIB {
        format!("{:.1}KB", bytes as f64 / KIB)
    } else {
        format!("{:.1}MB", bytes as f64 / (KIB * KIB))
    }
}

/// At most `max_chars` characters of `line`, with a marker when something was cut.
pub fn cap_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
        None => (line.to_string(), false),
    }
}

/// A listing (grep, find, ls) cut to [`MAX_BYTES`], with the notices the model reads after it
/// (`[a. b]`) and the same facts as `details`.
pub struct Listing {
    text: String,
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Listing {
    /// Whole lines from the start, up to the byte limit.
    pub fn new(lines: &[impl AsRef<str>]) -> Listing {
        let joined: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
        let (text, truncation) = truncate_head(&joined.join("\n"), usize::MAX, MAX_BYTES);
        let mut listing = Listing {
            text,
            notices: Vec::new(),
            details: Map::new(),
        };
        if truncation.truncated {
            listing
                .notices
                .push(format!("{} limit reached", format_size(MAX_BYTES)));
            listing
                .details
                .insert("truncation".into(), json!(truncation));
        }
        listing
    }

    /// Adds a notice, placed before the byte-limit one when `first` (a result limit is the
    /// first thing to say).
    pub fn notice(&mut self, notice: String, key: &str, value: Value, first: bool) {
        if first {
            self.notices.insert(0, notice);
        } else {
            self.notices.push(notice);
        }
        self.details.insert(key.into(), value);
    }

    /// The listing's text followed by its notices (`[a. b]`), with the details (`None` when
    /// there are none).
    pub fn finish(mut self) -> ToolResult {
        if !self.notices.is_empty() {
            self.text
                .push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        ToolResult {
            content: vec![TextContent::text(self.text)],
            details: (!self.details.is_empty()).then_some(Value::Object(self.details)),
        }
    }
}

#[cfg(test)]
mod tests;
