//! `--trace-file`: the run's own trace in Dynamo's JSONL format, no Dynamo needed.
//!
//! Each line is Dynamo's recorder envelope, `{"timestamp":<ms since the file was opened>,
//! "event":<dynamo.agent.trace.v1 record>}`, so the tools that read Dynamo's traces (its
//! Perfetto and Mooncake converters, `worker trace perfetto`) read these too. Each line is
//! redacted whole before it is written, like every line on stdout.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::secrets::Secrets;
use crate::sync::LockExt;

/// The `--trace-file` being written: one redacted JSONL line per record, flushed as it is
/// written.
pub struct TraceFile {
    writer: Mutex<BufWriter<File>>,
    secrets: Secrets,
    opened: Instant,
    error: Mutex<Option<String>>,
}

#[derive(Serialize)]
struct Envelope<'a, T> {
    timestamp: u64,
    event: &'a T,
}

impl TraceFile {
    /// Creates the file at `path` (truncating one that exists); every line is redacted with
    /// `secrets`.
    pub fn create(path: &Path, secrets: Secrets) -> std::io::Result<TraceFile> {
        Ok(TraceFile {
            writer: Mutex::new(BufWriter::new(File::create(path)?)),
            secrets,
            opened: Instant::now(),
            error: Mutex::new(None),
        })
    }

    /// Appends one record; a write error is kept (reported once at the end), never raised.
    pub fn write<T: Serialize>(&self, record: &T) {
        let envelope = Envelope {
            timestamp: self.opened.elapsed().as_millis() as u64,
            event: record,
        };
        let mut writer = self.writer.lock_or_recover();
        let written = serde_json::to_string(&envelope)
            .map_err(std::io::Error::from)
            .and_then(|line| writer.write_all(self.secrets.redact(&line).as_bytes()))
            .and_then(|()| writer.write_all(b"\n"))
            .and_then(|()| writer.flush());
        if let Err(err) = written {
            self.error.lock_or_recover().get_or_insert(err.to_string());
        }
    }

    /// The first write error, if any (later records are still tried).
    pub fn error(&self) -> Option<String> {
        self.error.lock_or_recover().clone()
    }
}
