//! Reading files for tools, safely: only regular files, opened without ever blocking.
//!
//! Opening a FIFO with no writer, or reading a device such as `/dev/kmsg`, blocks forever in
//! the kernel, where neither the run's budget nor a signal can reach a blocking thread. So a
//! file is opened non-blocking, checked to be a regular file, and refused otherwise; only a
//! regular file is read, and reading one always finishes.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

use super::ToolError;

/// The error the model reads when a file cannot be opened or read.
pub fn read_error(err: &io::Error, display: &str) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::new(format!("File not found: {display}")),
        io::ErrorKind::PermissionDenied => ToolError::new(format!("Permission denied: {display}")),
        _ => ToolError::new(format!("Could not read {display}: {err}")),
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Irregular {
    Directory,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl Irregular {
    pub fn of(meta: &Metadata) -> Irregular {
        let kind = meta.file_type();
        if kind.is_dir() {
            Irregular::Directory
        } else if kind.is_fifo() {
            Irregular::Fifo
        } else if kind.is_socket() {
            Irregular::Socket
        } else if kind.is_char_device() {
            Irregular::CharDevice
        } else if kind.is_block_device() {
            Irregular::BlockDevice
        } else {
            Irregular::Other
        }
    }

    /// "a FIFO", for messages.
    pub fn described(self) -> &'static str {
        match self {
            Irregular::Directory => "a directory",
            Irregular::Fifo => "a FIFO",
            Irregular::Socket => "a socket",
            Irregular::CharDevice => "a character device",
            Irregular::BlockDevice => "a block device",
            Irregular::Other => "a special file",
        }
    }
}

/// Opens `path` for reading if it is a regular file (symlinks followed). `Ok(Err(kind))` says
/// what it is instead.
pub fn open_regular(path: &Path) -> io::Result<Result<(File, Metadata), Irregular>> {
    let file = File::options()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Err(Irregular::of(&meta)));
    }
    // A regular file ignores O_NONBLOCK; reads behave as usual.
    Ok(Ok((file, meta)))
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
