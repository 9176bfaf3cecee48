//! `write {path, content}`: create or replace a whole file, atomically.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::access::{Access, PathPolicy};
use super::confined::{WriteTarget, write_error};
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

pub(super) struct WriteTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct WriteArgs {
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
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || {
            write_file(&path, policy.as_deref(), &display, &args.content)
        })
        .await
        .map_err(|err| ToolError::new(format!("write failed: {err}")))??;
        Ok(text_result(
            format!("Successfully wrote {bytes} bytes to {}", args.path),
            None,
        ))
    }
}

fn write_file(
    path: &Path,
    policy: Option<&PathPolicy>,
    display: &str,
    content: &str,
) -> Result<(), ToolError> {
    let target = WriteTarget::open(path, policy, true, display)?;
    target.refuse_irregular(display, "write")?;
    target
        .replace(content.as_bytes())
        .map_err(|err| write_error(&err, display))
}

#[cfg(test)]
mod tests;
