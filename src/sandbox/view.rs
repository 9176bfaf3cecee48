//! The filesystem a sandboxed command sees, built by the sandbox's init in a mount namespace
//! of its own before the command starts.
//!
//! Landlock decides who may write a file's content, but not its metadata: `chmod`, `touch -d`,
//! `setfattr` and `chown` on a file outside the writable roots would still succeed. So the
//! view is made read-only at the mount level, where every kind of change is refused (content,
//! mode, owner, times, xattrs, links, FIFOs, device nodes), and only the writable roots are
//! made writable again:
//!
//! 1. `/tmp` and `/var/tmp` become the run's private temp directory (so nothing a command
//!    leaves there reaches the host, and it is removed with the run), with the paths the
//!    command must still reach below them (the working directory, the run's own directory
//!    with its spill files and temp directory) bound back in place;
//! 2. credentials are covered (an empty read-only tmpfs, or `/dev/null` for a file);
//! 3. every mount becomes read-only (`mount_setattr(AT_RECURSIVE)`), then the writable roots
//!    are made writable again;
//! 4. `/dev/shm` gets a fresh, size-capped tmpfs, and `/dev/mqueue` the message queues of the
//!    command's own IPC namespace: both are gone when the command ends.
//!
//! Devices such as `/dev/null` stay writable on a read-only mount (the kernel checks the
//! mount only for regular files, directories and links).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::mount::{MsFlags, mount};
use nix::sys::stat::Mode;

use super::launch::Spec;

/// The size of the command's private `/dev/shm`.
pub(super) const SHM_SIZE: &str = "256m";

/// Temp directories replaced by the run's private one.
const SHARED_TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp"];

/// Why the command's view of the filesystem could not be built.
#[derive(Debug, thiserror::Error)]
pub(super) enum ViewError {
    /// A path to keep below a covered temp directory cannot be opened.
    #[error("cannot keep {}: {source}", path.display())]
    KeepOpen {
        /// The path to keep.
        path: PathBuf,
        /// The `open` failure.
        #[source]
        source: nix::Error,
    },
    /// A temp directory cannot be covered with the private one.
    #[error("cannot make {} private: {source}", target.display())]
    Cover {
        /// The temp directory.
        target: PathBuf,
        /// The bind mount's failure.
        #[source]
        source: nix::Error,
    },
    /// The mount point for a kept path cannot be made in the private temp directory.
    #[error("cannot keep {}: {source}", path.display())]
    KeepMountPoint {
        /// The path to keep.
        path: PathBuf,
        /// Why the directory or file could not be made.
        #[source]
        source: std::io::Error,
    },
    /// A kept path cannot be bound back in place.
    #[error("cannot keep {}: {source}", path.display())]
    KeepBind {
        /// The path to keep.
        path: PathBuf,
        /// The bind mount's failure.
        #[source]
        source: nix::Error,
    },
    /// A credential cannot be covered.
    #[error("cannot hide {}: {source}", path.display())]
    Hide {
        /// The credential's path.
        path: PathBuf,
        /// The mount's failure.
        #[source]
        source: nix::Error,
    },
    /// A writable root cannot be made a mount of its own.
    #[error("cannot mount {}: {source}", root.display())]
    Mount {
        /// The writable root.
        root: PathBuf,
        /// The bind mount's failure.
        #[source]
        source: nix::Error,
    },
    /// The mounts cannot be made read-only.
    #[error("cannot make the filesystem read-only: {source}")]
    ReadOnly {
        /// The `mount_setattr` failure.
        #[source]
        source: std::io::Error,
    },
    /// A writable root cannot be made writable again.
    #[error("cannot make {} writable: {source}", root.display())]
    Writable {
        /// The writable root.
        root: PathBuf,
        /// The `mount_setattr` failure.
        #[source]
        source: std::io::Error,
    },
    /// The private `/dev/shm` cannot be mounted.
    #[error("cannot make /dev/shm private: {source}")]
    Shm {
        /// The mount's failure.
        #[source]
        source: nix::Error,
    },
    /// The private `/dev/mqueue` cannot be mounted.
    #[error("cannot make /dev/mqueue private: {source}")]
    Mqueue {
        /// The mount's failure.
        #[source]
        source: nix::Error,
    },
}

/// Builds the view in the current (fresh) mount namespace. Returns the hidden paths that
/// were not there to cover.
pub(super) fn build(spec: &Spec) -> Result<Vec<PathBuf>, ViewError> {
    let keep = kept_paths(spec);
    let mut covered: Vec<PathBuf> = Vec::new();
    for dir in SHARED_TEMP_DIRS {
        let Ok(real) = Path::new(dir).canonicalize() else {
            continue;
        };
        if covered.contains(&real) || !real.is_dir() {
            continue;
        }
        cover(&real, &spec.temp_dir, &keep)?;
        covered.push(real);
    }
    let mut absent = Vec::new();
    for path in &spec.hidden {
        if !hide(path)? {
            absent.push(path.clone());
        }
    }
    // The covered temp directories are the private one under another name: writable too.
    let writable: Vec<PathBuf> = spec.writable.iter().cloned().chain(covered).collect();
    read_only_except(&writable)?;
    private_ipc_mounts()?;
    Ok(absent)
}

