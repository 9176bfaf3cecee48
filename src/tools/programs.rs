//! How worker finds the programs it starts itself, with its own environment or with secrets:
//! the watchdog, tool hooks, MCP servers and git.
//!
//! A `PATH` entry that is not absolute (`node_modules/.bin`, `.`, or an empty one) is looked up
//! in the working directory, which is the repository, and a repository can put a program of its
//! own there. So the shell is started by its full path, and those processes get `PATH` without
//! its relative entries: the programs they name are then looked up only where the operator's
//! absolute entries point. A command the model runs keeps `PATH` as it is: it has neither
//! worker's environment nor a secret, and the repository is its to run anyway.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The POSIX shell of worker's own processes, by its full path: a bare `sh` would be looked up
/// in `PATH`. A machine without it gets no watchdog, and its hooks fail (which denies their
/// calls).
pub(crate) const POSIX_SHELL: &str = "/bin/sh";

/// The absolute directories of a `PATH` value, in order.
pub(crate) fn absolute_dirs(path: &OsStr) -> impl Iterator<Item = PathBuf> + '_ {
    std::env::split_paths(path).filter(|dir| dir.is_absolute())
}

/// `command`'s `PATH` (the one set on it, else worker's) without its relative entries. Nothing
/// changes when it has none, or runs without `PATH`.
pub(crate) fn absolute_path_only(command: &mut std::process::Command) {
    let set = command
        .get_envs()
        .find(|(key, _)| *key == "PATH")
        .map(|(_, value)| value.map(OsStr::to_os_string));
    let path = match set {
        Some(Some(path)) => path,
        Some(None) => return,
        None => match std::env::var_os("PATH") {
            Some(path) => path,
            None => return,
        },
    };
    if let Some(kept) = absolute_only(&path) {
        command.env("PATH", kept);
    }
}

/// `path` without its relative entries; `None` when it has none to drop.
fn absolute_only(path: &OsStr) -> Option<OsString> {
    let all = std::env::split_paths(path).count();
    let kept: Vec<PathBuf> = absolute_dirs(path).collect();
    if kept.len() == all {
        return None;
    }
    // Joining fails only for an entry holding the separator, which splitting cannot yield.
    std::env::join_paths(kept).ok()
}

#[cfg(test)]
mod tests;
