//! Fixture files: recorded model exchanges, written by `--record` and answered from by
//! `--model replay/<file>`.
//!
//! The format is JSON Lines. The first line describes the recording:
//!
//! ```json
//! {"workerFixture":1,"provider":"dynamo","model":"qwen3","recordedAt":"2026-11-22T10:00:00.000Z","api":"openai-completions"}
//! ```
//!
//! `api` names the wire format of the bodies (`anthropic-messages` for Anthropic's); a
//! fixture without it is read in the format its `provider` speaks.
//!
//! Every further line is one model request and its response, in the order the run made them:
//!
//! ```json
//! {"request":{...body as sent...},"response":{"status":200,"body":"data: {...}\n\ndata: [DONE]\n\n"}}
//! ```
//!
//! A response is the raw SSE `body` (as recorded), or `events` (a list of chunk objects, each
//! sent as one `data:` line, and the string `"[DONE]"`: handier for fixtures written by hand),
//! or `transportError` (the connection failed). `status` defaults to 200; `retryAfter` is in
//! seconds. Replay ignores `request`; it is there for humans and diff tools. Secrets are
//! replaced by `[REDACTED]` before anything is written, also when the model streamed one in
//! pieces (see [`super::record_redact`]).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::transport::{Request, Response, Transport, TransportError, TransportFuture};
use crate::http::server_seconds;
use crate::input_file::InputFileError;
use crate::sync::LockExt;

/// The format version a fixture's header names in `workerFixture`; a fixture of another version is
/// refused.
pub const FIXTURE_VERSION: u32 = 1;

/// The first line of a fixture: the format version and what was recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureHeader {
    /// The format version (`workerFixture`), [`FIXTURE_VERSION`].
    pub worker_fixture: u32,
    /// The provider as `--model` named it when recording (`dynamo`, `openai`, a `--providers`
    /// name); without `api`, it decides the wire format.
    pub provider: String,
    /// The model id of the recording; a replay reports it as the run's model.
    pub model: String,
    /// When the recording started (RFC 3339); `None` in a fixture written by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    /// The wire format of the recorded bodies (`openai-completions`, `anthropic-messages`);
    /// without it, the one `provider` speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
}

/// One model request and the response it got: one line of the fixture after the header.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exchange {
    /// The request body as sent. Not read back: replay ignores it, and a long run's requests
    /// hold its conversation many times over.
    #[serde(default, skip_deserializing)]
    pub request: Value,
    /// What came back.
    pub response: RecordedResponse,
}

/// A recorded response: a status and an SSE body (raw, or as a list of events), or a failed
/// connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedResponse {
    /// The HTTP status; 200 when the line has none, 0 for a recorded transport error.
    #[serde(default = "ok_status")]
    pub status: u16,
    /// The server's `Retry-After`, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    /// The raw SSE body as it arrived; when present, `events` is not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body as chunk objects, each sent as one `data:` line, and the string `"[DONE]"`: handier
    /// for fixtures written by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Value>>,
    /// The connection failed with this message: replayed as that transport error, whatever else the
    /// line holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport_error: Option<String>,
}

fn ok_status() -> u16 {
    200
}

impl RecordedResponse {
    /// The body bytes as the server would have sent them.
    fn body_bytes(&self) -> String {
        if let Some(body) = &self.body {
            return body.clone();
        }
        self.events_as_body()
    }

    /// `events` as the SSE body they stand for.
    fn events_as_body(&self) -> String {
        let mut out = String::new();
        for event in self.events.iter().flatten() {
            let data = match event {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            out.push_str("data: ");
            out.push_str(&data);
            out.push_str("\n\n");
        }
        out
    }
}

/// A fixture file, read and checked: its header, and where each exchange's line lies in it, in
/// the order the run made them. An exchange is read again (and parsed again) when the replay
/// reaches it, so a replay holds none of them: a recorded run of a thousand turns would
/// otherwise keep its whole recording in memory to the end.
pub struct Fixture {
    /// The first line: format version, provider, model and wire format.
    pub header: FixtureHeader,
    /// The file, as named; errors name it.
    path: PathBuf,
    /// Each exchange's line.
    lines: Vec<LineSpan>,
    /// Where the lines are read from again.
    source: Box<dyn ReadLine>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture")
            .field("header", &self.header)
            .field("path", &self.path)
            .field("exchanges", &self.lines.len())
            .finish_non_exhaustive()
    }
}

/// One exchange's line: where it starts, its length (without the line end) and its number.
#[derive(Debug, Clone, Copy)]
struct LineSpan {
    offset: u64,
    len: usize,
    number: usize,
}

