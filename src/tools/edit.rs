//! `edit {path, edits:[{oldText,newText}]}`: targeted replacements in an existing file.
//!
//! The legacy flat form `{path, oldText, newText}` and an `edits` array sent as a JSON string
//! are accepted too. Matching lives in `edit_match`; this file handles the file around it: a
//! BOM and CRLF line endings are set aside for matching and restored on write, the write is
//! atomic, and the result carries a unified diff.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;

use super::access::{Access, PathPolicy};
use super::confined::{WriteTarget, write_error};
use super::edit_match::{Edit, MatchError, apply_edits, first_changed_line};
use super::encoding::Encoding;
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

pub(super) struct EditTool;

#[derive(Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub(super) struct EditArgs {
    /// Path to the file to edit (relative or absolute)
    path: String,
    /// Replacements to make; each oldText must occur exactly once in the original file
    #[schemars(with = "Vec<EditParam>", required)]
    edits: Option<EditsField>,
    // The legacy flat form; not advertised.
    #[serde(default, rename = "oldText")]
    #[schemars(skip)]
    old_text: Option<String>,
    #[serde(default, rename = "newText")]
    #[schemars(skip)]
    new_text: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EditsField {
    List(Vec<EditParam>),
    Encoded(String),
}

#[derive(Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
struct EditParam {
    /// Exact text to find (include enough context to be unique)
    #[serde(rename = "oldText")]
    old_text: String,
    /// Text to put in its place
    #[serde(rename = "newText")]
    new_text: String,
}

impl TypedTool for EditTool {
    type Args = EditArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "edit",
            description: "Edit a file by replacing exact text. Each edits[].oldText must match a unique, \
                          non-overlapping region of the original file; all edits are matched against the file \
                          as it was before this call. If an exact match fails, whitespace, quote and dash \
                          differences are tolerated (indentation is not). Use several edits in one call for \
                          separate changes to the same file.",
            snippet: Some("Make precise edits to files (replace exact text)"),
            read_only: false,
        }
    }

    async fn run(&self, args: EditArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let edits = collect_edits(&args)?;
        let path = ctx.path(&args.path, Access::Write)?;
        let _guard = ctx.files.lock(&path).await;
        let display = args.path;
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || edit_file(&path, policy.as_deref(), &display, &edits))
            .await
            .map_err(|err| ToolError::new(format!("edit failed: {err}")))?
    }
}

fn collect_edits(params: &EditArgs) -> Result<Vec<Edit>, ToolError> {
    let mut edits: Vec<Edit> = match &params.edits {
        None => Vec::new(),
        Some(EditsField::List(list)) => list.iter().map(to_edit).collect(),
        Some(EditsField::Encoded(text)) => serde_json::from_str::<Vec<EditParam>>(text)
            .map_err(|err| {
                ToolError::new(format!(
                    "Validation failed for tool \"edit\":\n  - edits: a string that is not a JSON array of {{oldText, newText}} ({err})"
                ))
            })?
            .iter()
            .map(to_edit)
            .collect(),
    };
    if let (Some(old), Some(new)) = (&params.old_text, &params.new_text) {
        edits.push(Edit {
            old_text: old.replace("\r\n", "\n"),
            new_text: new.replace("\r\n", "\n"),
        });
    }
    if edits.is_empty() {
        return Err(ToolError::new(
            "Validation failed for tool \"edit\":\n  - edits: at least one {oldText, newText} edit is required",
        ));
    }
    Ok(edits)
}

fn to_edit(param: &EditParam) -> Edit {
    Edit {
        old_text: param.old_text.replace("\r\n", "\n"),
        new_text: param.new_text.replace("\r\n", "\n"),
    }
}

fn edit_file(
    path: &Path,
    policy: Option<&PathPolicy>,
    display: &str,
    edits: &[Edit],
) -> Result<ToolResult, ToolError> {
    if path.is_dir() {
        return Err(ToolError::new(format!("Path is a directory: {display}")));
    }
    let target = WriteTarget::open(path, policy, false, display)?;
    let raw = target.read_regular(display, "edit")?;
    let text = String::from_utf8(raw).map_err(|err| {
        ToolError::new(format!(
            "{display} is not valid UTF-8 (invalid byte at offset {}); edit will not rewrite it. Use bash for binary or non-UTF-8 files.",
            err.utf8_error().valid_up_to()
        ))
    })?;
    let (encoding, original) = Encoding::strip(&text);
    let applied =
        apply_edits(&original, edits).map_err(|err| match_error(err, display, edits.len()))?;
    encoding
        .write(&target, &applied.content)
        .map_err(|err| write_error(&err, display))?;

    let patch = TextDiff::from_lines(&original, &applied.content)
        .unified_diff()
        .context_radius(4)
        .header(display, display)
        .to_string();
    let (diff, _) = display_diff::display_diff(&original, &applied.content);
    let mut text = format!(
        "Successfully replaced {} block(s) in {display}.",
        edits.len()
    );
    for (index, (first, last)) in applied.blocks.iter().enumerate() {
        let lines = if first == last {
            format!("line {first}")
        } else {
            format!("lines {first}-{last}")
        };
        text.push_str(&format!("\n- edits[{index}]: now {lines}"));
    }
    if applied.fuzzy {
        text.push_str(
            "\n(Matched after normalizing whitespace, quotes and dashes; the matched lines were rewritten.)",
        );
    }
    Ok(text_result(
        text,
        Some(json!({
            "diff": diff,
            "patch": patch,
            "firstChangedLine": first_changed_line(&original, &applied.content),
        })),
    ))
}

fn match_error(err: MatchError, path: &str, count: usize) -> ToolError {
    let many = count > 1;
    ToolError::new(match err {
        MatchError::Empty { index } if many => {
            format!("edits[{index}].oldText must not be empty in {path}.")
        }
        MatchError::Empty { .. } => format!("oldText must not be empty in {path}."),
        MatchError::NotFound { index } if many => format!(
            "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
        ),
        MatchError::NotFound { .. } => format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        ),
        MatchError::Ambiguous { index, count } if many => format!(
            "Found {count} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        ),
        MatchError::Ambiguous { count, .. } => format!(
            "Found {count} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        ),
        MatchError::Overlap { first, second } => format!(
            "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
        ),
        MatchError::NoChange => format!(
            "No changes made to {path}. The replacement produced identical content. Check that newText differs from oldText."
        ),
    })
}

mod display_diff;

#[cfg(test)]
mod tests;
