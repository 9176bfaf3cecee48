//! Writing events: envelope, serialization, one write and flush per line.
//!
//! The emitter is shared by the agent loop and concurrently running tools, so it lives behind
//! a mutex and every call writes one whole line: lines never interleave. `agent_end` carries
//! the whole conversation: when longer than [`PART_BYTES`] it goes to stdout in parts as it is
//! serialized, redacted as a stream, so the emitter never holds it whole. (Every other line is
//! serialized straight into one buffer, the fastest way serde_json writes.) When the sink fails
//! (the reader closed stdout), the emitter goes quiet and fires its close hook once so the run
//! can stop; it never panics and never retries a dead sink.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use super::{Event, SessionHeader};
use crate::secrets::Secrets;
use crate::sync::LockExt;

/// Where event lines go. `line` is one complete JSON object followed by `\n`.
pub trait EventSink: Send {
    /// An error means the reader is gone; the emitter stops writing after the first one.
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;

    /// Whether the sink takes a long line in parts ([`EventSink::write_part`]), so that the
    /// emitter need not hold it whole: `agent_end` carries the whole conversation.
    fn takes_parts(&self) -> bool {
        false
    }

    /// Writes the next part of a line; the line's last part ends with `\n`. Only called when
    /// [`EventSink::takes_parts`] says so.
    fn write_part(&mut self, part: &[u8]) -> io::Result<()> {
        self.write_line(part)
    }
}

/// Process stdout, flushed after every line so a reader sees each event as it happens.
#[derive(Debug, Default)]
pub struct StdoutSink;

impl EventSink for StdoutSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(line)?;
        out.flush()
    }

    fn takes_parts(&self) -> bool {
        true
    }

    fn write_part(&mut self, part: &[u8]) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(part)?;
        if part.ends_with(b"\n") {
            out.flush()?;
        }
        Ok(())
    }
}

/// An `agent_end` line longer than this goes to a sink that takes parts in parts of at most
/// this size (a single string longer than a part goes whole). Small enough that the part
/// buffer and the redactor's copies of it stay a few pages; large enough that a long line
/// takes few writes.
const PART_BYTES: usize = 16 * 1024;

/// A line buffer grown past this by one long line is let go rather than kept for the run.
const KEPT_LINE_BYTES: usize = 256 * 1024;

/// Keeps lines in memory; clones share the same buffer (for in-process callers and tests).
#[derive(Debug, Clone, Default)]
pub struct CollectorSink {
    lines: Arc<Mutex<Vec<String>>>,
}

impl CollectorSink {
    /// Every line written so far, without the trailing newline.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock_or_recover().clone()
    }
}

impl EventSink for CollectorSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(line)
            .trim_end_matches('\n')
            .to_string();
        self.lines.lock_or_recover().push(text);
        Ok(())
    }
}

#[derive(Serialize)]
struct Envelope<'e, 'a> {
    #[serde(flatten)]
    event: &'e Event<'a>,
    #[serde(rename = "sessionId")]
    session_id: &'e str,
    timestamp: &'e str,
}

type CloseHook = Box<dyn FnOnce() + Send>;

struct Inner {
    sink: Box<dyn EventSink>,
    secrets: Secrets,
    retain: bool,
    records: Vec<Value>,
    closed: bool,
    on_close: Option<CloseHook>,
    line: Vec<u8>,
    /// When the last line was written (a heartbeat fills silences, never a busy stream).
    last_write: Instant,
}

impl Inner {
    /// Writes one line; `long`: the record may be far larger than any other (it carries the
    /// whole conversation), so it may go in parts.
    fn write<T: Serialize>(&mut self, record: &T, long: bool) {
        if self.closed {
            return;
        }
        self.line.clear();
        let written = if long && !self.retain && self.sink.takes_parts() {
            self.write_in_parts(record)
        } else {
            self.write_whole(record)
        };
        if self.line.capacity() > KEPT_LINE_BYTES {
            // One long line does not keep its buffer for the rest of the run.
            self.line = Vec::with_capacity(1024);
        }
        if written.is_err() {
            self.closed = true;
            if let Some(hook) = self.on_close.take() {
                hook();
            }
        }
    }

    fn write_whole<T: Serialize>(&mut self, record: &T) -> io::Result<()> {
        // Every event type is plain data; a serialization failure would be a bug, and losing
        // one line is better than losing the run.
        if serde_json::to_writer(&mut self.line, record).is_err() {
            return Ok(());
        }
        self.redact_line();
        if self.retain
            && let Ok(value) = serde_json::from_slice(&self.line)
        {
            self.records.push(value);
        }
        self.line.push(b'\n');
        self.last_write = Instant::now();
        self.sink.write_line(&self.line)
    }

    /// Redacts the line held whole.
    fn redact_line(&mut self) {
        if !self.secrets.is_empty()
            && let Ok(text) = std::str::from_utf8(&self.line)
            && let std::borrow::Cow::Owned(clean) = self.secrets.redact(text)
        {
            self.line = clean.into_bytes();
        }
    }

