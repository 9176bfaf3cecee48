//! A scripted OpenAI-compatible server on 127.0.0.1, for driving the real binary.
//!
//! Each `POST /v1/chat/completions` takes the next [`Reply`] from the script: an SSE stream
//! (with optional delays, a stall, or an abrupt cut) or an error status. `GET /v1/models`
//! lists two models. Every request is recorded with its headers, body and the client's
//! address (which shows whether connections were reused).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};

#[derive(Clone)]
pub(crate) enum Frame {
    /// `data: <text>\n\n`
    Data(String),
    /// Bytes exactly as given.
    Raw(String),
    Delay(Duration),
    /// Never send anything again (and never close).
    Stall,
    /// Drop the connection mid-body.
    Cut,
}

#[derive(Clone)]
pub(crate) enum Reply {
    Sse(Vec<Frame>),
    Status {
        code: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// A 200 with this content type and body (a proxy's page, a non-streaming answer).
    Body {
        content_type: String,
        body: String,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub body: Value,
    pub headers: HashMap<String, String>,
    pub peer: SocketAddr,
    pub at: Instant,
}

#[derive(Default)]
struct Inner {
    replies: Mutex<VecDeque<Reply>>,
    /// Replies go back to the end of the script once used (for benchmarks).
    cycle: bool,
    /// Each request is first sent verbatim to this chat-completions URL; an error status
    /// from it is passed back instead of the scripted reply.
    upstream: Option<String>,
    requests: Mutex<Vec<Recorded>>,
    models_requests: Mutex<u32>,
}

pub(crate) struct MockLlm {
    /// The API root, e.g. `http://127.0.0.1:43125/v1`.
    pub url: String,
    inner: Arc<Inner>,
}

impl MockLlm {
    pub(crate) fn start(replies: Vec<Reply>) -> MockLlm {
        Self::launch(replies, false, None)
    }

    /// Serves the script over and over.
    pub(crate) fn start_cycling(replies: Vec<Reply>) -> MockLlm {
        Self::launch(replies, true, None)
    }

    /// Forwards every request to `upstream` (an API root like `http://host:port/v1`) before
    /// answering from the script, so a real server sees (and traces) each request.
    pub(crate) fn start_forwarding(upstream: &str, replies: Vec<Reply>) -> MockLlm {
        Self::launch(replies, false, Some(format!("{upstream}/chat/completions")))
    }

    pub(crate) fn clear_requests(&self) {
        self.inner.requests.lock().unwrap().clear();
    }

    fn launch(replies: Vec<Reply>, cycle: bool, upstream: Option<String>) -> MockLlm {
        let inner = Arc::new(Inner {
            replies: Mutex::new(replies.into()),
            cycle,
            upstream,
            ..Inner::default()
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            // Anthropic's Messages API: the same script, frames written by the test.
            .route("/v1/messages", post(chat))
            .route("/v1/models", get(models))
            // Conversations with large tool calls exceed axum's 2 MB default.
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(inner.clone());
        let addr = serve(app);
        MockLlm {
            url: format!("http://{addr}/v1"),
            inner,
        }
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.inner.requests.lock().unwrap().clone()
    }

    pub(crate) fn models_requests(&self) -> u32 {
        *self.inner.models_requests.lock().unwrap()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.inner.replies.lock().unwrap().len()
    }
}

async fn models(State(state): State<Arc<Inner>>) -> impl IntoResponse {
    *state.models_requests.lock().unwrap() += 1;
    axum::Json(json!({"object": "list", "data": [{"id": "mock-model"}, {"id": "other-model"}]}))
}

async fn chat(
    State(state): State<Arc<Inner>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = Recorded {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        peer,
        at: Instant::now(),
    };
    state.requests.lock().unwrap().push(recorded);
    if let Some(upstream) = &state.upstream {
        let client = worker::http::client(Duration::from_secs(5), false).expect("client");
        let mut forward = client.post(upstream).body(body.to_vec());
        for (name, value) in headers.iter() {
            if name != "host" && name != "content-length" {
                forward = forward.header(name.as_str(), value.as_bytes());
            }
        }
        match forward.send().await {
            Ok(response) if response.status().is_success() => {
                // Drain it: the upstream finishes the request (and its trace row).
                let _ = response.bytes().await;
            }
            Ok(response) => {
                let code = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                return (StatusCode::from_u16(code).unwrap(), text).into_response();
            }
            Err(err) => {
                return (StatusCode::BAD_GATEWAY, format!("upstream failed: {err}"))
                    .into_response();
            }
        }
    }
    let reply = {
        let mut replies = state.replies.lock().unwrap();
        let reply = replies.pop_front();
        if let (true, Some(reply)) = (state.cycle, &reply) {
            replies.push_back(reply.clone());
        }
        reply
    };
    match reply {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "mock script exhausted").into_response(),
        Some(Reply::Status {
            code,
            body,
            retry_after,
        }) => {
            let mut response = (StatusCode::from_u16(code).unwrap(), body).into_response();
            if let Some(value) = retry_after {
                response
                    .headers_mut()
                    .insert("retry-after", value.parse().unwrap());
            }
            response
        }
        Some(Reply::Body { content_type, body }) => Response::builder()
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap(),
        Some(Reply::Sse(frames)) => {
            let stream = futures_util::stream::iter(frames).then(|frame| async move {
                match frame {
                    Frame::Data(text) => Some(Ok(Bytes::from(format!("data: {text}\n\n")))),
                    Frame::Raw(text) => Some(Ok(Bytes::from(text))),
                    Frame::Delay(d) => {
                        tokio::time::sleep(d).await;
                        Some(Ok(Bytes::new()))
                    }
                    Frame::Stall => {
                        futures_util::future::pending::<()>().await;
                        None
                    }
                    Frame::Cut => Some(Err(std::io::Error::other("cut"))),
                }
            });
            let stream = stream.filter_map(|item| async move { item });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    }
}

// ---- chunk builders -------------------------------------------------------------------------

/// Serves `app` on a free port of 127.0.0.1 from a thread and runtime of its own, for the
/// life of the process; handlers can extract the client's address (`ConnectInfo`).
pub(crate) fn serve(app: Router) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            let _ = axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await;
        });
    });
    rx.recv().expect("server address")
}