/// What must stay reachable at its own path after the temp directories are covered:
/// the writable roots and the run's directory (spill files), parents first.
fn kept_paths(spec: &Spec) -> Vec<PathBuf> {
    let mut keep: Vec<PathBuf> = spec
        .writable
        .iter()
        .chain(spec.run_dir.iter())
        .filter_map(|path| path.canonicalize().ok())
        .collect();
    keep.sort_by_key(|path| path.components().count());
    keep.dedup();
    keep
}

/// Mounts `source` over `target`, then binds each kept path below `target` back where it was
/// (through a descriptor opened before the cover, so the original is what comes back).
fn cover(target: &Path, source: &Path, keep: &[PathBuf]) -> Result<(), ViewError> {
    let below: Vec<(&PathBuf, OwnedFd)> = keep
        .iter()
        .filter(|path| path.starts_with(target) && path.as_path() != target)
        .map(|path| {
            nix::fcntl::open(
                path.as_path(),
                OFlag::O_PATH | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map(|fd| (path, fd))
            .map_err(|source| ViewError::KeepOpen {
                path: path.clone(),
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    bind(source, target, false).map_err(|err| ViewError::Cover {
        target: target.to_path_buf(),
        source: err,
    })?;
    for (path, fd) in below {
        let is_dir = std::fs::metadata(fd_path(&fd)).is_ok_and(|meta| meta.is_dir());
        if is_dir {
            std::fs::create_dir_all(path)
        } else {
            path.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(path, b""))
        }
        .map_err(|source| ViewError::KeepMountPoint {
            path: path.clone(),
            source,
        })?;
        bind(&fd_path(&fd), path, true).map_err(|source| ViewError::KeepBind {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn bind(source: &Path, target: &Path, recursive: bool) -> nix::Result<()> {
    let mut flags = MsFlags::MS_BIND;
    if recursive {
        flags |= MsFlags::MS_REC;
    }
    mount(Some(source), target, None::<&str>, flags, None::<&str>)
}

/// Covers a credential: an empty read-only tmpfs over a directory, `/dev/null` over a file.
/// Whether there was one to cover.
fn hide(path: &Path) -> Result<bool, ViewError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(false);
    };
    let result = if meta.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=000"),
        )
    } else {
        bind(Path::new("/dev/null"), path, false)
    };
    result.map(|()| true).map_err(|source| ViewError::Hide {
        path: path.to_path_buf(),
        source,
    })
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

fn mount_setattr(path: &Path, recursive: bool, set: u64, clear: u64) -> std::io::Result<()> {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive {
        nix::libc::AT_RECURSIVE
    } else {
        0
    };
    // SAFETY: a NUL-terminated path and a `mount_attr` of the size passed, both alive for the
    // call.
    let result = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_mount_setattr,
            nix::libc::AT_FDCWD,
            path.as_ptr(),
            flags.cast_unsigned(),
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Every mount read-only, then each writable root (made a mount of its own first) writable
/// again. A mount below a root that the host made read-only stays read-only.
fn read_only_except(writable: &[PathBuf]) -> Result<(), ViewError> {
    for root in writable {
        bind(root, root, true).map_err(|source| ViewError::Mount {
            root: root.clone(),
            source,
        })?;
    }
    mount_setattr(Path::new("/"), true, MOUNT_ATTR_RDONLY, 0)
        .map_err(|source| ViewError::ReadOnly { source })?;
    for root in writable {
        mount_setattr(root, true, 0, MOUNT_ATTR_RDONLY)
            .or_else(|_| mount_setattr(root, false, 0, MOUNT_ATTR_RDONLY))
            .map_err(|source| ViewError::Writable {
                root: root.clone(),
                source,
            })?;
    }
    Ok(())
}

/// A fresh `/dev/shm` and `/dev/mqueue`, where the host has them.
fn private_ipc_mounts() -> Result<(), ViewError> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    if Path::new("/dev/shm").is_dir() {
        mount(
            Some("tmpfs"),
            "/dev/shm",
            Some("tmpfs"),
            flags,
            Some(format!("size={SHM_SIZE},mode=1777").as_str()),
        )
        .map_err(|source| ViewError::Shm { source })?;
    }
    if Path::new("/dev/mqueue").is_dir() {
        mount(
            Some("mqueue"),
            "/dev/mqueue",
            Some("mqueue"),
            flags | MsFlags::MS_NOEXEC,
            None::<&str>,
        )
        .map_err(|source| ViewError::Mqueue { source })?;
    }
    Ok(())
}
