//! Reading files for tools, safely: only regular files, opened without ever blocking.
//!
//! Opening a FIFO with no writer, or reading a device such as `/dev/kmsg`, blocks forever in
//! the kernel, where neither the run's budget nor a signal can reach a blocking thread. So a
//! file is opened non-blocking, checked to be a regular file, and refused otherwise; only a
//! regular file is read, and reading one always finishes. The opener is the one worker's own
//! inputs use ([`crate::input_file`]).

use std::io;

use super::ToolError;
pub use crate::input_file::{Irregular, open_regular};

/// The error the model reads when a file cannot be opened or read.
pub fn read_error(err: &io::Error, display: &str) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::new(format!("File not found: {display}")),
        io::ErrorKind::PermissionDenied => ToolError::new(format!("Permission denied: {display}")),
        _ => ToolError::new(format!("Could not read {display}: {err}")),
    }
}

/// `x is a FIFO, not a regular file; read only works on regular files.`
pub fn not_regular(display: &str, kind: Irregular, tool: &str) -> ToolError {
    ToolError::new(format!(
        "{display} is {}, not a regular file; {tool} only works on regular files. Use bash for pipes and devices.",
        kind.described()
    ))
}

#[cfg(test)]
mod tests;