pub(crate) fn chunk(delta: Value) -> Frame {
    Frame::Data(json!({"id": "chatcmpl-mock", "model": "mock-model", "choices": [{"index": 0, "delta": delta}]}).to_string())
}

pub(crate) fn role() -> Frame {
    chunk(json!({"role": "assistant", "content": ""}))
}

pub(crate) fn text(t: &str) -> Frame {
    chunk(json!({"content": t}))
}

pub(crate) fn reasoning(t: &str) -> Frame {
    chunk(json!({"reasoning_content": t}))
}

pub(crate) fn tool_call(index: u32, id: &str, name: &str, args: &str) -> Frame {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}),
    )
}

pub(crate) fn tool_args(index: u32, args: &str) -> Frame {
    chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": args}}]}))
}

pub(crate) fn finish(reason: &str) -> Frame {
    Frame::Data(json!({"id": "chatcmpl-mock", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string())
}

pub(crate) fn usage(prompt: u64, completion: u64, cached: u64) -> Frame {
    Frame::Data(
        json!({"id": "chatcmpl-mock", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}}})
            .to_string(),
    )
}

pub(crate) fn done() -> Frame {
    Frame::Data("[DONE]".to_string())
}

/// A complete text answer.
pub(crate) fn answer(t: &str) -> Reply {
    Reply::Sse(vec![
        role(),
        text(t),
        finish("stop"),
        usage(10, 5, 0),
        done(),
    ])
}

/// `reply`, its body held back for `wait` first: time for work beside the model (a tee's
/// connection, on a loaded machine) to happen before the run can end.
pub(crate) fn delayed(wait: Duration, reply: Reply) -> Reply {
    match reply {
        Reply::Sse(mut frames) => {
            frames.insert(0, Frame::Delay(wait));
            Reply::Sse(frames)
        }
        _ => panic!("only a streamed reply can be held back"),
    }
}

/// A complete message calling one tool.
pub(crate) fn call(id: &str, name: &str, args: &str) -> Reply {
    Reply::Sse(vec![
        role(),
        tool_call(0, id, name, args),
        finish("tool_calls"),
        usage(10, 5, 0),
        done(),
    ])
}

pub(crate) fn status(code: u16, body: &str) -> Reply {
    Reply::Status {
        code,
        body: body.to_string(),
        retry_after: None,
    }
}

// ---- Anthropic Messages stream builders ------------------------------------------------------

/// One Anthropic stream event: `event: <type>` and its JSON.
pub(crate) fn anthropic_event(event: Value) -> Frame {
    let kind = event["type"].as_str().unwrap_or("unknown").to_string();
    Frame::Raw(format!("event: {kind}\ndata: {event}\n\n"))
}

/// A whole Anthropic stream: `message_start` (with usage), the blocks, `message_delta` with
/// the stop reason and output tokens, `message_stop`.
pub(crate) fn anthropic_stream(blocks: Vec<Value>, stop_reason: &str, usage: Value) -> Reply {
    let mut frames = vec![anthropic_event(json!({
        "type": "message_start",
        "message": {"id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-mock", "content": [], "usage": usage},
    }))];
    for (index, block) in blocks.into_iter().enumerate() {
        let start = match block["type"].as_str() {
            Some("tool_use") => {
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
            }
            Some("thinking") => json!({"type": "thinking", "thinking": ""}),
            _ => json!({"type": "text", "text": ""}),
        };
        frames.push(anthropic_event(
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        let deltas = match block["type"].as_str() {
            Some("tool_use") => {
                let input = block["input"].to_string();
                let (a, b) = input.split_at(input.len() / 2);
                vec![
                    json!({"type": "input_json_delta", "partial_json": a}),
                    json!({"type": "input_json_delta", "partial_json": b}),
                ]
            }
            Some("thinking") => vec![
                json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                json!({"type": "signature_delta", "signature": block["signature"]}),
            ],
            _ => vec![json!({"type": "text_delta", "text": block["text"]})],
        };
        for delta in deltas {
            frames.push(anthropic_event(
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    frames.push(anthropic_event(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 25}})));
    frames.push(anthropic_event(json!({"type": "message_stop"})));
    Reply::Sse(frames)
}
