//! The directory walk shared by `grep` and `find`: ripgrep's rules.
//!
//! `.gitignore`, `.ignore` and git's exclude files are honoured (in or out of a git
//! repository), hidden files are searched, the `.git` directory is not, and symlinks are not
//! followed, so a symlink loop cannot trap the walk.

use std::path::Path;

use ignore::WalkBuilder;

pub fn builder(root: &Path) -> WalkBuilder {
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
    builder
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8)
}
