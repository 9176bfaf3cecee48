//! `--auth-file`: model API keys in Pi's `auth.json` shape,
//! `{"openai": {"type": "api_key", "key": "sk-…"}}`, one entry per provider.
//!
//! Like ssh with a private key, worker refuses a file that group or others can read: a key
//! that every user of the machine can read is already leaked. OAuth entries (Pi's
//! subscription logins) are reported and not used.
//!
//! Without the flag, Pi's own store in its agent directory is read the same way
//! ([`load_default`]; see [`super::pi_agent`]), so keys an operator logged in with Pi reach
//! worker as they reach agentic-pi.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::input_file::{InputFile, InputFileError, InputKind};

/// Why an auth file is refused: a usage error. `origin` is how the file is named:
/// `--auth-file`, or `Pi's auth file`.
#[derive(Debug, thiserror::Error)]
pub enum AuthFileError {
    /// The file cannot be read.
    #[error("{origin} {path}: {source}")]
    Unreadable {
        /// How the file is named.
        origin: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        source: InputFileError,
    },
    /// Group or others can read the file.
    #[error("{origin} {path}: readable by others (mode {mode:o}); run chmod 600 on it")]
    ReadableByOthers {
        /// How the file is named.
        origin: &'static str,
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is not a JSON object.
    #[error("{origin} {path}: not a JSON object of providers: {source}")]
    NotJson {
        /// How the file is named.
        origin: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it did not parse.
        #[source]
        source: serde_json::Error,
    },
}

#[derive(Debug, Default)]
pub(super) struct AuthFile {
    /// Provider name → API key.
    pub keys: HashMap<String, String>,
    pub warnings: Vec<String>,
}

/// `--auth-file PATH`: every problem is a usage error.
pub(super) fn load(path: &Path) -> Result<AuthFile, AuthFileError> {
    let text = read(path, FLAG)?;
    let entries = entries(&text).map_err(|source| AuthFileError::NotJson {
        origin: FLAG,
        path: path.to_path_buf(),
        source,
    })?;
    Ok(from_entries(entries, FLAG))
}

/// Pi's own store, `<agent dir>/auth.json`, read when no `--auth-file` is given (as
/// agentic-pi does). A missing file is no keys. A file that is not JSON is skipped with a
/// warning, as Pi skips it; one others can read, or that cannot be read, is refused like
/// `--auth-file`.
pub(super) fn load_default(path: &Path) -> Result<AuthFile, AuthFileError> {
    let origin = DEFAULT_SOURCE;
    if matches!(std::fs::symlink_metadata(path), Err(err) if err.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(AuthFile::default());
    }
    let text = read(path, origin)?;
    match entries(&text) {
        Ok(entries) => Ok(from_entries(entries, origin)),
        Err(source) => {
            let refused = AuthFileError::NotJson {
                origin,
                path: path.to_path_buf(),
                source,
            };
            Ok(AuthFile {
                keys: HashMap::new(),
                warnings: vec![format!("{refused}; no key is read from it")],
            })
        }
    }
}

/// How the flag's file is named in messages.
const FLAG: &str = "--auth-file";
/// How Pi's own store is named in messages.
const DEFAULT_SOURCE: &str = "Pi's auth file";

/// The file's text, refused when group or others can read it.
fn read(path: &Path, origin: &'static str) -> Result<String, AuthFileError> {
    let unreadable = |source| AuthFileError::Unreadable {
        origin,
        path: path.to_path_buf(),
        source,
    };
    let file = InputFile::open(path).map_err(unreadable)?;
    let mode = file.metadata().permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(AuthFileError::ReadableByOthers {
            origin,
            path: path.to_path_buf(),
            mode,
        });
    }
    file.read_text(InputKind::AuthFile).map_err(unreadable)
}

/// The file's entries, when it is a JSON object.
fn entries(text: &str) -> Result<serde_json::Map<String, Value>, serde_json::Error> {
    serde_json::from_str(text)
}

fn from_entries(entries: serde_json::Map<String, Value>, source: &str) -> AuthFile {
    let mut file = AuthFile::default();
    for (provider, entry) in entries {
        match (
            entry.get("type").and_then(Value::as_str),
            entry.get("key").and_then(Value::as_str),
        ) {
            (Some("api_key"), Some(key)) if !key.trim().is_empty() => {
                file.keys.insert(provider, key.trim().to_string());
            }
            (Some("oauth"), _) => file.warnings.push(format!(
                "{source}: {provider}: OAuth logins are not supported; give an api_key entry"
            )),
            _ => file.warnings.push(format!(
                "{source}: {provider}: expected {{\"type\": \"api_key\", \"key\": \"…\"}}; ignored"
            )),
        }
    }
    file
}

#[cfg(test)]
mod tests;
