//! Where the init gets the command it starts: from the launcher's own arguments, or, for a
//! launcher started ahead of its command (a standby, see [`crate::tools::Standby`]), from its
//! stdin once the sandbox is set up: the shell's arguments and the call's environment changes
//! as JSON ([`crate::tools::CommandLine::standby_input`]), then the end of the input. The
//! command's stdin is `/dev/null` either way.
//!
//! A standby does not die with worker while it waits (worker starts it without a parent-death
//! signal): worker's end, however it comes, closes its input, and it ends by itself, removing
//! its cgroup, instead of being killed halfway. Once its init has the command, the launcher
//! dies with worker like any other ([`tie_to_worker_once_started`]).
//!
//! A standby built its view before the command existed, so a credential that appeared since
//! would not be covered: the init looks at every hidden path it found missing once more, and
//! refuses the command if one is there now. (worker itself hands a command only to a standby
//! whose fingerprint, taken when it started, is still that of the files; this check closes the
//! moment between the fingerprint and the view.)

use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::LaunchError;

/// The longest command input read: more than the kernel passes to one argument (128 KiB).
const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The command given on the launcher's command line, checked for NUL bytes.
pub(super) fn from_arguments(command: &[OsString]) -> Result<Vec<CString>, LaunchError> {
    command
        .iter()
        .map(|arg| CString::new(arg.clone().into_vec()))
        .collect::<Result<_, _>>()
        .map_err(|source| LaunchError::NulByte { source })
}

/// Reads the command from stdin, and puts `/dev/null` in its place. An input that ends
/// without a byte is [`LaunchError::Unused`]: worker ended the standby.
pub(super) fn from_stdin() -> Result<Vec<CString>, LaunchError> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut input)
        .map_err(|source| LaunchError::CommandInput { source })?;
    if input.is_empty() {
        return Err(LaunchError::Unused);
    }
    if input.len() as u64 > MAX_INPUT_BYTES {
        return Err(LaunchError::CommandTooLong {
            limit: MAX_INPUT_BYTES,
        });
    }
    let given: Input =
        serde_json::from_slice(&input).map_err(|source| LaunchError::CommandInvalid { source })?;
    if given.argv.is_empty() {
        return Err(LaunchError::NoCommand);
    }
    for (name, value) in &given.env {
        let bad = |text: &str| text.contains('\0');
        if name.is_empty() || name.contains('=') || bad(name) || value.as_deref().is_some_and(bad) {
            return Err(LaunchError::BadVariable { name: name.clone() });
        }
        // SAFETY: the init is single-threaded (a fresh exec that only forked).
        unsafe {
            match value {
                Some(value) => std::env::set_var(name, value),
                None => std::env::remove_var(name),
            }
        }
    }
    let null =
        std::fs::File::open("/dev/null").map_err(|source| LaunchError::CommandInput { source })?;
    nix::unistd::dup2_stdin(&null).map_err(|source| LaunchError::CommandInput {
        source: source.into(),
    })?;
    let argv: Vec<OsString> = given.argv.into_iter().map(OsString::from).collect();
    from_arguments(&argv)
}

/// A standby's input.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The shell's arguments.
    argv: Vec<String>,
    /// Variables to set (or, with `null`, remove) for the command.
    #[serde(default)]
    env: Vec<(String, Option<String>)>,
}

/// Refuses the command if a hidden path that was missing when the view was built is there
/// now: it is not covered.
pub(super) fn check_still_missing(missing: &[PathBuf]) -> Result<(), LaunchError> {
    match missing.iter().find(|path| std::fs::metadata(path).is_ok()) {
        Some(path) => Err(LaunchError::HiddenAppeared { path: path.clone() }),
        None => Ok(()),
    }
}

/// The launcher's side of a standby: waits for the init's word that its command has come (or
/// for the init to end without one), then dies with worker (`PDEATHSIG`), and if worker is
/// already gone, stops the command at once.
pub(super) fn tie_to_worker_once_started(started: OwnedFd, worker: Pid, init: Pid) {
    let mut word = [0u8; 1];
    let came = loop {
        match nix::unistd::read(&started, &mut word) {
            Ok(1) => break true,
            Err(nix::errno::Errno::EINTR) => {}
            Ok(_) | Err(_) => break false,
        }
    };
    if !came {
        return;
    }
    let tied = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_ok();
    if !tied || nix::unistd::getppid() != worker {
        let _ = kill(init, Signal::SIGKILL);
    }
}
