//! The directory walk shared by `grep` and `find`: ripgrep's rules.
//!
//! `.gitignore`, `.ignore` and git's exclude files are honoured (in or out of a git
//! repository), hidden files are searched, the `.git` directory is not, and symlinks are not
//! followed, so a symlink loop cannot trap the walk. Under a sandbox, the paths it hides are
//! not entered either.

use std::path::Path;
use std::sync::Arc;

use ignore::WalkBuilder;

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

fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(8)
}
