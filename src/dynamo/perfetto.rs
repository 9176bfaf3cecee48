//! `worker trace perfetto`: a Dynamo trace (worker's `--trace-file`, or Dynamo's own JSONL
//! sink) as Chrome Trace Event JSON, which ui.perfetto.dev and chrome://tracing open.
//!
//! One process per session, one track (thread) per trajectory, so a subagent is its own
//! track beside its parent's; model requests and tool calls are slices on their trajectory's
//! track. Tool slices come from the terminal record (which carries start and duration); a
//! `tool_start` without a terminal record becomes an instant marker. Both record schemas are
//! read: `dynamo.agent.trace.v1` (session and trajectory ids) and `dynamo.request.trace.v1`
//! (session ids only, shown under one process).
//!
//! Flows (arrows) join the slices: from a model request to each tool call its response asked
//! for (the tool record's `source_request_id`), and from a tool call to the request that
//! carried its result back (`consumer_request_id`), matched by the request rows'
//! `x_request_id`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use super::records::{AGENT_SCHEMA, REQUEST_SCHEMA};

/// Why [`convert_file`] failed.
#[derive(Debug, thiserror::Error)]
pub enum PerfettoError {
    /// The input trace could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The input path, as given.
        path: String,
        /// Why it could not be read.
        source: crate::input_file::InputFileError,
    },
    /// The output could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The output path, as given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What a conversion drew, for the command's report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Request and tool slices, plus the instant markers of tool calls with no terminal record
    /// (arrows and track names not counted).
    pub slices: usize,
    /// Processes: distinct sessions (every `dynamo.request.trace.v1` record goes under one).
    pub sessions: usize,
    /// Tracks: distinct trajectories, counted per session.
    pub trajectories: usize,
    /// Non-blank lines left out: not JSON, no known schema or ids, or an event type that is
    /// not drawn.
    pub skipped_lines: usize,
    /// Arrows drawn between request and tool slices.
    pub flows: usize,
}

/// Where a slice is: (pid, tid, start ms, duration ms).
type SliceAt = (usize, usize, f64, f64);

/// The arrows between request and tool slices, as Chrome flow events (`s` then `f`). An
/// arrow leaves from just inside its slice's end and lands on the next slice's start.
fn flows(
    requests: &HashMap<String, SliceAt>,
    tools: &[(SliceAt, Option<String>, Option<String>)],
) -> Vec<Value> {
    let mut events = Vec::new();
    let mut arrow = |from: SliceAt, to: SliceAt, name: &str| {
        let id = events.len() / 2 + 1;
        let leave = from.2 + (from.3 - 0.001).max(0.0);
        events.push(json!({"ph": "s", "id": id, "cat": "join", "name": name,
                           "ts": leave * 1000.0, "pid": from.0, "tid": from.1}));
        events.push(
            json!({"ph": "f", "bp": "e", "id": id, "cat": "join", "name": name,
                           "ts": to.2 * 1000.0, "pid": to.0, "tid": to.1}),
        );
    };
    for (tool, source, consumer) in tools {
        if let Some(request) = source.as_ref().and_then(|id| requests.get(id)) {
            arrow(*request, *tool, "asked");
        }
        if let Some(request) = consumer.as_ref().and_then(|id| requests.get(id)) {
            arrow(*tool, *request, "answered");
        }
    }
    events
}

/// Reads the JSONL trace at `input` and writes its timeline to `output` (replacing it).
pub fn convert_file(input: &Path, output: &Path) -> Result<Summary, PerfettoError> {
    let kind = crate::input_file::InputKind::Trace;
    let text = crate::input_file::read_text(input, kind).map_err(|source| PerfettoError::Read {
        path: input.display().to_string(),
        source,
    })?;
    let (trace, summary) = convert(&text);
    let bytes = serde_json::to_vec(&trace).unwrap_or_default();
    std::fs::write(output, bytes).map_err(|source| PerfettoError::Write {
        path: output.display().to_string(),
        source,
    })?;
    Ok(summary)
}

