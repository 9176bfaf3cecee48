//! Collecting a command's output in bounded memory.
//!
//! Everything is kept in memory until the output is certain to be truncated (more than 50 KiB
//! or 2000 lines); from then on the output goes to a spill file in the temporary directory
//! (`$TMPDIR/worker-run-*/bash-*.log`, removed with the run: see [`Leftovers`]) and memory
//! holds only a rolling tail, so a command printing
//! 200 MB costs a file, not 200 MB of RAM. The file is bounded too: it keeps the first
//! [`SPILL_HEAD`] bytes, and when the output is longer, a line saying how much was left out and
//! the last [`TAIL_KEEP`] bytes, so `yes` cannot fill the disk.
//!
//! Output is redacted as it arrives, before anything else sees it: the progress updates, the
//! spill file (which another command may read while the run lives) and the result are all
//! cut from redacted bytes, so no cut can keep half a secret. The sizes reported are those of
//! the redacted output.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::process::Leftovers;
use crate::secrets::{Secrets, StreamRedactor};
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_tail};

/// Bytes of tail kept after spilling: twice what is shown, so the shown part starts on a
/// whole line.
pub(super) const TAIL_KEEP: usize = 2 * MAX_BYTES;
/// The most of a command's output start that a spill file keeps.
pub(super) const SPILL_HEAD: u64 = 16 * 1024 * 1024;

pub(super) struct Output {
    buffer: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
    /// Bytes since the last newline (the length of the unterminated last line).
    line_len: u64,
    spill: Option<(File, PathBuf)>,
    /// Bytes written to the spill file (at most [`SPILL_HEAD`] until `finish`).
    spilled: u64,
    spill_error: Option<String>,
    secrets: Secrets,
    /// Where the spill file goes, and who removes it.
    leftovers: Leftovers,
    /// Redacts across reads: the end of a read that could begin a secret waits for the next.
    redactor: StreamRedactor,
    /// Output not yet sent as a progress update.
    pending: Vec<u8>,
}

impl Output {
    pub(super) fn new(secrets: Secrets, leftovers: Leftovers) -> Self {
        Output {
            buffer: Vec::with_capacity(8 * 1024),
            total_bytes: 0,
            newlines: 0,
            line_len: 0,
            spill: None,
            spilled: 0,
            spill_error: None,
            secrets,
            leftovers,
            redactor: StreamRedactor::default(),
            pending: Vec::new(),
        }
    }

    /// A read of the command's output.
    pub(super) fn push(&mut self, raw: &[u8]) {
        let shown = self.redactor.push_bytes(&self.secrets, raw);
        self.accept(&shown);
    }

    /// Takes redacted output.
    fn accept(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.total_bytes += chunk.len() as u64;
        let newlines = memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.newlines += newlines;
        self.line_len = match memchr::memrchr(b'\n', chunk) {
            Some(i) => (chunk.len() - i - 1) as u64,
            None => self.line_len + chunk.len() as u64,
        };
        self.pending.extend_from_slice(chunk);
        if self.pending.len() > 2 * MAX_BYTES {
            let cut = self.pending.len() - MAX_BYTES;
            self.pending.drain(..cut);
        }
        self.buffer.extend_from_slice(chunk);
        if self.spill.is_none()
            && self.spill_error.is_none()
            && (self.total_bytes > MAX_BYTES as u64 || self.newlines > MAX_LINES as u64)
        {
            self.start_spill();
        } else if self.spill.is_some() {
            let room = SPILL_HEAD
                .saturating_sub(self.spilled)
                .min(chunk.len() as u64) as usize;
            self.write_file(&chunk[..room]);
        }
        if self.buffer.len() > 2 * TAIL_KEEP {
            let cut = self.buffer.len() - TAIL_KEEP;
            self.buffer.drain(..cut);
        }
    }

    fn start_spill(&mut self) {
        let created = self.leftovers.spill_dir().and_then(|dir| {
            tempfile::Builder::new()
                .prefix("bash-")
                .suffix(".log")
                .tempfile_in(dir)?
                .keep()
                .map_err(|err| err.error)
        });
        match created {
            Ok(spill) => {
                self.spill = Some(spill);
                let buffered = std::mem::take(&mut self.buffer);
                self.write_file(&buffered);
                self.buffer = buffered;
            }
            Err(err) => self.spill_error = Some(err.to_string()),
        }
    }

