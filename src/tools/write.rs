//! `write {path, content}`: create or replace a whole file, atomically.

use std::io;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::access::Access;
use super::atomic::write_atomic;
use super::files::{Irregular, not_regular};
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

pub struct WriteTool;

#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Path to the file to write (relative or absolute)
    path: String,
    /// Content to write to the file
    content: String,
}

impl TypedTool for WriteTool {
    type Args = WriteArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "write",
            description: "Write content to a file. Creates the file if it doesn't exist, overwrites it if it does, \
                          and creates parent directories as needed. The write is atomic: readers see the old \
                          file or the new one, never a partial write.",
            snippet: Some("Create or overwrite files"),
            read_only: false,
        }
    }

    async fn run(&self, args: WriteArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let path = ctx.path(&args.path, Access::Write)?;
        let _guard = ctx.files.lock(&path).await;
        let display = args.path.clone();
        let bytes = args.content.len();
        tokio::task::spawn_blocking(move || write_file(&path, &display, &args.content))
            .await
            .map_err(|err| ToolError::new(format!("write failed: {err}")))??;
        Ok(text_result(
            format!("Successfully wrote {bytes} bytes to {}", args.path),
            None,
        ))
    }
}

fn write_file(path: &Path, display: &str, content: &str) -> Result<(), ToolError> {
    if path.is_dir() {
        return Err(ToolError::new(format!("Path is a directory: {display}")));
    }
    // Replacing a FIFO or device with a regular file is never what was meant.
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        return Err(not_regular(display, Irregular::of(&meta), "write"));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| write_error(&err, display))?;
    }
    write_atomic(path, content.as_bytes()).map_err(|err| write_error(&err, display))
}

pub(super) fn write_error(err: &io::Error, display: &str) -> ToolError {
    match err.kind() {
        io::ErrorKind::PermissionDenied => ToolError::new(format!("Permission denied: {display}")),
        _ => ToolError::new(format!("Could not write {display}: {err}")),
    }
}

#[cfg(test)]
mod tests;
