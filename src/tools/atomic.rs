//! Replacing a file's content so that readers see the old file or the new one, never a mix.
//!
//! The content goes to a temporary file in the same directory (so the rename cannot cross a
//! filesystem), is flushed to disk, gets the old file's permissions, and is renamed over the
//! target. A symlink is followed, so the link stays a link and its target gets the content.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = real_target(path);
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let existing = fs::metadata(&target).ok().map(|meta| meta.permissions());
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.persist(&target).map_err(|err| err.error)?;
    Ok(())
}

fn real_target(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// A text file's BOM and CRLF line endings, set aside so edits match on plain `\n` text and
/// put back when the file is written.
pub struct Encoding {
    bom: &'static str,
    crlf: bool,
}

impl Encoding {
    /// The file's text without BOM and with `\n` line endings, and how to restore them.
    pub fn strip(text: &str) -> (Encoding, String) {
        let (bom, body) = match text.strip_prefix('\u{FEFF}') {
            Some(rest) => ("\u{FEFF}", rest),
            None => ("", text),
        };
        let crlf = body.contains("\r\n");
        let plain = if crlf {
            body.replace("\r\n", "\n")
        } else {
            body.to_string()
        };
        (Encoding { bom, crlf }, plain)
    }

    /// Writes `plain` atomically with the BOM and line endings the file had.
    pub fn write(&self, path: &Path, plain: &str) -> io::Result<()> {
        let body = if self.crlf {
            plain.replace('\n', "\r\n")
        } else {
            plain.to_string()
        };
        write_atomic(path, format!("{}{body}", self.bom).as_bytes())
    }
}

#[cfg(test)]
mod tests;
