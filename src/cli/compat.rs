//! agentic-pi command lines, as orchestrators already write them.
//!
//! Almost every agentic-pi 0.3 flag is one of worker's own, under the same spelling (or a
//! visible alias: `--variant`, `--max-steps`), so the parser needs no help. This module holds
//! the rest, the argv rewrites that keep agentic-pi's names out of the code below `cli`:
//!
//! - `--retry-base-delay-ms N` becomes `--retry-base-delay Nms` (worker takes a duration).
//!
//! Invoked as `agentic-pi` (a symlink named so), worker behaves exactly as `worker`: the program
//! name only changes how usage messages spell it.

use std::ffi::OsString;

/// An agentic-pi flag whose value cannot be rewritten: a usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompatError {
    /// `--retry-base-delay-ms` is the last argument.
    #[error("--retry-base-delay-ms requires a value")]
    MissingDelay,
    /// `--retry-base-delay-ms` is not a whole number of milliseconds, at least 1.
    #[error("--retry-base-delay-ms must be a positive integer (got '{0}')")]
    InvalidDelay(String),
}

/// The argument list with agentic-pi's spellings rewritten to worker's.
pub fn normalize(args: impl IntoIterator<Item = OsString>) -> Result<Vec<OsString>, CompatError> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        let value = if text == "--retry-base-delay-ms" {
            Some(
                args.next()
                    .ok_or(CompatError::MissingDelay)?
                    .to_string_lossy()
                    .into_owned(),
            )
        } else {
            text.strip_prefix("--retry-base-delay-ms=")
                .map(str::to_string)
        };
        match value {
            Some(ms) => {
                let valid = ms.parse::<u64>().is_ok_and(|n| n >= 1);
                if !valid {
                    return Err(CompatError::InvalidDelay(ms));
                }
                out.push("--retry-base-delay".into());
                out.push(format!("{ms}ms").into());
            }
            None => out.push(arg),
        }
    }
    Ok(out)
}

/// The name usage messages should use: how the program was invoked, when it is one of ours.
pub fn program_name(argv0: Option<&OsString>) -> &'static str {
    let invoked = argv0
        .map(std::path::Path::new)
        .and_then(|path| path.file_name())
        .and_then(|name| name.to_str());
    match invoked {
        Some("agentic-pi") => "agentic-pi",
        _ => "worker",
    }
}

#[cfg(test)]
mod tests;
