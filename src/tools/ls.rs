//! `ls {path?, limit?}`: one directory's entries, sorted case-insensitively, dotfiles included.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use std::os::unix::fs::OpenOptionsExt;

use super::access::{Access, PathPolicy};
use super::args::Count;
use super::confined::{fd_path, verify_opened};
use super::truncate::Listing;
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

const DEFAULT_LIMIT: usize = 500;

pub(super) struct LsTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct LsArgs {
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
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || list(&dir, policy.as_deref(), &display, limit))
            .await
            .map_err(|err| ToolError::new(format!("ls failed: {err}")))?
    }
}

fn list(
    dir: &Path,
    policy: Option<&PathPolicy>,
    display: &str,
    limit: usize,
) -> Result<ToolResult, ToolError> {
    // Opened once, checked where it really is, and listed through that same descriptor.
    let opened = std::fs::File::options()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(dir)
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::PermissionDenied => {
                ToolError::new(format!("Permission denied: {display}"))
            }
            _ => ToolError::new(format!("Path not found: {display}")),
        })?;
    let meta = opened
        .metadata()
        .map_err(|err| ToolError::new(format!("Could not list {display}: {err}")))?;
    if !meta.is_dir() {
        return Err(ToolError::new(format!("Not a directory: {display}")));
    }
    verify_opened(policy, &opened, display)?;
    let reader = std::fs::read_dir(fd_path(&opened)).map_err(|err| match err.kind() {
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
            let is_dir = std::fs::metadata(dir.join(entry.file_name())).is_ok_and(|m| m.is_dir());
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
