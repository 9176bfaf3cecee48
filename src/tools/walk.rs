//! The directory walk shared by `grep` and `find`: ripgrep's rules.
//!
//! `.gitignore`, `.ignore` and git's exclude files are honoured (in or out of a git
//! repository), hidden files are searched, the `.git` directory is not, and symlinks are not
//! followed, so a symlink loop cannot trap the walk. Under a sandbox, the paths it hides are
//! not entered either.
//!
//! A small tree is walked on the calling thread: ignore's parallel walk starts a thread per
//! core for every search, and a thread with nothing to do sleeps a millisecond at a time until
//! the others finish, which costs more than a few hundred entries take to search. The walk
//! lists up to [`SERIAL_ENTRIES`] entries first; a tree with more is walked again, in
//! parallel.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use ignore::{DirEntry, WalkBuilder, WalkState};

use super::access::PathPolicy;

pub(super) fn builder(root: &Path, policy: Option<&Arc<PathPolicy>>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(threads())
        .filter_entry(|entry| entry.file_name() != ".git");
    if let Some(policy) = policy.cloned() {
        // Entries are the root joined with names (links are not followed), so the real path
        // of an entry is the root's real path joined with the same names.
        let (root, real_root) = (root.to_path_buf(), super::access::real_path(root));
        builder.filter_entry(move |entry| {
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            entry.file_name() != ".git" && !policy.is_hidden(&real_root.join(rel))
        });
    }
    builder
}

/// The most entries a tree may hold to be walked on the calling thread.
const SERIAL_ENTRIES: usize = 256;

/// What sees each entry of a walk (or the error in its place): `Break` ends the walk.
pub(super) type Visitor<'s> =
    Box<dyn FnMut(Result<DirEntry, ignore::Error>) -> ControlFlow<()> + Send + 's>;

/// Walks `builder`'s tree, handing each entry to a visitor `make` returns: one, on this thread,
/// for a tree of at most [`SERIAL_ENTRIES`] entries; one per walking thread otherwise.
pub(super) fn visit<'s>(builder: &WalkBuilder, mut make: impl FnMut() -> Visitor<'s>) {
    let mut listed = Vec::new();
    for entry in builder.build() {
        if listed.len() == SERIAL_ENTRIES {
            return builder.build_parallel().run(|| {
                let mut visitor = make();
                Box::new(move |entry| match visitor(entry) {
                    ControlFlow::Continue(()) => WalkState::Continue,
                    ControlFlow::Break(()) => WalkState::Quit,
                })
            });
        }
        listed.push(entry);
    }
    let mut visitor = make();
    for entry in listed {
        if visitor(entry).is_break() {
            break;
        }
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(8)
}

#[cfg(test)]
mod tests;
