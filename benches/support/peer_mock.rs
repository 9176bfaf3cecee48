//! The model server of the peer comparison: one scripted 3-turn task (list the files, read the
//! README, answer) over real SSE, in both wire formats the harnesses speak:
//! - `POST /v1/chat/completions` (worker, Pi): `bash {"command":"ls"}`, then
//!   `read {"path":"README.md"}`, then a short answer;
//! - `POST /v1/responses` (codex): `exec_command {"cmd":"ls"}`, then
//!   `exec_command {"cmd":"cat README.md"}` (codex has no read tool), then a short answer.
//!
//! Every turn carries usage. The turn is the number of tool results in the request, so a
//! retried or repeated request gets the same answer; tool names are taken from the request's
//! `tools` where a harness names them differently. `GET /v1/models` lists `mock-model`.
//! Requires `mock_llm` (for `serve` and the chat chunk builders) as a sibling module.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::mock_llm::{Frame, done, finish, role, serve, text, tool_call, usage};

/// The final answer's text.
pub(crate) const ANSWER: &str = "A toy Rust project: a README and a main that does nothing.";

/// Which API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Responses,
}

/// One model request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub api: Api,
    /// 0: list, 1: read, 2: answer.
    pub turn: usize,
    pub bytes: usize,
    /// When the request's body had arrived.
    pub at: Instant,
}

#[derive(Default)]
struct Inner {
    seen: Mutex<Vec<Seen>>,
    ids: AtomicU64,
}

pub(crate) struct PeerMock {
    /// The API root, `http://127.0.0.1:<port>/v1`.
    pub url: String,
    inner: Arc<Inner>,
}

impl PeerMock {
    pub(crate) fn start() -> PeerMock {
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/responses", post(responses))
            .route("/v1/models", get(models))
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(inner.clone());
        PeerMock {
            url: format!("http://{}/v1", serve(app)),
            inner,
        }
    }

    /// The model requests since the last call.
    pub(crate) fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.inner.seen.lock().unwrap())
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}]}),
    )
}

/// The request's JSON body, recorded; `None` when it is not JSON.
fn record(state: &Inner, api: Api, body: &Bytes, results: &str) -> Option<(Value, usize)> {
    let at = Instant::now();
    let request: Value = serde_json::from_slice(body).ok()?;
    let items = match api {
        Api::Chat => &request["messages"],
        Api::Responses => &request["input"],
    };
    let key = match api {
        Api::Chat => "role",
        Api::Responses => "type",
    };
    let turn = items
        .as_array()
        .map_or(0, |items| {
            items.iter().filter(|m| m[key] == results).count()
        })
        .min(2);
    state.seen.lock().unwrap().push(Seen {
        api,
        turn,
        bytes: body.len(),
        at,
    });
    Some((request, turn))
}

/// The names of the request's function tools (`function.name` in Chat Completions, `name`
/// in the Responses API).
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().or(tool["name"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn sse(events: Vec<String>) -> Response {
    let stream = futures_util::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn bad(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

async fn chat(State(state): State<Arc<Inner>>, body: Bytes) -> Response {
    let Some((request, turn)) = record(&state, Api::Chat, &body, "tool") else {
        return bad("not JSON".to_string());
    };
    if request["stream"] != true {
        return bad("this mock only streams".to_string());
    }
    let tools = tool_names(&request);
    let has = |name: &str| tools.iter().any(|t| t == name);
    let id = state.ids.fetch_add(1, Ordering::Relaxed);
    let call =
        |name: &str, args: Value| tool_call(0, &format!("call_{id}"), name, &args.to_string());
    let mut frames = vec![role()];
    match turn {
        0 if has("bash") => frames.push(call("bash", json!({"command": "ls"}))),
        1 if has("read") => frames.push(call("read", json!({"path": "README.md"}))),
        1 if has("bash") => frames.push(call("bash", json!({"command": "cat README.md"}))),
        0 | 1 => {
            return bad(format!(
                "the mock needs a bash tool; the request has {tools:?}"
            ));
        }
        _ => {
            let (a, b) = ANSWER.split_at(ANSWER.len() / 2);
            frames.extend([text(a), text(b)]);
        }
    }
    frames.push(finish(if turn < 2 { "tool_calls" } else { "stop" }));
    frames.push(usage(600 + 50 * turn as u64, 12, 0));
    frames.push(done());
    sse(frames
        .into_iter()
        .map(|frame| match frame {
            Frame::Data(data) => format!("data: {data}\n\n"),
            Frame::Raw(raw) => raw,
            // The builders used above make only data frames.
            _ => String::new(),
        })
        .collect())
}

async fn responses(State(state): State<Arc<Inner>>, body: Bytes) -> Response {
    let Some((request, turn)) = record(&state, Api::Responses, &body, "function_call_output")
    else {
        return bad("not JSON".to_string());
    };
    let tools = tool_names(&request);
    let has = |name: &str| tools.iter().any(|t| t == name);
    let id = state.ids.fetch_add(1, Ordering::Relaxed);
    let command = if turn == 0 { "ls" } else { "cat README.md" };
    let item = if turn == 2 {
        json!({"type": "message", "id": format!("msg_{id}"), "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]})
    } else {
        let (name, args) = if has("exec_command") {
            ("exec_command", json!({"cmd": command}))
        } else if has("shell_command") {
            ("shell_command", json!({"command": command}))
        } else if has("shell") {
            ("shell", json!({"command": ["bash", "-lc", command]}))
        } else {
            return bad(format!(
                "the mock needs exec_command, shell_command or shell; the request has {tools:?}"
            ));
        };
        json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
               "name": name, "arguments": args.to_string(), "status": "completed"})
    };
    let response = |status: &str, output: Value, usage: Value| {
        json!({"id": format!("resp_{id}"), "object": "response", "created_at": 1_700_000_000,
               "status": status, "model": "mock-model", "output": output, "usage": usage})
    };
    let item_id = item["id"].clone();
    let mut events = vec![
        json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)}),
        json!({"type": "response.in_progress", "response": response("in_progress", json!([]), Value::Null)}),
    ];
    if turn == 2 {
        let mut open = item.clone();
        open["status"] = json!("in_progress");
        open["content"] = json!([]);
        let part = json!({"type": "output_text", "text": "", "annotations": []});
        let (a, b) = ANSWER.split_at(ANSWER.len() / 2);
        events.extend([
            json!({"type": "response.output_item.added", "output_index": 0, "item": open}),
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0, "part": part}),
            json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": a}),
            json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": b}),
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": 0, "content_index": 0, "text": ANSWER}),
            json!({"type": "response.content_part.done", "item_id": item_id, "output_index": 0, "content_index": 0,
                   "part": {"type": "output_text", "text": ANSWER, "annotations": []}}),
        ]);
    } else {
        let mut open = item.clone();
        open["status"] = json!("in_progress");
        open["arguments"] = json!("");
        let arguments = item["arguments"].as_str().unwrap_or_default().to_string();
        events.extend([
            json!({"type": "response.output_item.added", "output_index": 0, "item": open}),
            json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": 0, "delta": arguments}),
            json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": 0, "arguments": arguments}),
        ]);
    }
    let usage = json!({"input_tokens": 600 + 50 * turn, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 612 + 50 * turn});
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(json!({"type": "response.completed", "response": response("completed", json!([item]), usage)}));
    sse(events
        .into_iter()
        .enumerate()
        .map(|(sequence, mut event)| {
            event["sequence_number"] = json!(sequence);
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            format!("event: {kind}\ndata: {event}\n\n")
        })
        .collect())
}
