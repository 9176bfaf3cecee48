//! Containment without a sandbox: `worker __contain SHELL -c COMMAND`, which `bash` runs in
//! place of the shell under `--sandbox none`, so that nothing a command starts outlives worker,
//! `setsid` and double forks included.
//!
//! The launcher (a fresh exec of worker's own binary, single-threaded) unshares a PID namespace
//! (as root; otherwise a user namespace mapping worker's uid and gid to themselves comes with
//! it) and forks the namespace's init. The init forks the shell, reports the shell's status to
//! the launcher through a pipe the moment it ends, and then stays, reaping, while anything the
//! command left in the background runs (background jobs behave as without containment). The
//! launcher exits with the shell's status (or dies of its signal), so the `bash` tool sees the
//! command end as before.
//!
//! The init leads nothing and catches nothing: it is in the launcher's process group, which
//! worker (at a timeout, an abort, or the run's end) and its watchdog (when worker itself is
//! killed) signal. SIGKILL to the init ends every process of its namespace, including those
//! that left the group with `setsid`.
//!
//! Where no PID namespace can be made (not root, and no unprivileged user namespaces), the
//! init is a child subreaper instead: orphans still come back to it and die with the group,
//! but a process that calls `setsid` escapes once the init is killed. The README says so.
//! Anything that fails before the shell runs is a message on stderr and exit 126.

use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;

use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigHandler, Signal, signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

use super::launch::SETUP_FAILED;

/// The first argument that makes worker the containment launcher.
pub const CONTAIN_ARG: &str = "__contain";

/// Why the containment launcher could not start the command.
#[derive(Debug, thiserror::Error)]
pub(super) enum ContainError {
    /// An argument of the command contains a NUL byte.
    #[error("the command contains a NUL byte")]
    NulByte {
        /// The argument's conversion failure.
        #[source]
        source: std::ffi::NulError,
    },
    /// The launcher was started without a command.
    #[error("no command to run")]
    NoCommand,
    /// The pipe the init reports the shell's status through cannot be made.
    #[error("pipe: {source}")]
    Pipe {
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The init cannot be forked.
    #[error("fork: {source}")]
    Fork {
        /// The `fork` failure.
        #[source]
        source: nix::Error,
    },
}

/// Runs the launcher when worker was started as one; returns its exit status.
pub fn main_if_contained() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != CONTAIN_ARG {
        return None;
    }
    let command: Vec<OsString> = args.collect();
    Some(match launch(&command) {
        Ok(code) => code,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "worker: {err}");
            SETUP_FAILED
        }
    })
}

/// Whether the launcher's children get a PID namespace of their own.
fn enter_pid_namespace() -> bool {
    if nix::unistd::geteuid().is_root() && unshare(CloneFlags::CLONE_NEWPID).is_ok() {
        return true;
    }
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    if unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID).is_err() {
        return false;
    }
    std::fs::write("/proc/self/setgroups", "deny").is_ok()
        && std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).is_ok()
        && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).is_ok()
}

fn launch(command: &[OsString]) -> Result<i32, ContainError> {
    let argv: Vec<CString> = command
        .iter()
        .map(|arg| CString::new(arg.clone().into_vec()))
        .collect::<Result<_, _>>()
        .map_err(|source| ContainError::NulByte { source })?;
    if argv.is_empty() {
        return Err(ContainError::NoCommand);
    }
    let namespaced = enter_pid_namespace();
    let (status_read, status_write) =
        std::io::pipe().map_err(|source| ContainError::Pipe { source })?;
    // SAFETY: single-threaded (a fresh exec); the child runs only this file's plain code.
    match unsafe { fork() }.map_err(|source| ContainError::Fork { source })? {
        ForkResult::Child => {
            drop(status_read);
            std::process::exit(init(&argv, namespaced, status_write))
        }
        ForkResult::Parent { child } => {
            drop(status_write);
            super::launch::ignore_group_signals();
            Ok(relay_status(status_read, child))
        }
    }
}

/// The launcher's end: the shell's status as the init reported it. A signal is passed on by
/// dying of it, so the caller sees what it would have seen of the shell itself.
fn relay_status(mut status: std::io::PipeReader, init: Pid) -> i32 {
    let mut report = [0u8; 5];
    if status.read_exact(&mut report).is_err() {
        return SETUP_FAILED;
    }
    reap_if_done(init);
    let value = i32::from_le_bytes([report[1], report[2], report[3], report[4]]);
    if report[0] == b's'
        && let Ok(sig) = Signal::try_from(value)
    {
        // SAFETY: restoring the default action of one signal in a single-threaded process.
        unsafe {
            let _ = signal(sig, SigHandler::SigDfl);
        }
        let _ = nix::sys::signal::raise(sig);
        return 128 + value;
    }
    value
}

/// PID 1 of the namespace (or a subreaper): starts the shell, reports its end, and reaps
/// until nothing is left.
fn init(argv: &[CString], namespaced: bool, mut status: std::io::PipeWriter) -> i32 {
    if !namespaced {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }
    // The launcher may be gone by the time the shell ends; a closed pipe is no reason to die.
    // SAFETY: ignoring one signal in a single-threaded process.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigIgn);
    }
    // SAFETY: single-threaded; the child only execs.
    let shell = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let _ = nix::unistd::execvp(&argv[0], argv);
            let _ = writeln!(std::io::stderr(), "worker: cannot run {:?}", argv[0]);
            std::process::exit(127);
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "worker: fork: {err}");
            return SETUP_FAILED;
        }
    };
    let mut reported = false;
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == shell && !reported => {
                reported = true;
                let _ = status.write_all(&report(b'e', code));
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == shell && !reported => {
                reported = true;
                let _ = status.write_all(&report(b's', sig as i32));
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return 0,
        }
    }
}

/// Reaps the init when nothing outlived the shell (the usual case: it exits right after
/// reporting), so no zombie is left to a PID 1 that may never reap. An init still serving
/// background jobs is left running.
fn reap_if_done(init: Pid) {
    use nix::sys::wait::WaitPidFlag;
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(20);
    while std::time::Instant::now() < deadline {
        match waitpid(init, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(std::time::Duration::from_micros(200)),
            _ => return,
        }
    }
}

fn report(kind: u8, value: i32) -> [u8; 5] {
    let bytes = value.to_le_bytes();
    [kind, bytes[0], bytes[1], bytes[2], bytes[3]]
}
