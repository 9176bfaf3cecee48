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
use std::path::Path;

use serde_json::Value;

use crate::input_file::{InputFile, InputKind};

#[derive(Debug, Default)]
pub(super) struct AuthFile {
    /// Provider name → API key.
    pub keys: HashMap<String, String>,
    pub warnings: Vec<String>,
}

/// `--auth-file PATH`: every problem is a usage error.
pub(super) fn load(path: &Path) -> Result<AuthFile, String> {
    let text = read(path, FLAG)?;
    let entries = entries(&text).map_err(|err| format!("{FLAG} {}: {err}", path.display()))?;
    Ok(from_entries(entries, FLAG))
}

/// Pi's own store, `<agent dir>/auth.json`, read when no `--auth-file` is given (as
/// agentic-pi does). A missing file is no keys. A file that is not JSON is skipped with a
/// warning, as Pi skips it; one others can read, or that cannot be read, is refused like
/// `--auth-file`.
pub(super) fn load_default(path: &Path) -> Result<AuthFile, String> {
    let source = DEFAULT_SOURCE;
    if matches!(std::fs::symlink_metadata(path), Err(err) if err.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(AuthFile::default());
    }
    let text = read(path, source)?;
    match entries(&text) {
        Ok(entries) => Ok(from_entries(entries, source)),
        Err(err) => Ok(AuthFile {
            keys: HashMap::new(),
            warnings: vec![format!(
                "{source} {}: {err}; no key is read from it",
                path.display()
            )],
        }),
    }
}

/// How the flag's file is named in messages.
const FLAG: &str = "--auth-file";
/// How Pi's own store is named in messages.
const DEFAULT_SOURCE: &str = "Pi's auth file";

/// The file's text, refused when group or others can read it.
fn read(path: &Path, source: &str) -> Result<String, String> {
    let shown = path.display();
    let file = InputFile::open(path).map_err(|err| format!("{source} {shown}: {err}"))?;
    let mode = file.metadata().permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{source} {shown}: readable by others (mode {mode:o}); run chmod 600 on it"
        ));
    }
    file.read_text(InputKind::AuthFile)
        .map_err(|err| format!("{source} {shown}: {err}"))
}

fn entries(text: &str) -> Result<serde_json::Map<String, Value>, String> {
    serde_json::from_str(text).map_err(|err| format!("not a JSON object of providers: {err}"))
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