/// Reads a line of the fixture again.
trait ReadLine: Send + Sync {
    fn read_line(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>>;
}

impl ReadLine for File {
    fn read_line(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut line = vec![0; len];
        self.read_exact_at(&mut line, offset)?;
        Ok(line)
    }
}

/// Why a fixture cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file cannot be read.
    #[error("cannot read fixture {path}: {source}")]
    Read {
        /// The fixture file.
        path: PathBuf,
        /// Why reading it failed.
        source: crate::input_file::InputFileError,
    },
    /// The file has no line but blank ones.
    #[error("fixture {path}, line 1: the file is empty")]
    Empty {
        /// The fixture file.
        path: PathBuf,
    },
    /// The first line is not a fixture header.
    #[error("fixture {path}, line {line}: not a fixture header ({source})")]
    Header {
        /// The fixture file.
        path: PathBuf,
        /// The line's number, counting from 1.
        line: usize,
        /// Why it does not parse as one.
        source: serde_json::Error,
    },
    /// The header names a format version this worker does not read.
    #[error(
        "fixture {path}, line {line}: fixture version {version} is not supported (expected {FIXTURE_VERSION})"
    )]
    Version {
        /// The fixture file.
        path: PathBuf,
        /// The header's line number, counting from 1.
        line: usize,
        /// The version the header names.
        version: u32,
    },
    /// A line after the header is not an exchange.
    #[error("fixture {path}, line {line}: not an exchange ({source})")]
    Exchange {
        /// The fixture file.
        path: PathBuf,
        /// The line's number, counting from 1.
        line: usize,
        /// Why it does not parse as one.
        source: serde_json::Error,
    },
    /// An exchange's response has no body, no events and no transport error.
    #[error(
        "fixture {path}, line {line}: the response needs one of body, events or transportError"
    )]
    NoResponse {
        /// The fixture file.
        path: PathBuf,
        /// The line's number, counting from 1.
        line: usize,
    },
}

impl Fixture {
    /// Reads the fixture at `path` and checks its header's version and every exchange. The
    /// file stays open: the replay reads each exchange from it again.
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let kind = crate::input_file::InputKind::ReplayFixture;
        let read_error = |source| FixtureError::Read {
            path: path.to_path_buf(),
            source,
        };
        let input = crate::input_file::InputFile::open(path).map_err(read_error)?;
        let cap = kind.max_bytes();
        let size = input.metadata().len();
        if size > cap {
            return Err(read_error(InputFileError::TooLarge {
                cap,
                size: Some(size),
            }));
        }
        let file = input.into_file();
        let reader = std::io::BufReader::new(std::io::Read::take(&file, cap + 1));
        let (header, lines) = Self::scan(path, reader)?;
        if lines
            .last()
            .is_some_and(|last| last.offset + last.len as u64 > cap)
        {
            return Err(read_error(InputFileError::TooLarge { cap, size: None }));
        }
        Ok(Fixture {
            header,
            path: path.to_path_buf(),
            lines,
            source: Box::new(file),
        })
    }

    /// Checks every line of a fixture as `reader` gives it: its header, and where each
    /// exchange lies.
    fn scan(
        path: &Path,
        mut reader: impl std::io::BufRead,
    ) -> Result<(FixtureHeader, Vec<LineSpan>), FixtureError> {
        let path = || path.to_path_buf();
        let mut header = None;
        let mut lines = Vec::new();
        let mut buffer = Vec::new();
        let (mut offset, mut number) = (0u64, 0usize);
        loop {
            buffer.clear();
            let read = reader
                .read_until(b'\n', &mut buffer)
                .map_err(|err| FixtureError::Read {
                    path: path(),
                    source: err.into(),
                })?;
            if read == 0 {
                break;
            }
            let start = offset;
            offset += read as u64;
            number += 1;
            let line = without_line_end(&buffer);
            let text = std::str::from_utf8(line).map_err(|err| FixtureError::Read {
                path: path(),
                source: InputFileError::NotText(start as usize + err.valid_up_to()),
            })?;
            if text.trim().is_empty() {
                continue;
            }
            if header.is_none() {
                let read: FixtureHeader =
                    serde_json::from_str(text).map_err(|source| FixtureError::Header {
                        path: path(),
                        line: number,
                        source,
                    })?;
                if read.worker_fixture != FIXTURE_VERSION {
                    return Err(FixtureError::Version {
                        path: path(),
                        line: number,
                        version: read.worker_fixture,
                    });
                }
                header = Some(read);
                continue;
            }
            check_exchange(&path(), number, text)?;
            lines.push(LineSpan {
                offset: start,
                len: line.len(),
                number,
            });
        }
        let header = header.ok_or_else(|| FixtureError::Empty { path: path() })?;
        lines.shrink_to_fit();
        Ok((header, lines))
    }

    /// How many exchanges the fixture holds.
    pub fn exchange_count(&self) -> usize {
        self.lines.len()
    }

    /// Exchange `index` (from 0), read from the file again; `None` past the last. An exchange
    /// that no longer reads as it did when the fixture was loaded is an error naming its line.
    pub fn exchange(&self, index: usize) -> Option<Result<Exchange, String>> {
        let span = *self.lines.get(index)?;
        let changed = |why: String| {
            format!(
                "fixture {}, line {}: the file changed since the run started ({why})",
                self.path.display(),
                span.number
            )
        };
        let read = self
            .source
            .read_line(span.offset, span.len)
            .map_err(|err| changed(err.to_string()))
            .and_then(|bytes| String::from_utf8(bytes).map_err(|err| changed(err.to_string())))
            .and_then(|text| {
                parse_exchange(&self.path, span.number, &text)
                    .map_err(|err| changed(err.to_string()))
            });
        Some(read)
    }
}