/// Where a record belongs: (session, trajectory, parent trajectory).
struct Place {
    session: String,
    trajectory: String,
    parent: Option<String>,
}

#[derive(Default)]
struct Tracks {
    sessions: Vec<String>,
    /// (session index, trajectory) → (tid, parent)
    trajectories: Vec<(usize, String, Option<String>)>,
}

impl Tracks {
    fn ids(&mut self, place: &Place) -> (usize, usize) {
        let pid = match self.sessions.iter().position(|s| *s == place.session) {
            Some(i) => i,
            None => {
                self.sessions.push(place.session.clone());
                self.sessions.len() - 1
            }
        };
        let tid = match self
            .trajectories
            .iter()
            .position(|(p, t, _)| *p == pid && *t == place.trajectory)
        {
            Some(i) => {
                if self.trajectories[i].2.is_none() {
                    self.trajectories[i].2.clone_from(&place.parent);
                }
                i
            }
            None => {
                self.trajectories
                    .push((pid, place.trajectory.clone(), place.parent.clone()));
                self.trajectories.len() - 1
            }
        };
        (pid + 1, tid + 1)
    }
}

/// A JSONL trace (Dynamo's `{"timestamp", "event"}` envelopes or bare records) as
/// `{"traceEvents": [...], "displayTimeUnit": "ms"}`, with times in µs, and what it drew.
pub fn convert(text: &str) -> (Value, Summary) {
    let mut tracks = Tracks::default();
    let mut events: Vec<Value> = Vec::new();
    let mut open_starts: HashMap<(usize, usize, String), (f64, String)> = HashMap::new();
    let mut summary = Summary::default();
    let mut requests: HashMap<String, SliceAt> = HashMap::new();
    let mut tools: Vec<(SliceAt, Option<String>, Option<String>)> = Vec::new();
    let text_of = |value: &Value| value.as_str().map(str::to_string);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            summary.skipped_lines += 1;
            continue;
        };
        let record = value.get("event").unwrap_or(&value);
        let Some(place) = place(record) else {
            summary.skipped_lines += 1;
            continue;
        };
        let (pid, tid) = tracks.ids(&place);
        let event_type = record["event_type"].as_str().unwrap_or("");
        let event_time = record["event_time_unix_ms"].as_f64().unwrap_or(0.0);
        match event_type {
            "request_end" => {
                let request = &record["request"];
                let total = request["total_time_ms"].as_f64().unwrap_or(0.0);
                let start = request["request_received_ms"]
                    .as_f64()
                    .unwrap_or(event_time - total);
                let model = request["model"].as_str().unwrap_or("model");
                if let Some(id) = text_of(&request["x_request_id"]) {
                    requests.insert(id, (pid, tid, start, total));
                }
                events.push(slice(
                    pid,
                    tid,
                    "llm",
                    &format!("llm {}", short_model(model)),
                    start,
                    total,
                    request.clone(),
                ));
            }
            "tool_start" => {
                let tool = &record["tool"];
                let id = tool["tool_call_id"].as_str().unwrap_or("").to_string();
                let start = tool["started_at_unix_ms"].as_f64().unwrap_or(event_time);
                let class = tool["tool_class"].as_str().unwrap_or("tool").to_string();
                open_starts.insert((pid, tid, id), (start, class));
            }
            "tool_end" | "tool_error" => {
                let tool = &record["tool"];
                let id = tool["tool_call_id"].as_str().unwrap_or("").to_string();
                let opened = open_starts.remove(&(pid, tid, id));
                let start = tool["started_at_unix_ms"]
                    .as_f64()
                    .or(opened.as_ref().map(|(s, _)| *s))
                    .unwrap_or(event_time);
                let duration = tool["duration_ms"]
                    .as_f64()
                    .unwrap_or(event_time - start)
                    .max(0.0);
                let class = tool["tool_class"].as_str().unwrap_or("tool");
                tools.push((
                    (pid, tid, start, duration),
                    text_of(&tool["source_request_id"]),
                    text_of(&tool["consumer_request_id"]),
                ));
                events.push(slice(
                    pid,
                    tid,
                    "tool",
                    class,
                    start,
                    duration,
                    tool.clone(),
                ));
            }
            "control" => events.push(control_instant(&record["control"], pid, tid, event_time)),
            _ => summary.skipped_lines += 1,
        }
    }
    for ((pid, tid, id), (start, class)) in open_starts {
        events.push(json!({
            "ph": "i", "s": "t", "cat": "tool", "name": format!("{class} (no end record)"),
            "ts": start * 1000.0, "pid": pid, "tid": tid, "args": {"tool_call_id": id},
        }));
    }
    summary.slices = events.len();
    let arrows = flows(&requests, &tools);
    summary.flows = arrows.len() / 2;
    events.extend(arrows);
    events.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b["ts"].as_f64().unwrap_or(0.0))
    });
    let mut metadata = Vec::new();
    for (i, session) in tracks.sessions.iter().enumerate() {
        metadata.push(json!({"ph": "M", "name": "process_name", "pid": i + 1, "args": {"name": format!("session {session}")}}));
    }
    for (i, (pid, trajectory, parent)) in tracks.trajectories.iter().enumerate() {
        let name = match parent {
            Some(parent) => format!("{trajectory} (parent {parent})"),
            None => trajectory.clone(),
        };
        metadata.push(json!({"ph": "M", "name": "thread_name", "pid": pid + 1, "tid": i + 1, "args": {"name": name}}));
        metadata.push(json!({"ph": "M", "name": "thread_sort_index", "pid": pid + 1, "tid": i + 1, "args": {"sort_index": i}}));
    }
    summary.sessions = tracks.sessions.len();
    summary.trajectories = tracks.trajectories.len();
    metadata.extend(events);
    (
        json!({"traceEvents": metadata, "displayTimeUnit": "ms"}),
        summary,
    )
}

