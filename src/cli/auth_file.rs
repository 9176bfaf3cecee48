//! `--auth-file`: model API keys in Pi's `auth.json` shape,
//! `{"openai": {"type": "api_key", "key": "sk-…"}}`, one entry per provider.
//!
//! Like ssh with a private key, worker refuses a file that group or others can read: a key
//! that every user of the machine can read is already leaked. OAuth entries (Pi's
//! subscription logins) are reported and not used.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::input_file::{InputFile, InputKind};

#[derive(Debug, Default)]
pub struct AuthFile {
    /// Provider name → API key.
    pub keys: HashMap<String, String>,
    pub warnings: Vec<String>,
}

pub fn load(path: &Path) -> Result<AuthFile, String> {
    let shown = path.display();
    let file = InputFile::open(path).map_err(|err| format!("--auth-file {shown}: {err}"))?;
    let mode = file.metadata().permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "--auth-file {shown}: readable by others (mode {mode:o}); run chmod 600 on it"
        ));
    }
    let text = file
        .read_text(InputKind::AuthFile)
        .map_err(|err| format!("--auth-file {shown}: {err}"))?;
    let entries: serde_json::Map<String, Value> = serde_json::from_str(&text)
        .map_err(|err| format!("--auth-file {shown}: not a JSON object of providers: {err}"))?;
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
                "--auth-file: {provider}: OAuth logins are not supported; give an api_key entry"
            )),
            _ => file.warnings.push(format!(
                "--auth-file: {provider}: expected {{\"type\": \"api_key\", \"key\": \"…\"}}; ignored"
            )),
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
