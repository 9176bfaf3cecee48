//! `hashline_edit {path, edits:[{op, pos, end?, lines}]}` (opt-in): line edits anchored on
//! `LINE#TAG` from `read` with `hashline: true`.
//!
//! Every anchor is checked against the file as it is now, before anything changes: if one is
//! stale (the line changed since the model read it), the whole call is refused and the current
//! lines around it are shown, so the model never edits a file it has not seen. Edits are
//! applied bottom-up so earlier ones don't shift later anchors; overlapping edits are refused.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;

use super::access::{Access, PathPolicy};
use super::confined::{WriteTarget, write_error};
use super::edit_match::first_changed_line;
use super::encoding::Encoding;
use super::hashline::{line_prefix, line_tag, parse_anchor};
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

/// Lines shown on each side of a stale anchor.
const STALE_CONTEXT: usize = 2;
/// Changed lines echoed back with fresh anchors, at most.
const ECHO_LIMIT: usize = 40;

pub(super) struct HashlineEditTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct HashlineEditArgs {
    /// Path to the file to edit
    path: String,
    edits: Vec<EditParam>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum Op {
    Replace,
    Prepend,
    Append,
}

#[derive(Deserialize, JsonSchema)]
struct EditParam {
    op: Op,
    /// Anchor LINE#TAG of the first line concerned
    pos: String,
    /// replace only: anchor of the last line to replace (default: pos)
    end: Option<String>,
    /// New lines (array, or one string with newlines); null with replace deletes
    #[serde(default)]
    lines: LinesParam,
}

#[derive(Deserialize, Default)]
#[serde(untagged)]
enum LinesParam {
    #[default]
    None,
    Many(Vec<String>),
    One(String),
}

impl JsonSchema for LinesParam {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LinesParam".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}, {"type": "null"}]
        })
    }
}

impl LinesParam {
    fn into_lines(self) -> Vec<String> {
        let joined = match self {
            LinesParam::None => return Vec::new(),
            LinesParam::Many(lines) => lines.join("\n"),
            LinesParam::One(text) => text,
        };
        let joined = joined.replace("\r\n", "\n");
        let body = joined.strip_suffix('\n').unwrap_or(&joined);
        body.split('\n').map(str::to_string).collect()
    }
}

impl TypedTool for HashlineEditTool {
    type Args = HashlineEditArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "hashline_edit",
            description: "Edit a file by line anchors. First read it with hashline: true, which prefixes every \
                          line with LINE#TAG:. Each edit names an anchor (pos, e.g. \"12#KJ\"): op replace \
                          replaces lines pos..end (end defaults to pos; lines null deletes them), prepend inserts \
                          before pos, append inserts after pos. If any anchor no longer matches the file, nothing \
                          is changed and the current lines are shown.",
            snippet: Some("Edit files by LINE#TAG anchors from read with hashline: true"),
            read_only: false,
        }
    }

    async fn run(&self, args: HashlineEditArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        if args.edits.is_empty() {
            return Err(ToolError::new(
                "Validation failed for tool \"hashline_edit\":\n  - edits: at least one edit is required",
            ));
        }
        let path = ctx.path(&args.path, Access::Write)?;
        let _guard = ctx.files.lock(&path).await;
        let display = args.path;
        let edits = args.edits;
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || edit_file(&path, policy.as_deref(), &display, edits))
            .await
            .map_err(|err| ToolError::new(format!("hashline_edit failed: {err}")))?
    }
}

/// An edit resolved to 0-based line indices: `start..end` is replaced by `lines`
/// (`start == end` inserts).
struct Planned {
    index: usize,
    start: usize,
    end: usize,
    lines: Vec<String>,
}

fn edit_file(
    path: &Path,
    policy: Option<&PathPolicy>,
    display: &str,
    edits: Vec<EditParam>,
) -> Result<ToolResult, ToolError> {
    let target = WriteTarget::open(path, policy, false, display)?;
    let raw = target.read_regular(display, "hashline_edit")?;
    let text = String::from_utf8(raw).map_err(|_| {
        ToolError::new(format!(
            "{display} is not valid UTF-8; hashline_edit will not rewrite it."
        ))
    })?;
    let (encoding, original) = Encoding::strip(&text);
    let trailing_newline = original.ends_with('\n');
    let mut lines: Vec<String> = super::truncate::split_lines(&original)
        .into_iter()
        .map(str::to_string)
        .collect();

    let planned = plan(&lines, display, edits)?;
    let mut order: Vec<&Planned> = planned.iter().collect();
    // Bottom-up; at one insertion point, later edits go in first so input order is kept.
    order.sort_by(|a, b| b.start.cmp(&a.start).then(b.index.cmp(&a.index)));
    for edit in order {
        lines.splice(edit.start..edit.end, edit.lines.iter().cloned());
    }
    let mut updated = lines.join("\n");
    if trailing_newline && !lines.is_empty() {
        updated.push('\n');
    }
    if updated == original {
        return Err(ToolError::new(format!(
            "No changes made to {display}. The edits produced identical content."
        )));
    }
    encoding
        .write(&target, &updated)
        .map_err(|err| write_error(&err, display))?;

    let diff = TextDiff::from_lines(&original, &updated)
        .unified_diff()
        .context_radius(4)
        .header(display, display)
        .to_string();
    let first = first_changed_line(&original, &updated);
    let mut text = format!(
        "Successfully applied {} edit(s) to {display}.",
        planned.len()
    );
    let echo = fresh_anchors(&lines, first);
    if !echo.is_empty() {
        text.push_str("\nUpdated lines (fresh anchors):\n");
        text.push_str(&echo);
    }
    Ok(text_result(
        text,
        Some(json!({"diff": diff, "firstChangedLine": first})),
    ))
}

