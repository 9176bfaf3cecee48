//! Getting a response for a request body: over HTTP, or from a fixture.
//!
//! A [`Transport`] returns the status and a stream of body bytes and knows nothing about SSE
//! or retries. The HTTP transport keeps one client (one keep-alive connection pool) for the
//! whole run; the replay transport answers from a recording; the recorder wraps either and
//! writes what passes through.

use std::sync::Arc;
use std::time::Duration;

use crate::http::error_chain;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// A response body as it arrives, chunk by chunk.
pub type ByteStream = BoxStream<'static, Result<Bytes, TransportError>>;
pub(super) type TransportFuture<'a> = BoxFuture<'a, Result<Response, TransportError>>;

/// One request, ready to send: the JSON body and the extra headers.
#[derive(Debug, Clone)]
pub struct Request {
    /// The JSON body to post; a field [`Request::spliced`] holds is a placeholder in it.
    pub body: serde_json::Value,
    /// Fields already serialized, sent in their place in `body`.
    pub spliced: Spliced,
    /// Extra headers as (name, value) pairs (`x-request-id`, a decorator's); the key is not among
    /// them: the transport adds its own auth headers.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A request for a whole `body`, with no extra headers.
    pub fn new(body: serde_json::Value) -> Self {
        Request {
            body,
            spliced: Spliced::default(),
            headers: Vec::new(),
        }
    }

    /// The body as sent: `body` with the spliced fields in their places, in the body's own
    /// key order.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let serde_json::Value::Object(fields) = &self.body else {
            return serde_json::to_vec(&self.body);
        };
        if self.spliced.is_empty() {
            return serde_json::to_vec(&self.body);
        }
        let messages = self
            .spliced
            .messages
            .as_ref()
            .map_or(0, WireConversation::len);
        let tools = self.spliced.tools.as_deref().map_or(0, str::len);
        let size = messages + tools;
        let mut out = Vec::with_capacity(size + 4096);
        out.push(b'{');
        for (index, (key, value)) in fields.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key)?;
            out.push(b':');
            if let (true, Some(messages)) = (key == "messages", &self.spliced.messages) {
                messages.write(&mut out);
            } else if let (true, Some(tools)) = (key == "tools", &self.spliced.tools) {
                out.extend_from_slice(tools.as_bytes());
            } else {
                serde_json::to_writer(&mut out, value)?;
            }
        }
        out.push(b'}');
        Ok(out)
    }

    /// The body as sent, as one JSON value (what a recording keeps).
    pub fn whole_body(&self) -> serde_json::Value {
        if self.spliced.is_empty() {
            return self.body.clone();
        }
        self.to_json()
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_else(|| self.body.clone())
    }

    /// The value of header `name` (any case), if the request has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parts of a request body serialized before the request (once for the whole run, or once
/// per message), sent where the body holds a placeholder of the same name. A long run's
/// conversation is most of every request; this way each message is converted once.
#[derive(Debug, Clone, Default)]
pub struct Spliced {
    /// The body's `messages`, redacted when it was made.
    pub messages: Option<WireConversation>,
    /// The body's `tools`: the array's JSON text, redacted. Spliced only when tools are
    /// offered, so a decorator sees a `tools` key exactly when the model is offered tools.
    pub tools: Option<Arc<str>>,
}

/// A `messages` array as sent: the system message, then the conversation, each message's
/// JSON text joined by commas. The conversation's text is shared with the cache that keeps it
/// between requests (a request costs no copy of it until it is written out).
#[derive(Debug, Clone)]
pub struct WireConversation {
    /// The system message's JSON.
    pub system: Arc<str>,
    /// The conversation's messages, comma-joined; empty for none.
    pub conversation: Arc<Vec<u8>>,
}

impl WireConversation {
    /// The bytes of the array.
    pub fn len(&self) -> usize {
        self.system.len() + self.conversation.len() + 3
    }

    /// Whether the array holds no message (never: the system message is always there).
    pub fn is_empty(&self) -> bool {
        false
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        out.extend_from_slice(self.system.as_bytes());
        if !self.conversation.is_empty() {
            out.push(b',');
            out.extend_from_slice(&self.conversation);
        }
        out.push(b']');
    }
}

impl Spliced {
    /// Whether nothing is spliced: the body is whole.
    pub fn is_empty(&self) -> bool {
        self.messages.is_none() && self.tools.is_none()
    }
}

/// A response as far as its headers: the status, and the body still to stream.
pub struct Response {
    /// The HTTP status (a recorded one, when replaying).
    pub status: u16,
    /// From `Retry-After` (seconds or an HTTP date).
    pub retry_after: Option<Duration>,
    /// The `Content-Type` header, when there was one (to explain a body that is not SSE).
    pub content_type: Option<String>,
    /// The body bytes, as they arrive.
    pub body: ByteStream,
}

/// Why a request got no response, or why its body stopped arriving.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    /// The request could not be sent or got no answer (refused, DNS, TLS, a reset), or a recorded
    /// transport error.
    #[error("{0}")]
    Connect(String),
    /// Bytes could not be written or read: the body could not be serialized, the response body
    /// broke off, or one event exceeded the size limit.
    #[error("{0}")]
    Io(String),
    /// The replay fixture has no response left for this request.
    #[error("{0}")]
    Replay(String),
}

/// Gets a model request a response: over HTTP, from a fixture, or through a recorder wrapping
/// either.
pub trait Transport: Send + Sync {
    /// Sends `request`; resolves once the status and headers are in, with the body still to stream.
    fn send<'a>(&'a self, request: &'a Request) -> TransportFuture<'a>;

    /// Where requests go, for error messages: the URL, or the fixture being replayed.
    fn target(&self) -> String;
}

/// Model requests over HTTP with reqwest (rustls), in whichever dialect the body is.
pub struct HttpTransport {
    client: reqwest::Client,
    url: String,
    /// The key, as the API wants it sent.
    auth: Vec<(&'static str, String)>,
}

impl HttpTransport {
    /// Requests go to `url` with `auth` headers (see [`super::Dialect::url`] and
    /// [`super::Dialect::auth`]).
    pub fn new(client: reqwest::Client, url: String, auth: Vec<(&'static str, String)>) -> Self {
        HttpTransport { client, url, auth }
    }
}

impl Transport for HttpTransport {
    fn target(&self) -> String {
        self.url.clone()
    }

    fn send<'a>(&'a self, request: &'a Request) -> TransportFuture<'a> {
        Box::pin(async move {
            let mut headers = HeaderMap::new();
            headers.insert("content-type", HeaderValue::from_static("application/json"));
            headers.insert("accept", HeaderValue::from_static("text/event-stream"));
            for (name, value) in &self.auth {
                if let Ok(value) = HeaderValue::from_str(value) {
                    headers.insert(*name, value);
                }
            }
            for (name, value) in &request.headers {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    headers.insert(name, value);
                }
            }
            let body = request
                .to_json()
                .map_err(|err| TransportError::Io(err.to_string()))?;
            let response = self
                .client
                .post(&self.url)
                .headers(headers)
                .body(body)
                .send()
                .await
                .map_err(|err| TransportError::Connect(error_chain(&err)))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(crate::http::parse_retry_after);
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = response
                .bytes_stream()
                .map(|chunk| chunk.map_err(|err| TransportError::Io(error_chain(&err))));
            Ok(Response {
                status,
                retry_after,
                content_type,
                body: Box::pin(body),
            })
        })
    }
}