    /// A line of up to [`PART_BYTES`] is written whole, as by [`Inner::write_whole`]; a longer
    /// one leaves in parts as it is serialized, redacted as a stream (a secret split between
    /// two parts is still found).
    fn write_in_parts<T: Serialize>(&mut self, record: &T) -> io::Result<()> {
        // Reserved whole, so that the parts never grow the buffer by doubling it.
        self.line.reserve(PART_BYTES);
        let mut parts = Parts {
            sink: &mut *self.sink,
            secrets: &self.secrets,
            line: &mut self.line,
            redactor: None,
        };
        let serialized = serde_json::to_writer(&mut parts, record);
        let Parts { redactor, .. } = parts;
        self.last_write = Instant::now();
        match (serialized, redactor) {
            // The line has not started: it is dropped, as a whole one would be.
            (Err(err), None) if err.io_error_kind().is_none() => Ok(()),
            // The sink failed under a part.
            (Err(err), _) if err.io_error_kind().is_some() => Err(err.into()),
            (_, None) => {
                self.redact_line();
                self.line.push(b'\n');
                self.sink.write_part(&self.line)
            }
            (_, Some(mut redactor)) => {
                let mut rest = redactor.push_bytes(&self.secrets, &self.line);
                rest.extend(redactor.flush_bytes(&self.secrets));
                rest.push(b'\n');
                self.line.clear();
                self.sink.write_part(&rest)
            }
        }
    }
}

/// A line on its way to a sink that takes parts: it collects in `line`, and whenever the next
/// piece would take that past [`PART_BYTES`], what the redactor shows of it is written.
struct Parts<'a> {
    sink: &'a mut dyn EventSink,
    secrets: &'a Secrets,
    line: &'a mut Vec<u8>,
    /// Set once the first part has left.
    redactor: Option<crate::secrets::StreamRedactor>,
}

impl Parts<'_> {
    #[cold]
    #[inline(never)]
    fn send_part(&mut self) -> io::Result<()> {
        let redactor = self.redactor.get_or_insert_with(Default::default);
        let shown = redactor.push_bytes(self.secrets, self.line);
        self.line.clear();
        self.sink.write_part(&shown)
    }
}

impl Write for Parts<'_> {
    // serde_json writes a line in many small pieces: each must cost what a push onto a
    // `Vec` does.
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.line.len() + bytes.len() > PART_BYTES && !self.line.is_empty() {
            self.send_part()?;
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serializes events with their envelope and writes them to the sink. Cheap to clone; clones
/// share the sink.
#[derive(Clone)]
pub struct Emitter {
    inner: Arc<Mutex<Inner>>,
    session_id: Arc<str>,
}

impl Emitter {
    /// `retain` keeps every record as a JSON value for [`Emitter::records`].
    pub fn new(sink: Box<dyn EventSink>, session_id: impl Into<String>, retain: bool) -> Self {
        Emitter {
            inner: Arc::new(Mutex::new(Inner {
                sink,
                secrets: Secrets::default(),
                retain,
                records: Vec::new(),
                closed: false,
                on_close: None,
                line: Vec::with_capacity(1024),
                last_write: Instant::now(),
            })),
            session_id: Arc::from(session_id.into()),
        }
    }

    /// Values to replace with `[REDACTED]` in every line (shared: it may grow).
    pub fn set_secrets(&self, secrets: Secrets) {
        self.inner.lock_or_recover().secrets = secrets;
    }

    /// The set every line is redacted with (shared: values added later count too).
    pub fn secrets(&self) -> Secrets {
        self.inner.lock_or_recover().secrets.clone()
    }

    /// Called once, the first time the sink fails.
    pub fn on_close(&self, hook: impl FnOnce() + Send + 'static) {
        self.inner.lock_or_recover().on_close = Some(Box::new(hook));
    }

    /// Writes the header line, which carries no envelope.
    pub fn header(&self, header: &SessionHeader<'_>) {
        self.inner.lock_or_recover().write(header, false);
    }

    /// Writes a line another run wrote (a child run's event, already enveloped), as it is;
    /// it is redacted again like every line.
    pub fn forward(&self, record: &Value) {
        let long = record.get("type").and_then(Value::as_str) == Some("agent_end");
        self.inner.lock_or_recover().write(record, long);
    }

    /// Writes one event line, with the session id as `sessionId` and the current time as
    /// `timestamp`.
    pub fn emit(&self, event: &Event<'_>) {
        let mut inner = self.inner.lock_or_recover();
        // Stamped under the lock so timestamps never go backwards down the stream.
        let timestamp = now_rfc3339();
        let long = matches!(event, Event::AgentEnd { .. });
        inner.write(
            &Envelope {
                event,
                session_id: &self.session_id,
                timestamp: &timestamp,
            },
            long,
        );
    }

    /// How long it has been since the last line was written.
    pub fn quiet_for(&self) -> Duration {
        self.inner.lock_or_recover().last_write.elapsed()
    }

    /// True once the sink has failed.
    pub fn is_closed(&self) -> bool {
        self.inner.lock_or_recover().closed
    }

    /// Every record written so far (empty unless created with `retain`).
    pub fn records(&self) -> Vec<Value> {
        std::mem::take(&mut self.inner.lock_or_recover().records)
    }
}

/// RFC 3339, UTC, millisecond precision: `2026-11-22T13:12:00.123Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Unix milliseconds, as messages carry them.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A poisoned lock only means another thread panicked mid-write; the data is still usable.
#[cfg(test)]
mod tests;
