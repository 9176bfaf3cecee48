//! An MCP tool result as the model reads it. Text stays text; an image, audio or a binary
//! resource becomes a line saying what it is (the conversation carries text only), with the
//! data kept for consumers in `details.content`; a text resource is its text under its URI; a
//! resource link names its URI. The text is held to the built-in tools' limits (2000 lines or
//! 50 KiB, the head kept): the whole of it goes to a spill file in the run's directory
//! (redacted, removed with the run), which the result names, as `bash` does.

use serde_json::{Value, json};

use crate::events::{TextContent, ToolResult};
use crate::tools::ToolContext;
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_head};

/// The text the model reads, and `details` (`content` for non-text blocks, `truncation`,
/// `fullOutputPath`) when there is any.
pub(super) fn map(result: &rmcp::model::CallToolResult, ctx: &ToolContext) -> ToolResult {
    let mut parts = Vec::new();
    let mut kept = Vec::new();
    for block in &result.content {
        let Ok(block) = serde_json::to_value(block) else {
            continue;
        };
        let (text, keep) = describe(&block);
        parts.push(text);
        if keep {
            kept.push(block);
        }
    }
    let text = if parts.is_empty() {
        "(no output)".to_string()
    } else {
        parts.join("\n")
    };
    let mut details = serde_json::Map::new();
    if !kept.is_empty() {
        details.insert("content".into(), Value::Array(kept));
    }
    let text = fit(text, ctx, &mut details);
    ToolResult {
        content: vec![TextContent::text(text)],
        details: (!details.is_empty()).then_some(Value::Object(details)),
    }
}

/// One block's text for the model, and whether its data is kept in `details`.
fn describe(block: &Value) -> (String, bool) {
    let field = |name: &str| block[name].as_str().unwrap_or_default();
    // The decoded size of base64 data: three bytes per four characters, less the padding.
    let size = |data: &str| {
        let data = data.trim_end();
        let padding = data.len() - data.trim_end_matches('=').len();
        format_size((data.len() / 4 * 3).saturating_sub(padding))
    };
    match field("type") {
        "text" => (field("text").to_string(), false),
        "image" => (
            format!(
                "[image: {}, {}; images are not passed to the model]",
                field("mimeType"),
                size(field("data"))
            ),
            true,
        ),
        "audio" => (
            format!(
                "[audio: {}, {}; audio is not passed to the model]",
                field("mimeType"),
                size(field("data"))
            ),
            true,
        ),
        "resource" => {
            let resource = &block["resource"];
            let uri = resource["uri"].as_str().unwrap_or_default();
            match resource["text"].as_str() {
                Some(text) => (format!("[resource {uri}]\n{text}"), false),
                None => (
                    format!(
                        "[resource {uri}: {}, {} of binary data]",
                        resource["mimeType"].as_str().unwrap_or("unknown type"),
                        size(resource["blob"].as_str().unwrap_or_default())
                    ),
                    true,
                ),
            }
        }
        "resource_link" => (
            format!(
                "[resource link {}: {}]",
                field("uri"),
                block["description"]
                    .as_str()
                    .unwrap_or_else(|| field("name"))
            ),
            false,
        ),
        other => (format!("[{other} content]"), true),
    }
}

/// `text` within the limits; when cut, the whole text is spilled to a file the result names.
fn fit(text: String, ctx: &ToolContext, details: &mut serde_json::Map<String, Value>) -> String {
    let (head, truncation) = truncate_head(&text, MAX_LINES, MAX_BYTES);
    if !truncation.truncated {
        return text;
    }
    let notice = match spill(&text, ctx) {
        Ok(path) => {
            details.insert("fullOutputPath".into(), json!(path));
            format!("Full output: {}", path.display())
        }
        Err(err) => format!("Full output could not be saved: {err}"),
    };
    let shown = truncation.output_lines;
    details.insert("truncation".into(), json!(truncation));
    format!(
        "{head}\n\n[Showing lines 1-{shown} of {} ({} limit). {notice}]",
        truncation.total_lines,
        format_size(MAX_BYTES)
    )
}

/// Writes `text`, redacted, to a new file in the run's spill directory.
fn spill(text: &str, ctx: &ToolContext) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    let dir = ctx.leftovers.spill_dir()?;
    let (mut file, path) = tempfile::Builder::new()
        .prefix("mcp-")
        .suffix(".txt")
        .tempfile_in(dir)?
        .keep()
        .map_err(|err| err.error)?;
    file.write_all(ctx.bash.secrets.redact(text).as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests;