fn plan(lines: &[String], display: &str, edits: Vec<EditParam>) -> Result<Vec<Planned>, ToolError> {
    let mut problems = Vec::new();
    let mut planned = Vec::new();
    for (index, edit) in edits.into_iter().enumerate() {
        let pos = check_anchor(lines, display, &edit.pos, index, "pos", &mut problems);
        let end = match (&edit.end, edit.op) {
            (Some(end), Op::Replace) => {
                check_anchor(lines, display, end, index, "end", &mut problems)
            }
            (Some(_), _) => {
                problems.push(format!(
                    "edits[{index}]: end is only allowed with op \"replace\"."
                ));
                None
            }
            (None, _) => pos,
        };
        let (Some(pos), Some(end)) = (pos, end) else {
            continue;
        };
        if end < pos {
            problems.push(format!(
                "edits[{index}]: end (line {end}) comes before pos (line {pos})."
            ));
            continue;
        }
        let (start, stop) = match edit.op {
            Op::Replace => (pos - 1, end),
            Op::Prepend => (pos - 1, pos - 1),
            Op::Append => (pos, pos),
        };
        planned.push(Planned {
            index,
            start,
            end: stop,
            lines: edit.lines.into_lines(),
        });
    }
    if !problems.is_empty() {
        return Err(ToolError::new(format!(
            "{}\nNo edits were applied. Read the file again with hashline: true and retry with current anchors.",
            problems.join("\n")
        )));
    }
    for (i, a) in planned.iter().enumerate() {
        for b in &planned[i + 1..] {
            if overlaps(a, b) {
                return Err(ToolError::new(format!(
                    "edits[{}] and edits[{}] overlap in {display}. Merge them into one edit or target disjoint lines.",
                    a.index.min(b.index),
                    a.index.max(b.index)
                )));
            }
        }
    }
    Ok(planned)
}

/// The 1-based line an anchor names, if it is current; otherwise a problem is recorded.
fn check_anchor(
    lines: &[String],
    display: &str,
    anchor: &str,
    index: usize,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<usize> {
    let Some((line, tag)) = parse_anchor(anchor) else {
        problems.push(format!(
            "edits[{index}].{field}: '{anchor}' is not an anchor; use LINE#TAG as printed by read with hashline: true."
        ));
        return None;
    };
    if line > lines.len() {
        problems.push(format!(
            "edits[{index}].{field}: line {line} does not exist in {display} ({} lines).",
            lines.len()
        ));
        return None;
    }
    let current = line_tag(&lines[line - 1], line);
    if current != tag {
        let from = line.saturating_sub(STALE_CONTEXT).max(1);
        let to = (line + STALE_CONTEXT).min(lines.len());
        let context: Vec<String> = (from..=to)
            .map(|n| {
                let marker = if n == line { ">>> " } else { "    " };
                format!("{marker}{}{}", line_prefix(n, &lines[n - 1]), lines[n - 1])
            })
            .collect();
        problems.push(format!(
            "edits[{index}].{field}: stale anchor {line}#{tag} in {display}; line {line} is now:\n{}",
            context.join("\n")
        ));
        return None;
    }
    Some(line)
}

fn overlaps(a: &Planned, b: &Planned) -> bool {
    let inside = |point: usize, range: &Planned| range.start < point && point < range.end;
    match (a.start == a.end, b.start == b.end) {
        (true, true) => false,
        (true, false) => inside(a.start, b),
        (false, true) => inside(b.start, a),
        (false, false) => a.start < b.end && b.start < a.end,
    }
}

fn fresh_anchors(lines: &[String], first: usize) -> String {
    let from = first.max(1);
    let to = lines.len().min(from + ECHO_LIMIT - 1);
    (from..=to)
        .map(|n| format!("{}{}", line_prefix(n, &lines[n - 1]), lines[n - 1]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