    /// Writes output bytes to the spill file, counted against the head budget.
    fn write_file(&mut self, bytes: &[u8]) {
        let Some((file, path)) = &mut self.spill else {
            return;
        };
        match file.write_all(bytes) {
            Ok(()) => self.spilled += bytes.len() as u64,
            Err(err) => {
                self.spill_error = Some(err.to_string());
                // A partial file the result will not point to is not left behind.
                let _ = std::fs::remove_file(path);
                self.spill = None;
            }
        }
    }

    /// Completes the spill file: what is missing after the head, or a note of how much was
    /// left out and the tail. Returns the bytes left out.
    fn close_spill(&mut self) -> u64 {
        let buffered = self.buffer.len() as u64;
        let tail_start = self.total_bytes - buffered;
        let omitted = tail_start.saturating_sub(self.spilled);
        let tail = std::mem::take(&mut self.buffer);
        if omitted == 0 {
            let missing = (self.spilled - tail_start) as usize;
            self.write_file(&tail[missing.min(tail.len())..]);
        } else {
            let note = format!("\n[... {omitted} bytes of output not kept ...]\n");
            self.write_file(note.as_bytes());
            self.write_file(&tail);
        }
        self.buffer = tail;
        if let Some((file, _)) = &mut self.spill {
            let _ = file.flush();
        }
        omitted
    }

    /// Output since the last call, decoded; an incomplete UTF-8 sequence at the end waits for
    /// the next chunk.
    pub(super) fn take_pending(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let complete = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(err) if err.error_len().is_none() => err.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        if complete == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&self.pending[..complete]).into_owned();
        self.pending.drain(..complete);
        Some(text)
    }

    pub(super) fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// The output is complete: what was held back could not begin a secret after all.
    pub(super) fn end(&mut self) {
        let held = self.redactor.flush_bytes(&self.secrets);
        self.accept(&held);
    }

    /// The text for the model (tail-truncated, with a notice) and the details to report.
    pub(super) fn finish(mut self) -> (String, Value) {
        self.end();
        let omitted = if self.spill.is_some() {
            self.close_spill()
        } else {
            0
        };
        let start = if self.spill.is_some() || self.spill_error.is_some() {
            // The buffer may begin mid-character after the rolling cut.
            self.buffer
                .iter()
                .position(|b| (*b).cast_signed() >= -0x40)
                .unwrap_or(self.buffer.len())
        } else {
            0
        };
        let text = String::from_utf8_lossy(&self.buffer[start..]).into_owned();
        let total_lines = self.newlines + u64::from(self.line_len > 0);
        let (tail, truncation) = truncate_tail(&text, MAX_LINES, MAX_BYTES);
        let mut details = serde_json::Map::new();
        if self.total_bytes == 0 {
            return ("(no output)".to_string(), Value::Object(details));
        }
        let truncated = truncation.truncated || self.spill.is_some();
        if !truncated {
            return (tail, Value::Object(details));
        }
        let where_full = match (&self.spill, &self.spill_error) {
            (Some((_, path)), _) if omitted > 0 => {
                details.insert("fullOutputPath".into(), json!(path));
                details.insert("fullOutputOmittedBytes".into(), json!(omitted));
                format!(
                    "Output saved to {}: the first {} and the last {}; {} in between were not kept",
                    path.display(),
                    format_size(SPILL_HEAD as usize),
                    format_size(self.buffer.len()),
                    format_size(omitted as usize)
                )
            }
            (Some((_, path)), _) => {
                details.insert("fullOutputPath".into(), json!(path));
                format!("Full output: {}", path.display())
            }
            (None, Some(err)) => format!("Full output could not be saved: {err}"),
            (None, None) => String::new(),
        };
        let notice = if truncation.last_line_partial {
            format!(
                "[Showing last {} of line {} (line is {}). {where_full}]",
                format_size(tail.len()),
                total_lines,
                format_size(self.line_len.max(tail.len() as u64) as usize)
            )
        } else {
            let shown = truncation.output_lines as u64;
            format!(
                "[Showing lines {}-{} of {}. {where_full}]",
                total_lines - shown + 1,
                total_lines,
                total_lines
            )
        };
        let mut truncation = json!(truncation);
        truncation["totalLines"] = json!(total_lines);
        truncation["totalBytes"] = json!(self.total_bytes);
        details.insert("truncation".into(), truncation);
        (format!("{tail}\n\n{notice}"), Value::Object(details))
    }
}

#[cfg(test)]
mod tests;
