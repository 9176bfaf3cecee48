//! `ls {path?, limit?}`: one directory's entries, sorted case-insensitively, dotfiles included.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::access::Access;
use super::args::Count;
use super::truncate::Listing;
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

const DEFAULT_LIMIT: usize = 500;

pub struct LsTool;

#[derive(Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Directory to list (default: current directory)
    path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    limit: Option<Count>,
}

impl TypedTool for LsTool {
    type Args = LsArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "ls",
            description: "List a directory's entries, sorted alphabetically (case-insensitive), directories \
                          marked with a trailing /, dotfiles included. Up to 500 entries by default (see limit).",
            snippet: Some("List directory contents"),
            read_only: true,
        }
    }

    async fn run(&self, args: LsArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let display = args.path.unwrap_or_else(|| ".".to_string());
        let dir = ctx.path(&display, Access::Read)?;
        let limit = args
            .limit
            .filter(|n| n.0 > 0)
            .map_or(DEFAULT_LIMIT, |n| n.0 as usize);
        tokio::task::spawn_blocking(move || list(&dir, &display, limit))
            .await
            .map_err(|err| ToolError::new(format!("ls failed: {err}")))?
    }
}

fn list(dir: &Path, display: &str, limit: usize) -> Result<ToolResult, ToolError> {
    let meta = std::fs::metadata(dir).map_err(|err| match err.kind() {
        std::io::ErrorKind::PermissionDenied => {
            ToolError::new(format!("Permission denied: {display}"))
        }
        _ => ToolError::new(format!("Path not found: {display}")),
    })?;
    if !meta.is_dir() {
        return Err(ToolError::new(format!("Not a directory: {display}")));
    }
    let reader = std::fs::read_dir(dir).map_err(|err| match err.kind() {
        std::io::ErrorKind::PermissionDenied => {
            ToolError::new(format!("Permission denied: {display}"))
        }
        _ => ToolError::new(format!("Could not list {display}: {err}")),
    })?;
    let mut entries: Vec<(String, String)> = reader
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Follow symlinks: a link to a directory is listed as one.
            let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            let shown = if is_dir { format!("{name}/") } else { name };
            (shown.to_lowercase(), shown)
        })
        .collect();
    if entries.is_empty() {
        return Ok(text_result("(empty directory)", None));
    }
    entries.sort();
    let shown: Vec<&str> = entries
        .iter()
        .take(limit)
        .map(|(_, name)| name.as_str())
        .collect();
    let mut listing = Listing::new(&shown);
    if entries.len() > limit {
        listing.notice(
            format!(
                "{limit} entries limit reached. Use limit={} for more",
                limit * 2
            ),
            "entryLimitReached",
            json!(limit),
            true,
        );
    }
    Ok(listing.finish())
}

#[cfg(test)]
mod tests;
