//! Pi's agent directory (`~/.pi/agent`, or where `PI_CODING_AGENT_DIR` points): the operator's
//! Pi configuration, which agentic-pi reads and so worker reads too.
//!
//! Two files matter to a run: `auth.json` (model keys, read by
//! [`super::auth_file::load_default`] when no `--auth-file` is given) and `settings.json`,
//! whose `retry` block sets the model retry schedule under the flags ([`super::retry`]).
//! Only the operator's files are read: a repository's `.pi/settings.json` (which Pi layers on
//! top) is content under work, not configuration, so it does not steer the run.
//!
//! A missing file is nothing to read. A `settings.json` that is not JSON is skipped with a
//! warning, as Pi skips it; a `retry` value of the wrong type is a usage error, since it
//! cannot be said what the operator meant.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::config::Env;
use crate::input_file::{InputFile, InputFileError, InputKind};

/// The variable that moves the agent directory, as in Pi.
pub(super) const AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";

/// The agent directory: `PI_CODING_AGENT_DIR` (a leading `~` is the home directory), else
/// `$HOME/.pi/agent`; none when neither says where.
pub(super) fn agent_dir(env: &dyn Env) -> Option<PathBuf> {
    let home = env.get("HOME").map(PathBuf::from);
    match env.get(AGENT_DIR_ENV) {
        Some(dir) if dir == "~" => home,
        Some(dir) => match dir.strip_prefix("~/") {
            Some(rest) => home.map(|home| home.join(rest)),
            None => Some(PathBuf::from(dir)),
        },
        None => home.map(|home| home.join(".pi").join("agent")),
    }
}

/// The `retry` block of `settings.json`: each field the operator set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FileRetry {
    pub enabled: Option<bool>,
    pub max_retries: Option<u32>,
    pub base_delay: Option<Duration>,
}

/// What `settings.json` says about retries, and the warnings found reading it.
#[derive(Debug, Default)]
pub(super) struct Settings {
    pub retry: FileRetry,
    pub warnings: Vec<String>,
}

/// Why Pi's `settings.json` cannot be used: a usage error.
#[derive(Debug, thiserror::Error)]
pub enum PiSettingsError {
    /// The file exists and cannot be read.
    #[error("Pi's settings file {path}: {source}")]
    Unreadable {
        /// The settings file.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        source: InputFileError,
    },
    /// `retry` is not an object.
    #[error("{path}: retry must be an object")]
    RetryNotObject {
        /// The settings file.
        path: PathBuf,
    },
    /// `retry.enabled` is not a boolean.
    #[error("{path}: retry.enabled must be true or false")]
    RetryEnabled {
        /// The settings file.
        path: PathBuf,
    },
    /// `retry.maxRetries` is not a count.
    #[error("{path}: retry.maxRetries must be a non-negative integer")]
    RetryMaxRetries {
        /// The settings file.
        path: PathBuf,
    },
    /// `retry.baseDelayMs` is not a positive number of milliseconds.
    #[error("{path}: retry.baseDelayMs must be a positive integer")]
    RetryBaseDelay {
        /// The settings file.
        path: PathBuf,
    },
}

/// Reads `<dir>/settings.json`.
pub(super) fn settings(dir: &Path) -> Result<Settings, PiSettingsError> {
    let path = dir.join("settings.json");
    let shown = path.display();
    if matches!(std::fs::symlink_metadata(&path), Err(err) if err.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(Settings::default());
    }
    let text = InputFile::open(&path)
        .and_then(|file| file.read_text(InputKind::Settings))
        .map_err(|source| PiSettingsError::Unreadable {
            path: path.clone(),
            source,
        })?;
    let parsed: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(err) => {
            return Ok(Settings {
                retry: FileRetry::default(),
                warnings: vec![format!(
                    "Pi's settings file {shown}: not JSON ({err}); its settings are not used"
                )],
            });
        }
    };
    let retry = match parsed.get("retry") {
        None | Some(Value::Null) => FileRetry::default(),
        Some(block) => parse_retry(&path, block)?,
    };
    Ok(Settings {
        retry,
        warnings: Vec::new(),
    })
}

/// `{"enabled": bool, "maxRetries": N >= 0, "baseDelayMs": N >= 1, "provider": {...}}`, the
/// block of the settings file at `path`.
fn parse_retry(path: &Path, block: &Value) -> Result<FileRetry, PiSettingsError> {
    let path = || path.to_path_buf();
    let Value::Object(block) = block else {
        return Err(PiSettingsError::RetryNotObject { path: path() });
    };
    let enabled = match block.get("enabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(enabled)) => Some(*enabled),
        Some(_) => return Err(PiSettingsError::RetryEnabled { path: path() }),
    };
    let max_retries = match block.get("maxRetries") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| PiSettingsError::RetryMaxRetries { path: path() })?,
        ),
    };
    let base_delay = match block.get("baseDelayMs") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .filter(|ms| *ms >= 1)
                .map(Duration::from_millis)
                .ok_or_else(|| PiSettingsError::RetryBaseDelay { path: path() })?,
        ),
    };
    Ok(FileRetry {
        enabled,
        max_retries,
        base_delay,
    })
}

#[cfg(test)]
mod tests;
