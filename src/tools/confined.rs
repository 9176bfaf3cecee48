//! Opening files for the file tools so that the kernel, not a check made before the open,
//! keeps them where the sandbox's [`PathPolicy`] allows.
//!
//! A check of a path string and the open that follows it are two moments: a symlink swapped in
//! between (by a command running in the same directory) would send the open elsewhere. So:
//!
//! - **Writes** resolve the path once, the way the kernel will (the longest existing prefix is
//!   canonicalized; what is left must be plain names, never `..`), find the writable root it
//!   lies in, and then walk from that root's directory one name at a time with `O_NOFOLLOW`,
//!   creating missing directories with `mkdirat`. Every name on the way was a real directory
//!   when the path was resolved, so a symlink found during the walk means the tree changed
//!   under us, and the write is refused. The file itself is then created, replaced (a temporary
//!   file renamed over it) or read through the directory's descriptor, by name. This is what
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` gives on 5.6+ kernels, on every kernel the
//!   sandbox runs on, with one code path.
//! - **Reads** open the path, then ask the kernel where the opened file really is
//!   (`/proc/self/fd`) and refuse it if that is a hidden path; a file that cannot be placed is
//!   refused too.
//!
//! Without a policy (`--sandbox none`) the same code runs with the parent directory opened
//! directly, so there is one way to write a file.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstatat, mkdirat};

use super::ToolError;
use super::access::PathPolicy;
use super::files::{Irregular, not_regular, read_error};

/// A file to write, named inside a directory the kernel has already opened (and, under a
/// policy, reached from a writable root without following any symlink).
pub struct WriteTarget {
    dir: OwnedFd,
    name: OsString,
}

/// How a directory on the way is opened: by name, never through a symlink.
fn dir_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

impl WriteTarget {
    /// Where `path` is written; `create_parents` makes missing directories on the way.
    pub fn open(
        path: &Path,
        policy: Option<&PathPolicy>,
        create_parents: bool,
        display: &str,
    ) -> Result<WriteTarget, ToolError> {
        match policy {
            Some(policy) => Self::beneath(path, policy, create_parents, display),
            None => Self::direct(path, create_parents, display),
        }
    }

    /// `--sandbox none`: the parent opened as the path names it; a symlink at the end is
    /// written through (the link stays a link).
    fn direct(path: &Path, create_parents: bool, display: &str) -> Result<WriteTarget, ToolError> {
        let target = match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
            }
            _ => path.to_path_buf(),
        };
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(ToolError::new(format!("Path is a directory: {display}")));
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if create_parents {
            std::fs::create_dir_all(parent).map_err(|err| write_error(&err, display))?;
        }
        let dir = nix::fcntl::open(
            parent,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| match err {
            Errno::ENOENT => ToolError::new(format!("File not found: {display}")),
            err => write_error(&err.into(), display),
        })?;
        Ok(WriteTarget {
            dir,
            name: name.to_os_string(),
        })
    }

    /// Under a policy: resolved once, then walked from its writable root by name.
    fn beneath(
        path: &Path,
        policy: &PathPolicy,
        create_parents: bool,
        display: &str,
    ) -> Result<WriteTarget, ToolError> {
        let resolved = resolve_for_write(path).map_err(|reason| denied(display, reason))?;
        let Some(root) = policy.writable_root_of(&resolved) else {
            return Err(policy.outside_error(path));
        };
        let rel = resolved.strip_prefix(root).unwrap_or(&resolved);
        Self::walk(root, rel, create_parents, display)
    }

    /// From `root` down `rel` (plain names that were real directories when resolved), one
    /// name at a time and never through a symlink.
    fn walk(
        root: &Path,
        rel: &Path,
        create_parents: bool,
        display: &str,
    ) -> Result<WriteTarget, ToolError> {
        let mut names: Vec<&OsStr> = rel.iter().collect();
        let Some(name) = names.pop() else {
            return Err(ToolError::new(format!("Path is a directory: {display}")));
        };
        let mut dir = nix::fcntl::open(root, dir_flags(), Mode::empty())
            .map_err(|err| walk_error(err, display))?;
        for part in names {
            dir = match openat(&dir, part, dir_flags(), Mode::empty()) {
                Ok(next) => next,
                Err(Errno::ENOENT) if create_parents => {
                    match mkdirat(&dir, part, Mode::from_bits_truncate(0o777)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(err) => return Err(write_error(&err.into(), display)),
                    }
                    openat(&dir, part, dir_flags(), Mode::empty())
                        .map_err(|err| walk_error(err, display))?
                }
                Err(err) => return Err(walk_error(err, display)),
            };
        }
        Ok(WriteTarget {
            dir,
            name: name.to_os_string(),
        })
    }

    /// What is at the name now, without following a symlink there.
    pub fn existing(&self) -> Option<FileStat> {
        fstatat(
            &self.dir,
            self.name.as_os_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .ok()
    }

    /// Refuses a directory, a FIFO or a device at the name: replacing one with a regular file
    /// is never what was meant.
    pub fn refuse_irregular(&self, display: &str, tool: &str) -> Result<(), ToolError> {
        let Some(stat) = self.existing() else {
            return Ok(());
        };
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG | SFlag::S_IFLNK => Ok(()),
            SFlag::S_IFDIR => Err(ToolError::new(format!("Path is a directory: {display}"))),
            SFlag::S_IFIFO => Err(not_regular(display, Irregular::Fifo, tool)),
            SFlag::S_IFSOCK => Err(not_regular(display, Irregular::Socket, tool)),
            SFlag::S_IFCHR => Err(not_regular(display, Irregular::CharDevice, tool)),
            SFlag::S_IFBLK => Err(not_regular(display, Irregular::BlockDevice, tool)),
            _ => Err(not_regular(display, Irregular::Other, tool)),
        }
    }

    /// The bytes of the regular file at the name (a symlink there is refused: under a policy
    /// the name was resolved already, so one appearing now was planted since).
    pub fn read_regular(&self, display: &str, tool: &str) -> Result<Vec<u8>, ToolError> {
        let fd = openat(
            &self.dir,
            self.name.as_os_str(),
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| match err {
            Errno::ELOOP => denied(display, "it became a symlink after its path was checked"),
            err => read_error(&err.into(), display),
        })?;
        let mut file = File::from(fd);
        let meta = file.metadata().map_err(|err| read_error(&err, display))?;
        if !meta.is_file() {
            return Err(not_regular(display, Irregular::of(&meta), tool));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|err| read_error(&err, display))?;
        Ok(bytes)
    }

    /// Replaces the file at the name so that readers see the old content or the new, never a
    /// mix: a temporary file in the same directory, flushed, given the old file's mode, and
    /// renamed over the name.
    pub fn replace(&self, bytes: &[u8]) -> io::Result<()> {
        let mode = self
            .existing()
            .filter(|stat| {
                SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG
            })
            .map(|stat| Mode::from_bits_truncate(stat.st_mode & 0o7777));
        let (temp_name, file) = self.create_temp()?;
        let written = write_and_sync(file, bytes, mode);
        let renamed = written.and_then(|()| {
            nix::fcntl::renameat(
                &self.dir,
                temp_name.as_os_str(),
                &self.dir,
                self.name.as_os_str(),
            )
            .map_err(io::Error::from)
        });
        if renamed.is_err() {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                temp_name.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
        renamed
    }

    /// A new file `.NAME.XXXXXXXX.tmp` beside the target, created exclusively (never through a
    /// symlink or over an existing file).
    fn create_temp(&self) -> io::Result<(OsString, File)> {
        let base = self.name.to_string_lossy();
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..8 {
            let tag = uuid::Uuid::new_v4().simple().to_string();
            let temp_name = OsString::from(format!(".{base}.{}.tmp", &tag[..8]));
            match self.create_new(&temp_name) {
                Ok(fd) => return Ok((temp_name, File::from(fd))),
                Err(Errno::EEXIST) => last = io::Error::from(Errno::EEXIST),
                Err(err) => return Err(err.into()),
            }
        }
        Err(last)
    }
}

impl WriteTarget {
    /// A new file named `name` in the directory: never an existing one, never through a
    /// symlink planted at the name.
    fn create_new(&self, name: &OsStr) -> nix::Result<OwnedFd> {
        openat(
            &self.dir,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o666),
        )
    }
}

fn write_and_sync(mut file: File, bytes: &[u8], mode: Option<Mode>) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync_all()?;
    if let Some(mode) = mode {
        fchmod(&file, mode)?;
    }
    Ok(())
}

/// Where the kernel would put a file at `path`: the longest prefix that exists, canonicalized
/// (every symlink in it followed), then the names that do not exist yet. Those must be plain
/// names: `..` after a directory that does not exist cannot be resolved the way the kernel
/// would, so it is refused.
pub fn resolve_for_write(path: &Path) -> Result<PathBuf, &'static str> {
    let mut existing = path.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut real) => {
                for name in missing.iter().rev() {
                    real.push(name);
                }
                return Ok(real);
            }
            Err(_) => {
                let last = existing.components().next_back();
                match last {
                    Some(Component::Normal(name)) => missing.push(name.to_os_string()),
                    Some(Component::CurDir) => {}
                    Some(Component::ParentDir) => {
                        return Err("it uses `..` after a directory that does not exist yet");
                    }
                    _ => return Err("no part of it exists"),
                }
                if !existing.pop() {
                    return Err("no part of it exists");
                }
            }
        }
    }
}

/// Refuses a read of a file that turned out, once opened, to be a hidden one (reached through
/// a symlink planted or swapped after the path was checked). A file whose place cannot be
/// read from the kernel is refused as well.
pub fn verify_opened(
    policy: Option<&PathPolicy>,
    file: &impl AsFd,
    display: &str,
) -> Result<(), ToolError> {
    let Some(policy) = policy else {
        return Ok(());
    };
    let fd = file.as_fd().as_raw_fd();
    let real = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|err| {
        denied(
            display,
            &format!("where the opened file lies cannot be checked ({err})"),
        )
    })?;
    if policy.is_hidden(&real) {
        return Err(policy.hidden_error(Path::new(display)));
    }
    Ok(())
}

/// The path through which an opened file or directory can be used again by path
/// (`read_dir`), without resolving its name a second time.
pub fn fd_path(file: &impl AsFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_fd().as_raw_fd()))
}

fn denied(display: &str, reason: &str) -> ToolError {
    ToolError::new(format!("Access denied: {display}: {reason}"))
}

fn walk_error(err: Errno, display: &str) -> ToolError {
    match err {
        Errno::ENOENT => ToolError::new(format!("File not found: {display}")),
        Errno::ELOOP | Errno::ENOTDIR => denied(
            display,
            "a directory on its path is (or became) a symlink or a file; refused so the write cannot land outside the writable area",
        ),
        err => write_error(&err.into(), display),
    }
}

pub(super) fn write_error(err: &io::Error, display: &str) -> ToolError {
    match err.kind() {
        io::ErrorKind::PermissionDenied => ToolError::new(format!("Permission denied: {display}")),
        _ => ToolError::new(format!("Could not write {display}: {err}")),
    }
}

#[cfg(test)]
mod tests;
