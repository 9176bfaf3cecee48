//! Turning a path the model wrote into a path on disk.
//!
//! Relative paths are taken from the run's cwd; `~` is the home directory; a leading `@` (a
//! habit from chat UIs that mention files) is dropped; exotic Unicode spaces that models copy
//! from rendered text become plain spaces. A NUL byte can name no file, so it is refused here
//! with a message instead of surfacing as an obscure OS error later.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// The path on disk for a path the model wrote: `@` dropped, Unicode spaces made plain, `~`
/// expanded, relative paths joined to `cwd`. An empty path or one with a NUL byte is refused.
pub fn resolve(cwd: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    if raw.contains('\0') {
        return Err(ToolError::new(format!(
            "Invalid path {raw:?}: paths cannot contain a NUL byte"
        )));
    }
    let cleaned: String = raw
        .strip_prefix('@')
        .unwrap_or(raw)
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if cleaned.is_empty() {
        return Err(ToolError::new("Invalid path: the path is empty"));
    }
    let expanded = match cleaned.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(&cleaned),
        },
        _ => PathBuf::from(&cleaned),
    };
    Ok(if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    })
}

/// `path` relative to `base` with `/` separators, or `path` itself when it is not under it.
pub fn relative_posix(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

fn home_dir() -> Option<PathBuf> {
    home_from(std::env::var_os("HOME"))
}

/// The home directory `HOME` names; an empty value names none.
fn home_from(var: Option<std::ffi::OsString>) -> Option<PathBuf> {
    var.filter(|home| !home.is_empty()).map(PathBuf::from)
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

#[cfg(test)]
mod tests;
