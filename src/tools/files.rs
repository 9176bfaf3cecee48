//! Reading files for tools, safely: only regular files, opened without ever blocking.
//!
//! Opening a FIFO with no writer, or reading a device such as `/dev/kmsg`, blocks forever in
//! the kernel, where neither the run's budget nor a signal can reach a blocking thread. So a
//! file is opened non-blocking, checked to be a regular file, and refused otherwise; only a
//! regular file is read, and reading one always finishes. The opener is the one worker's own
//! inputs use ([`crate::input_file`]).

use std::io;
use std::path::Path;

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

/// A regular file's bytes, or the error the model reads (`File not found: x`, `x is a FIFO`).
pub fn read_regular(path: &Path, display: &str, tool: &str) -> Result<Vec<u8>, ToolError> {
    let (mut file, meta) = match open_regular(path).map_err(|err| read_error(&err, display))? {
        Ok(opened) => opened,
        Err(kind) => return Err(not_regular(display, kind, tool)),
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut file, &mut bytes).map_err(|err| read_error(&err, display))?;
    Ok(bytes)
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
