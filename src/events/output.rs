//! `output_error`: an output the run was asked to write — `--trace-file`, `--record`,
//! `--output-last-message`, the session file — could not be written in full.
//!
//! A write that fails (a full disk, `/dev/full`, a file system gone read-only) does not stop
//! the run, and is never silent: each output that failed is reported once, as this event
//! right before `usage_snapshot` and as its [`OutputError::message`] on stderr, and the run
//! exits 4 (see `crate::exit`) so a caller does not trust the files it asked for.

use std::fmt::Display;
use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;

/// Which output failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// `--trace-file`.
    TraceFile,
    /// `--record`.
    Record,
    /// `--output-last-message`.
    OutputLastMessage,
    /// The session file.
    Session,
}

impl OutputKind {
    /// How the output is named on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::TraceFile => "--trace-file",
            OutputKind::Record => "--record",
            OutputKind::OutputLastMessage => "--output-last-message",
            OutputKind::Session => "session file",
        }
    }

    /// What is missing when it fails.
    fn content(self) -> &'static str {
        match self {
            OutputKind::TraceFile => "the trace",
            OutputKind::Record => "the recording",
            OutputKind::OutputLastMessage => "the final answer",
            OutputKind::Session => "the session",
        }
    }
}

/// `output_error`: one output that could not be written in full.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputError {
    /// Which output could not be written.
    pub output: OutputKind,
    /// The file.
    pub path: String,
    /// What the system said.
    pub error: String,
    /// The line printed on stderr (after `worker: `).
    pub message: String,
}

impl OutputError {
    /// The report for `output` at `path`, which failed with `error`; `message` is built from the
    /// three.
    pub fn new(output: OutputKind, path: &Path, error: impl Display) -> OutputError {
        let path = path.display().to_string();
        let error = error.to_string();
        OutputError {
            message: format!(
                "{} {path}: write failed: {error}; {} is incomplete",
                output.name(),
                output.content()
            ),
            output,
            path,
            error,
        }
    }
}
