//! The `file-search` extension: agentic-pi bundles FFF for content and path search; worker's
//! own `grep` and `find` (ripgrep's libraries, in process) are that backend here, and this
//! extension adds FFF's `multi_grep` beside them. `--no-file-search` leaves only the built-in
//! `grep` and `find`, as it does in agentic-pi.

use std::sync::Arc;

use serde_json::json;

use crate::events::{ExtensionState, ExtensionStatus};
use crate::extension::{Extension, StatusLine};
use crate::tools::{MultiGrepTool, Tool};

/// FFF's modes. worker has no interactive UI, so the three differ only in what the status
/// line reports: the tools are `grep`, `find` and `multi_grep` in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The file-search tools under the names grep, find and multi_grep (the default).
    Override,
    /// FFF's tools without its UI: the same tools here; only the status line differs.
    ToolsOnly,
    /// FFF's tools and its UI: the same tools here, since worker has no UI.
    ToolsAndUi,
}

impl Mode {
    /// The mode as typed on the command line and reported in the status line (`tools-only`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Override => "override",
            Mode::ToolsOnly => "tools-only",
            Mode::ToolsAndUi => "tools-and-ui",
        }
    }
}

/// The `file-search` extension: its status line and the `multi_grep` tool.
pub struct FileSearch {
    status: ExtensionStatus,
    tools: Vec<Arc<dyn Tool>>,
}

impl FileSearch {
    /// `enabled` is false with `--no-file-search`.
    pub fn configure(enabled: bool, mode: Mode) -> FileSearch {
        if !enabled {
            return FileSearch {
                status: ExtensionStatus {
                    extension: "file-search".into(),
                    status: ExtensionState::Skipped,
                    reason: Some("disabled-by-flag".into()),
                    message: Some("--no-file-search: the built-in grep and find only".into()),
                    extra: serde_json::Map::new(),
                },
                tools: Vec::new(),
            };
        }
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), json!(mode.name()));
        // grep and find (built in) plus multi_grep.
        extra.insert("toolCount".into(), json!(3));
        FileSearch {
            status: ExtensionStatus {
                extension: "file-search".into(),
                status: ExtensionState::Configured,
                reason: None,
                message: None,
                extra,
            },
            tools: vec![Arc::new(MultiGrepTool)],
        }
    }
}

impl Extension for FileSearch {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}
