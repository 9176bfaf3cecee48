//! Golden files (the README's flag table, the man page, the event schema, tool definitions,
//! the expected event streams) and their rewriting when the code changes on purpose.
//!
//! Tests compare generated text with a committed file. `WORKER_BLESS` names the files a test
//! run may rewrite instead: a comma-separated list of paths relative to the repository root
//! (a directory covers the files under it), or `all`. Every rewrite prints a unified diff of
//! what changed to stderr, so the run that wrote the files is also the review of them; an
//! unset variable rewrites nothing, and a value that names no file is refused, since it would
//! bless nothing and leave the person who set it believing otherwise.

use std::path::{Path, PathBuf};

use similar::TextDiff;

/// The environment variable naming the files to rewrite.
pub const VAR: &str = "WORKER_BLESS";

/// Lines of unchanged text shown around each change in the printed diff.
const CONTEXT_LINES: usize = 3;

/// Why a golden file could not be blessed.
#[derive(Debug, thiserror::Error)]
pub enum BlessError {
    /// `WORKER_BLESS` is set to a value that names no file (`1`, `true`, an empty list);
    /// carries the value.
    #[error(
        "{VAR}={0:?} names no file: give a comma-separated list of paths relative to the repository root, or `all`"
    )]
    NoFile(String),
    /// Writing the golden file failed.
    #[error("cannot bless {path}: {source}")]
    Write {
        /// The file's path (the repository root joined with the name).
        path: PathBuf,
        /// The error from writing it.
        source: std::io::Error,
    },
}

/// Whether `file` (relative to the repository root) is among the files `WORKER_BLESS` names.
pub fn requested(file: &str) -> Result<bool, BlessError> {
    match std::env::var(VAR) {
        Ok(list) => names(&list, file),
        Err(_) => Ok(false),
    }
}

/// Whether the `WORKER_BLESS` value `list` names `file`.
pub fn names(list: &str, file: &str) -> Result<bool, BlessError> {
    let entries: Vec<&str> = list
        .split(',')
        .map(|entry| entry.trim().trim_end_matches('/'))
        .filter(|entry| !entry.is_empty())
        .collect();
    if entries.is_empty() || entries.iter().any(|entry| is_not_a_path(entry)) {
        return Err(BlessError::NoFile(list.to_string()));
    }
    Ok(entries.iter().any(|entry| {
        *entry == "all"
            || file == *entry
            || file
                .strip_prefix(entry)
                .is_some_and(|rest| rest.starts_with('/'))
    }))
}

/// `1`, `true`, `yes`: the switch-like values an older habit would set.
fn is_not_a_path(entry: &str) -> bool {
    ["1", "0", "true", "false", "yes", "no", "on", "off"].contains(&entry)
}

/// Writes `content` to `root/file` when `WORKER_BLESS` names `file`, printing the diff from the
/// old content to stderr. Returns whether it wrote.
#[allow(
    clippy::print_stderr,
    reason = "called from tests only: the diff is for the person running them to review"
)]
pub fn bless(root: &Path, file: &str, content: &str) -> Result<bool, BlessError> {
    if !requested(file)? {
        return Ok(false);
    }
    let path = root.join(file);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old == content {
        eprintln!("{VAR}: {file} unchanged");
        return Ok(true);
    }
    let write_error = |source| BlessError::Write {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_error)?;
    }
    std::fs::write(&path, content).map_err(write_error)?;
    let diff = TextDiff::from_lines(old.as_str(), content)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string();
    eprintln!("{VAR}: rewrote {file}:\n{diff}");
    Ok(true)
}

#[cfg(test)]
mod tests;
