//! What the in-process file tools may touch when a sandbox confines commands: the same rules
//! the sandbox gives `bash`, so a path is refused whichever tool is used.
//!
//! Writes must land inside a writable root (the working directory, the sandbox's private
//! temp directory); nothing under a hidden path (credentials) can be read or listed. Paths are
//! judged by where they really lead: symlinks are resolved, and for a file that does not
//! exist yet, its nearest existing ancestor is resolved and the rest must be plain names, so
//! neither a symlink planted in the working directory nor `..` can point a write outside.
//! This check gives the model a clear message early; [`super::confined`] makes the kernel hold
//! the same line when the file is actually opened, so a path changed in between cannot escape.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// What a file tool wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read or list it: refused under a hidden path.
    Read,
    /// Create or change it: refused outside the writable roots, and under a hidden path.
    Write,
}

/// The sandbox's path rules for the in-process file tools: the writable roots and the hidden
/// paths, both resolved.
#[derive(Debug, Clone, Default)]
pub struct PathPolicy {
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
}

impl PathPolicy {
    /// Rules from the sandbox's writable roots and hidden paths, each resolved through symlinks.
    pub fn new(writable: &[PathBuf], hidden: &[PathBuf]) -> Self {
        PathPolicy {
            writable: writable.iter().map(|p| real_path(p)).collect(),
            hidden: hidden.iter().map(|p| real_path(p)).collect(),
        }
    }

    /// Refuses `path` for `access` with a message naming the rule.
    pub fn check(&self, path: &Path, access: Access) -> Result<(), ToolError> {
        let real = match access {
            Access::Read => real_path(path),
            Access::Write => super::confined::resolve_for_write(path).map_err(|reason| {
                ToolError::new(format!("Access denied: {}: {reason}", path.display()))
            })?,
        };
        if self.is_hidden(&real) {
            return Err(self.hidden_error(path));
        }
        if access == Access::Write && self.writable_root_of(&real).is_none() {
            return Err(self.outside_error(path));
        }
        Ok(())
    }

    /// The writable root a resolved path lies in.
    pub fn writable_root_of(&self, real: &Path) -> Option<&Path> {
        self.writable
            .iter()
            .find(|root| real.starts_with(root))
            .map(PathBuf::as_path)
    }

    /// The refusal for a path under a hidden one.
    pub fn hidden_error(&self, path: &Path) -> ToolError {
        ToolError::new(format!(
            "Access denied: {} is hidden by the sandbox (credentials are not readable)",
            path.display()
        ))
    }

    /// The refusal for a write outside every writable root.
    pub fn outside_error(&self, path: &Path) -> ToolError {
        ToolError::new(format!(
            "Access denied: {} is outside the sandbox's writable area (the working directory and its private temp directory); everything else is read-only",
            path.display()
        ))
    }

    /// Whether a path (already resolved) is under a hidden one.
    pub fn is_hidden(&self, real: &Path) -> bool {
        self.hidden.iter().any(|hidden| real.starts_with(hidden))
    }
}

/// Where a path really leads: symlinks resolved for the part that exists, `.` and `..`
/// applied to the rest.
pub fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while let Some(name) = existing.file_name().map(std::ffi::OsStr::to_os_string) {
        rest.push(name);
        existing.pop();
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
    }
    normalize(path)
}

/// Applies `.` and `..` without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