/// A control record (a controller's answer, an approval, a hook's decision) as an instant
/// event on its trajectory's track, named by its type, at `time` (Unix ms).
fn control_instant(control: &Value, pid: usize, tid: usize, time: f64) -> Value {
    let kind = control["type"].as_str().unwrap_or("control");
    json!({
        "ph": "i", "s": "t", "cat": "control", "name": kind,
        "ts": time * 1000.0, "pid": pid, "tid": tid, "args": control.clone(),
    })
}

fn place(record: &Value) -> Option<Place> {
    let context = &record["agent_context"];
    match record["schema"].as_str()? {
        AGENT_SCHEMA => Some(Place {
            session: context["session_id"].as_str()?.to_string(),
            trajectory: context["trajectory_id"].as_str()?.to_string(),
            parent: context["parent_trajectory_id"].as_str().map(str::to_string),
        }),
        REQUEST_SCHEMA => {
            // Full records carry agent_context; flat tool ingress records carry session_id.
            let session = context["session_id"]
                .as_str()
                .or(record["session_id"].as_str());
            let parent = context["parent_session_id"]
                .as_str()
                .or(record["parent_session_id"].as_str());
            Some(Place {
                session: "dynamo".to_string(),
                trajectory: session.unwrap_or("(no session)").to_string(),
                parent: parent.map(str::to_string),
            })
        }
        _ => None,
    }
}

fn slice(
    pid: usize,
    tid: usize,
    category: &str,
    name: &str,
    start_ms: f64,
    duration_ms: f64,
    args: Value,
) -> Value {
    json!({
        "ph": "X", "cat": category, "name": name,
        "ts": start_ms * 1000.0, "dur": duration_ms * 1000.0,
        "pid": pid, "tid": tid, "args": args,
    })
}

/// The last path component of a model id (`/models/qwen` → `qwen`).
fn short_model(model: &str) -> &str {
    model
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(model)
}

#[cfg(test)]
mod tests;
