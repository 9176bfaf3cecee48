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
mod tests {
    use super::super::testing::Harness;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn creates_parents_and_reports_bytes_not_characters() {
        let h = Harness::new();
        let text = h
            .ok(&WriteTool, json!({"path": "a/b/c.txt", "content": "héllo"}))
            .await;
        assert_eq!(text, "Successfully wrote 6 bytes to a/b/c.txt");
        assert_eq!(h.read("a/b/c.txt"), "héllo");
    }

    #[tokio::test]
    async fn overwrites_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let h = Harness::new();
        h.write("run.sh", "old");
        std::fs::set_permissions(h.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        h.ok(
            &WriteTool,
            json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
        )
        .await;
        assert_eq!(h.read("run.sh"), "#!/bin/sh\n");
        let mode = std::fs::metadata(h.path("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[tokio::test]
    async fn a_directory_is_not_overwritten() {
        let h = Harness::new();
        std::fs::create_dir(h.path("d")).unwrap();
        assert_eq!(
            h.err(&WriteTool, json!({"path": "d", "content": "x"}))
                .await,
            "Path is a directory: d"
        );
    }

    #[tokio::test]
    async fn a_file_in_the_way_of_a_parent_is_reported() {
        let h = Harness::new();
        h.write("f", "x");
        let err = h
            .err(&WriteTool, json!({"path": "f/g.txt", "content": "x"}))
            .await;
        assert!(err.starts_with("Could not write f/g.txt: "), "{err}");
    }

    #[tokio::test]
    async fn a_read_only_directory_is_permission_denied() {
        use std::os::unix::fs::PermissionsExt;
        let h = Harness::new();
        std::fs::create_dir(h.path("ro")).unwrap();
        std::fs::set_permissions(h.path("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        if std::fs::write(h.path("ro/probe"), "x").is_ok() {
            return; // root ignores directory permissions
        }
        assert_eq!(
            h.err(&WriteTool, json!({"path": "ro/x.txt", "content": "x"}))
                .await,
            "Permission denied: ro/x.txt"
        );
    }

    #[tokio::test]
    async fn ten_megabytes_are_written_whole() {
        let h = Harness::new();
        let content = "0123456789abcdef\n".repeat(10 * 1024 * 1024 / 17);
        let text = h
            .ok(&WriteTool, json!({"path": "big.txt", "content": content}))
            .await;
        assert_eq!(
            text,
            format!("Successfully wrote {} bytes to big.txt", content.len())
        );
        assert_eq!(
            std::fs::metadata(h.path("big.txt")).unwrap().len() as usize,
            content.len()
        );
    }
}