/// `line` without its `\n` or `\r\n`, as [`str::lines`] reads it.
fn without_line_end(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n")
        .map_or(line, |line| line.strip_suffix(b"\r").unwrap_or(line))
}

/// An exchange line as [`Exchange`] reads it, its strings borrowed where they can be and its
/// events skipped over (any JSON value is an event): what loading checks, without building
/// what the replay builds when it reaches the line.
#[derive(Deserialize)]
struct ExchangeCheck<'a> {
    #[serde(borrow)]
    response: ResponseCheck<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseCheck<'a> {
    #[serde(default, rename = "status")]
    _status: u16,
    #[serde(default, rename = "retryAfter")]
    _retry_after: Option<f64>,
    #[serde(default, borrow)]
    body: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    events: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default, borrow)]
    transport_error: Option<std::borrow::Cow<'a, str>>,
}

/// Checks one exchange line as [`parse_exchange`] would read it.
fn check_exchange(path: &Path, number: usize, text: &str) -> Result<(), FixtureError> {
    let exchange: ExchangeCheck<'_> = read_line(path, number, text)?;
    let r = &exchange.response;
    answered(
        path,
        number,
        r.body.is_some() || r.events.is_some() || r.transport_error.is_some(),
    )
}

/// Exchange line `number` of the fixture, read as `T`.
fn read_line<'a, T: Deserialize<'a>>(
    path: &Path,
    number: usize,
    text: &'a str,
) -> Result<T, FixtureError> {
    serde_json::from_str(text).map_err(|source| FixtureError::Exchange {
        path: path.to_path_buf(),
        line: number,
        source,
    })
}

/// An exchange needs a body, events or a transport error.
fn answered(path: &Path, number: usize, answered: bool) -> Result<(), FixtureError> {
    if answered {
        return Ok(());
    }
    Err(FixtureError::NoResponse {
        path: path.to_path_buf(),
        line: number,
    })
}

/// One exchange line, checked, with its `events` turned into the body they stand for.
fn parse_exchange(path: &Path, number: usize, text: &str) -> Result<Exchange, FixtureError> {
    let exchange: Exchange = read_line(path, number, text)?;
    let r = &exchange.response;
    answered(
        path,
        number,
        r.body.is_some() || r.events.is_some() || r.transport_error.is_some(),
    )?;
    Ok(compact(exchange))
}

/// `exchange` with its `events` turned into the body they stand for: a parsed event holds
/// several times its text's bytes, for every turn of a long fixture, for the whole replay.
fn compact(mut exchange: Exchange) -> Exchange {
    let response = &mut exchange.response;
    if response.body.is_none() && response.events.is_some() {
        response.body = Some(response.events_as_body());
    }
    response.events = None;
    exchange
}

/// Answers each request with the next recorded response.
pub struct ReplayTransport {
    fixture: Arc<Fixture>,
    /// The exchange the next request gets.
    next: Mutex<usize>,
}

impl ReplayTransport {
    /// A transport that answers from `fixture`'s exchanges in order; a request beyond the last is a
    /// replay error.
    pub fn new(fixture: Arc<Fixture>) -> Self {
        ReplayTransport {
            fixture,
            next: Mutex::new(0),
        }
    }
}

impl Transport for ReplayTransport {
    fn target(&self) -> String {
        "the replay fixture".to_string()
    }

    fn send<'a>(&'a self, _request: &'a Request) -> TransportFuture<'a> {
        let next = {
            let mut next = self.next.lock_or_recover();
            *next += 1;
            self.fixture.exchange(*next - 1)
        };
        let total = self.fixture.exchange_count();
        Box::pin(async move {
            let exchange = next
                .ok_or_else(|| {
                    TransportError::Replay(format!(
                        "the fixture has {total} recorded response(s) and the run made a request beyond them"
                    ))
                })?
                .map_err(TransportError::Replay)?;
            let response = &exchange.response;
            if let Some(error) = &response.transport_error {
                return Err(TransportError::Connect(error.clone()));
            }
            let body = Bytes::from(response.body_bytes());
            Ok(Response {
                status: response.status,
                retry_after: response.retry_after.and_then(server_seconds),
                content_type: None,
                body: Box::pin(stream::iter([Ok(body)])),
            })
        })
    }
}

mod record;

pub use record::{Recorder, RecordingTransport};

#[cfg(test)]
mod tests;
