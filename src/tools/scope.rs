//! `--edit-scope`: where the file-changing tools (write, edit, hashline_edit) may write.
//!
//! A scope is a list of globs relative to `--cwd`. A write is checked on the path it would
//! really change (symlinks followed, as the sandbox checks it), taken relative to the real
//! working directory: a glob matches the path itself or a directory above it, so `src` covers
//! everything under `src/`. What cannot be placed under `--cwd` is outside the scope. The
//! refusal names the scope, so the model can write where it is allowed instead.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::ToolError;
use super::access::real_path;
use super::confined::resolve_for_write;

/// The globs writes must fall under.
#[derive(Debug, Clone)]
pub struct EditScope {
    cwd: PathBuf,
    globs: GlobSet,
    patterns: Vec<String>,
}

/// A glob `--edit-scope` cannot use.
#[derive(Debug, thiserror::Error)]
pub enum EditScopeError {
    /// Not a glob.
    #[error("--edit-scope {pattern:?}: {source}")]
    Glob {
        /// The pattern given.
        pattern: String,
        /// Why it is not a glob.
        #[source]
        source: globset::Error,
    },
    /// Absolute, or climbing out of `--cwd`: a scope is inside the working directory.
    #[error("--edit-scope {0:?}: a scope is a glob relative to --cwd, inside it")]
    OutsideCwd(String),
}

impl EditScope {
    /// The scope of `patterns` under `cwd`.
    pub fn new(cwd: &Path, patterns: &[String]) -> Result<EditScope, EditScopeError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let trimmed = pattern.trim_start_matches("./").trim_end_matches('/');
            if Path::new(trimmed).is_absolute() || trimmed.split('/').any(|part| part == "..") {
                return Err(EditScopeError::OutsideCwd(pattern.clone()));
            }
            builder.add(glob(trimmed).map_err(|source| EditScopeError::Glob {
                pattern: pattern.clone(),
                source,
            })?);
        }
        let globs = builder.build().map_err(|source| EditScopeError::Glob {
            pattern: patterns.join(","),
            source,
        })?;
        Ok(EditScope {
            cwd: real_path(cwd),
            globs,
            patterns: patterns.to_vec(),
        })
    }

    /// The globs as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The directories the scope names, absolute, when every glob names a whole directory (a
    /// plain path, or one ending in `/**`); `None` when one is finer (`docs/*.md`), so that a
    /// sandbox cannot narrow commands to it.
    pub fn directories(&self) -> Option<Vec<PathBuf>> {
        self.patterns
            .iter()
            .map(|pattern| {
                let trimmed = pattern.trim_start_matches("./").trim_end_matches('/');
                let dir = trimmed.strip_suffix("/**").unwrap_or(trimmed);
                let literal = !dir.contains(['*', '?', '[', '{', '\\']) && !dir.is_empty();
                literal.then(|| self.cwd.join(dir))
            })
            .collect()
    }

    /// Refuses a write to `path` (absolute) outside the scope.
    pub fn check(&self, path: &Path) -> Result<(), ToolError> {
        let real = resolve_for_write(path)
            .map_err(|reason| self.refusal(path, &format!("it cannot be resolved ({reason})")))?;
        let Ok(relative) = real.strip_prefix(&self.cwd) else {
            return Err(self.refusal(path, "it is outside the working directory"));
        };
        if relative
            .ancestors()
            .filter(|part| !part.as_os_str().is_empty())
            .any(|part| self.globs.is_match(part))
        {
            Ok(())
        } else {
            Err(self.refusal(path, "it is outside the edit scope"))
        }
    }

    fn refusal(&self, path: &Path, why: &str) -> ToolError {
        ToolError::new(format!(
            "Write refused: {} is not writable in this run: {why}. Files may only be changed under: {}. Change files there, or say what you could not do.",
            path.display(),
            self.patterns.join(", ")
        ))
    }
}

/// One glob, with `*` not crossing `/` (as in `.gitignore`-style paths).
fn glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build()
}

#[cfg(test)]
mod tests;
