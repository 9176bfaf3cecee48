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
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, stream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record_redact::redact_sse_body;
use super::transport::{ByteStream, Request, Response, Transport, TransportError, TransportFuture};
use crate::http::server_seconds;
use crate::secrets::Secrets;
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

/// A fixture file, read and checked: its header and its exchanges in the order the run made them.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The first line: format version, provider, model and wire format.
    pub header: FixtureHeader,
    /// The recorded exchanges, in order; replay answers the n-th request with the n-th.
    pub exchanges: Vec<Exchange>,
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
    /// Reads the fixture at `path` and checks its header's version and every exchange.
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let kind = crate::input_file::InputKind::ReplayFixture;
        let text =
            crate::input_file::read_text(path, kind).map_err(|source| FixtureError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Fixture, FixtureError> {
        let path = || path.to_path_buf();
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let (first, header_line) = lines
            .next()
            .ok_or_else(|| FixtureError::Empty { path: path() })?;
        let header: FixtureHeader =
            serde_json::from_str(header_line).map_err(|source| FixtureError::Header {
                path: path(),
                line: first + 1,
                source,
            })?;
        if header.worker_fixture != FIXTURE_VERSION {
            return Err(FixtureError::Version {
                path: path(),
                line: first + 1,
                version: header.worker_fixture,
            });
        }
        let mut exchanges = Vec::new();
        for (index, line) in lines {
            let exchange: Exchange =
                serde_json::from_str(line).map_err(|source| FixtureError::Exchange {
                    path: path(),
                    line: index + 1,
                    source,
                })?;
            let r = &exchange.response;
            if r.body.is_none() && r.events.is_none() && r.transport_error.is_none() {
                return Err(FixtureError::NoResponse {
                    path: path(),
                    line: index + 1,
                });
            }
            exchanges.push(compact(exchange));
        }
        Ok(Fixture { header, exchanges })
    }
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
            self.fixture.exchanges.get(*next - 1)
        };
        let total = self.fixture.exchanges.len();
        Box::pin(async move {
            let exchange = next.ok_or_else(|| {
                TransportError::Replay(format!(
                    "the fixture has {total} recorded response(s) and the run made a request beyond them"
                ))
            })?;
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

/// Appends exchanges to a fixture file as they complete, so a crash keeps what came before.
pub struct Recorder {
    file: Mutex<File>,
    secrets: Secrets,
    error: Mutex<Option<String>>,
}

impl Recorder {
    /// Opens the fixture and writes its header. Only a file that cannot be opened is an error
    /// here; a failed write (the header's included) is kept for [`Recorder::error`], like
    /// every later one, and the run goes on.
    pub fn create(path: &Path, header: &FixtureHeader, secrets: Secrets) -> std::io::Result<Self> {
        let recorder = Recorder {
            file: Mutex::new(File::create(path)?),
            secrets,
            error: Mutex::new(None),
        };
        recorder.write_line(redacted_line(&recorder.secrets, header));
        Ok(recorder)
    }

    /// The first write error, if any (the run reports it as an incomplete output).
    pub fn error(&self) -> Option<String> {
        self.error.lock_or_recover().clone()
    }

    fn write(&self, request: &Value, response: RecordedResponse) {
        let exchange = Exchange {
            request: request.clone(),
            response: RecordedResponse {
                // Chunk by chunk first: a secret streamed in pieces, or escaped twice (JSON in
                // the SSE text in the JSON line), is found only there.
                body: response.body.map(|b| redact_sse_body(&self.secrets, &b)),
                ..response
            },
        };
        self.write_line(redacted_line(&self.secrets, &exchange));
    }

    /// Appends one serialized, redacted line; a failure is kept, not raised.
    fn write_line(&self, line: serde_json::Result<Vec<u8>>) {
        let line = match line {
            Ok(line) => line,
            Err(err) => return self.fail(err.to_string()),
        };
        let written = {
            let mut file = self.file.lock_or_recover();
            file.write_all(&line).and_then(|()| file.flush())
        };
        if let Err(err) = written {
            self.fail(err.to_string());
        }
    }

    fn fail(&self, message: String) {
        let mut error = self.error.lock_or_recover();
        if error.is_none() {
            *error = Some(message);
        }
    }
}

/// One line of the file, redacted whole: the pass every line takes on its way out.
fn redacted_line<T: Serialize>(secrets: &Secrets, value: &T) -> serde_json::Result<Vec<u8>> {
    let line = serde_json::to_string(value)?;
    let mut line = secrets.redact(&line).into_owned().into_bytes();
    line.push(b'\n');
    Ok(line)
}

/// Passes requests to another transport and records each exchange.
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    recorder: Arc<Recorder>,
}

impl RecordingTransport {
    /// Sends through `inner` and has `recorder` write each exchange once its body has ended (or was
    /// dropped).
    pub fn new(inner: Arc<dyn Transport>, recorder: Arc<Recorder>) -> Self {
        RecordingTransport { inner, recorder }
    }
}

impl Transport for RecordingTransport {
    fn target(&self) -> String {
        self.inner.target()
    }

    fn send<'a>(&'a self, request: &'a Request) -> TransportFuture<'a> {
        Box::pin(async move {
            match self.inner.send(request).await {
                Err(err) => {
                    self.recorder.write(
                        &request.whole_body(),
                        RecordedResponse {
                            status: 0,
                            retry_after: None,
                            body: None,
                            events: None,
                            transport_error: Some(err.to_string()),
                        },
                    );
                    Err(err)
                }
                Ok(response) => {
                    let pending = PendingRecord {
                        recorder: self.recorder.clone(),
                        request: request.whole_body(),
                        status: response.status,
                        retry_after: response.retry_after,
                    };
                    Ok(Response {
                        status: response.status,
                        retry_after: response.retry_after,
                        content_type: response.content_type,
                        body: Box::pin(TeeStream {
                            inner: response.body,
                            captured: Vec::new(),
                            pending: Some(pending),
                        }),
                    })
                }
            }
        })
    }
}

struct PendingRecord {
    recorder: Arc<Recorder>,
    request: Value,
    status: u16,
    retry_after: Option<Duration>,
}

/// A body stream that keeps a copy of what passed and records it when the stream ends or is
/// dropped (an abort still records the partial response).
struct TeeStream {
    inner: ByteStream,
    captured: Vec<u8>,
    pending: Option<PendingRecord>,
}

impl TeeStream {
    fn record(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.recorder.write(
                &pending.request,
                RecordedResponse {
                    status: pending.status,
                    retry_after: pending.retry_after.map(|d| d.as_secs_f64()),
                    body: Some(String::from_utf8_lossy(&self.captured).into_owned()),
                    events: None,
                    transport_error: None,
                },
            );
        }
    }
}

impl Stream for TeeStream {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                this.captured.extend_from_slice(&bytes);
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(err))) => {
                this.record();
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => {
                this.record();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for TeeStream {
    fn drop(&mut self) {
        self.record();
    }
}

#[cfg(test)]
mod tests;
