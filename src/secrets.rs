//! Secret values that must never leave the process: every credential worker knows (model
//! provider keys from every source, GitHub tokens, App keys and the installation tokens minted
//! during the run, web search keys, OTEL header values; `cli::credentials` lists them).
//!
//! One shared set per run, filled before anything is printed and growing as tokens are
//! minted. Every sink passes its text through it at one choke point: the emitter (stdout),
//! the binary's stderr writer, the model request, the recording, the session file, the
//! trace file and ZeroMQ tee, OTEL export, `--output-last-message`, a command's output as it
//! arrives (so its progress, spill file and result), and every tool result. So a key cannot
//! escape even through a command that prints its environment.
//!
//! What counts as a secret: a value is trimmed, and ignored when shorter than [`MIN_LEN`]
//! characters: placeholders such as `EMPTY`, `none` or `ollama`, which local servers accept
//! as keys, would otherwise be cut out of ordinary text. Each value is also redacted in its
//! JSON-escaped form, and a value of several lines (a PEM key) line by line too, so a command
//! that prints only part of the file still shows none of it.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::sync::RwLockExt;

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";
/// Shorter values are not secrets: redacting them would mangle ordinary text.
pub const MIN_LEN: usize = 8;

/// The run's secret values (each in every form it is redacted in), longest first. Clones share
/// one set, so a token added later is redacted everywhere.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Arc<RwLock<Vec<String>>>,
}

impl Secrets {
    /// A set holding `values`, each added as by [`Secrets::add`].
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Self {
        let secrets = Secrets::default();
        for value in values {
            secrets.add(value);
        }
        secrets
    }

    /// Adds a value, trimmed (kept longest first, so a secret containing another is replaced
    /// whole). Its JSON-escaped form is added too: a secret with `"`, `\` or a newline appears
    /// escaped in every serialized line. A value of several lines adds each line as well,
    /// except PEM armor (`-----BEGIN …`), which is no secret.
    pub fn add(&self, value: impl AsRef<str>) {
        let value = value.as_ref().trim();
        let lines = value
            .lines()
            .map(str::trim)
            .filter(|line| *line != value && !line.starts_with("-----"));
        let mut forms: Vec<String> = Vec::new();
        // The value itself is the first form, so a short value adds nothing.
        for form in std::iter::once(value).chain(lines) {
            if form.chars().count() < MIN_LEN {
                continue;
            }
            forms.push(form.to_string());
            if let Some(escaped) = json_escaped(form).filter(|escaped| escaped != form) {
                forms.push(escaped);
            }
        }
        let mut values = self.values.write_or_recover();
        for form in forms {
            if !values.contains(&form) {
                values.push(form);
            }
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// How many forms the set holds. It only grows (a secret is never taken back), so text
    /// redacted when it was `n` is still clean while it is `n`: a cache of redacted text knows
    /// by it when to redo its work.
    pub fn generation(&self) -> usize {
        self.values.read_or_recover().len()
    }

    /// Whether the set holds no value (nothing to redact).
    pub fn is_empty(&self) -> bool {
        self.values.read_or_recover().is_empty()
    }

    /// Whether some secret occurs in `bytes`. When none does, redacting any text stored
    /// verbatim inside them (a JSON string without escapes, a msgpack string) changes nothing.
    pub fn occur_in(&self, bytes: &[u8]) -> bool {
        let values = self.values.read_or_recover();
        values
            .iter()
            .any(|secret| memchr::memmem::find(bytes, secret.as_bytes()).is_some())
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when nothing was replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let values = self.values.read_or_recover();
        let mut out = Cow::Borrowed(text);
        for secret in values.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// Bytes with every secret replaced; for output that need not be UTF-8 (a command's).
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let values = self.values.read_or_recover();
        let mut out = Cow::Borrowed(bytes);
        for secret in values.iter() {
            let finder = memchr::memmem::Finder::new(secret.as_bytes());
            if finder.find(&out).is_none() {
                continue;
            }
            let mut replaced = Vec::with_capacity(out.len());
            let mut rest: &[u8] = &out;
            while let Some(at) = finder.find(rest) {
                replaced.extend_from_slice(&rest[..at]);
                replaced.extend_from_slice(REDACTED.as_bytes());
                rest = &rest[at + secret.len()..];
            }
            replaced.extend_from_slice(rest);
            out = Cow::Owned(replaced);
        }
        out
    }

    /// Where the longest suffix of `bytes` that is the start of some secret begins (where a
    /// secret split across two pieces of a stream would start). Secrets are UTF-8, so in a
    /// UTF-8 text this is always a character boundary.
    fn open_secret_at(&self, bytes: &[u8]) -> Option<usize> {
        let values = self.values.read_or_recover();
        let longest = values.first().map_or(0, String::len);
        let earliest = bytes.len().saturating_sub(longest.saturating_sub(1));
        (earliest..bytes.len()).find(|i| {
            values
                .iter()
                .any(|secret| secret.as_bytes().starts_with(&bytes[*i..]))
        })
    }

    /// Redacts every string inside a JSON value.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(clean) = self.redact(text) {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_value(v)),
            _ => {}
        }
    }
}

/// The password a URL carries (`https://user:pass@host`), as written and percent-decoded.
pub fn url_password(raw: &str) -> Vec<String> {
    let Some(password) = url::Url::parse(raw.trim())
        .ok()
        .and_then(|url| url.password().map(str::to_string))
    else {
        return Vec::new();
    };
    let decoded = percent_encoding::percent_decode_str(&password)
        .decode_utf8_lossy()
        .into_owned();
    vec![password, decoded]
}

/// `value` as it appears inside a JSON string.
fn json_escaped(value: &str) -> Option<String> {
    let quoted = serde_json::to_string(value).ok()?;
    Some(quoted[1..quoted.len() - 1].to_string())
}

/// Redacts a stream that arrives in pieces (streamed deltas, command output): a secret split
/// across two pieces is still replaced, because a piece's end that could begin a secret is held
/// back (at most the longest secret's length minus one) until the next piece or [`flush`].
///
/// [`flush`]: StreamRedactor::flush
#[derive(Debug, Default)]
pub struct StreamRedactor {
    held: Vec<u8>,
}

impl StreamRedactor {
    /// The part of `held + piece` that is safe to show now, redacted.
    pub fn push(&mut self, secrets: &Secrets, piece: &str) -> String {
        text(self.push_bytes(secrets, piece.as_bytes()))
    }

    /// Whatever was held back (the stream ended: it is not a secret).
    pub fn flush(&mut self, secrets: &Secrets) -> String {
        text(self.flush_bytes(secrets))
    }

    /// [`push`](Self::push) for bytes that need not be UTF-8.
    pub fn push_bytes(&mut self, secrets: &Secrets, piece: &[u8]) -> Vec<u8> {
        self.held.extend_from_slice(piece);
        let mut shown = secrets.redact_bytes(&self.held).into_owned();
        self.held = match secrets.open_secret_at(&shown) {
            Some(cut) => shown.split_off(cut),
            None => Vec::new(),
        };
        shown
    }

    /// [`flush`](Self::flush) for bytes that need not be UTF-8.
    pub fn flush_bytes(&mut self, secrets: &Secrets) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        secrets.redact_bytes(&held).into_owned()
    }
}

/// Redacting UTF-8 replaces whole UTF-8 sequences with ASCII, and holding back cuts only at
/// the start of a secret, so the pieces of a `str` stay UTF-8.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests;
