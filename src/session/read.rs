//! Reading a session back: the messages on the path from the last entry to the first (Pi's
//! tree, walked by `parentId`), a compaction entry standing for what it summarized, and tool
//! calls left without a result by a crash answered with [`super::interrupted_result`].
//!
//! A crash can only cut the line being appended, so a last line without its newline is left
//! out, and reported; damage anywhere else is not something a crash leaves, and resuming
//! past it would silently lose the conversation behind it: it is an error naming the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ids::ToolCallId;

use crate::events::{
    ASSISTANT_API, AssistantContent, AssistantMessage, Cost, InputTruncated, Message, StopReason,
    TextContent, ToolCall, ToolResultMessage, TruncatedInput, TruncationReason, Usage, UserMessage,
};
use crate::input_file::{InputFile, InputKind};

/// A session as read from disk.
#[derive(Debug)]
pub struct Loaded {
    /// The file that was read.
    pub path: PathBuf,
    /// The session's id, from its header line.
    pub id: crate::ids::SessionId,
    /// The working directory the header records; `None` when it records none.
    pub cwd: Option<String>,
    /// The conversation to continue.
    pub messages: Vec<Message>,
    /// Every entry id in the file.
    pub entry_ids: Vec<String>,
    /// The entry new ones continue from.
    pub leaf: Option<String>,
    /// Tool calls answered as interrupted.
    pub interrupted: usize,
    /// The file's size when it was read.
    pub size: u64,
    /// A last line cut mid-write, left out: the file's whole lines end `kept_bytes` in.
    pub torn: Option<InputTruncated>,
}

/// Why a session file could not be resumed. Every message starts with the file's path.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Read {
        /// The session file.
        path: PathBuf,
        /// Why reading it failed.
        source: crate::input_file::InputFileError,
    },
    /// The first line is not a session header.
    #[error("{path}: not a session file (no session header)")]
    NoHeader {
        /// The file.
        path: PathBuf,
    },
    /// The header has no `id`.
    #[error("{path}: the session header has no id")]
    NoId {
        /// The session file.
        path: PathBuf,
    },
    /// The header's `id` is not a valid session id.
    #[error("{path}: {source}")]
    InvalidId {
        /// The session file.
        path: PathBuf,
        /// Why the id was refused.
        source: crate::ids::InvalidSessionId,
    },
    /// A whole line after the header is not JSON.
    #[error(
        "{path}: line {line} is not a session entry ({source}); the file is damaged there: repair or remove that line to resume"
    )]
    NotJson {
        /// The session file.
        path: PathBuf,
        /// The line's number, counting from 1.
        line: usize,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// A whole line after the header is JSON but not an object.
    #[error(
        "{path}: line {line} is not a session entry (not a JSON object); the file is damaged there: repair or remove that line to resume"
    )]
    NotAnObject {
        /// The session file.
        path: PathBuf,
        /// The line's number, counting from 1.
        line: usize,
    },
    /// Following `parentId` from the last entry comes back to an entry already visited.
    #[error("{path}: the entries' parentId links form a loop")]
    Loop {
        /// The session file.
        path: PathBuf,
    },
}

/// Reads a session. A last line without its newline was being written when the run died: it
/// is left out (and said so in [`Loaded::torn`]). Any other line that is not a JSON object is
/// damage that reading cannot repair: an error naming the line.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let owned = || path.to_path_buf();
    let bytes = InputFile::open(path)
        .and_then(|file| file.read(InputKind::Session))
        .map_err(|source| LoadError::Read {
            path: owned(),
            source,
        })?;
    let whole_len = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let (whole, tail) = bytes.split_at(whole_len);
    let torn = (!tail.is_empty()).then(|| torn_line(path, whole.len(), tail.len()));
    let mut lines = whole.split_inclusive(|b| *b == b'\n');
    let header: Value = lines
        .next()
        .and_then(|line| serde_json::from_slice(line.trim_ascii_end()).ok())
        .filter(|h: &Value| h["type"] == "session")
        .ok_or_else(|| LoadError::NoHeader { path: owned() })?;
    let id = header["id"]
        .as_str()
        .ok_or_else(|| LoadError::NoId { path: owned() })?;
    let id = crate::ids::SessionId::parse(id).map_err(|source| LoadError::InvalidId {
        path: owned(),
        source,
    })?;
    let mut entries: Vec<Value> = Vec::new();
    for (index, line) in lines.enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let entry = serde_json::from_slice::<Value>(line).map_err(|source| LoadError::NotJson {
            path: owned(),
            line: index + 2,
            source,
        })?;
        if !entry.is_object() {
            return Err(LoadError::NotAnObject {
                path: owned(),
                line: index + 2,
            });
        }
        entries.push(entry);
    }
    let by_id: HashMap<&str, &Value> = entries
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e)))
        .collect();
    let leaf = entries
        .last()
        .and_then(|e| e["id"].as_str())
        .map(str::to_string);
    // The path from the leaf back to the root, then in order.
    let mut path_entries = Vec::new();
    let mut next = leaf.as_deref();
    while let Some(entry) = next.and_then(|id| by_id.get(id)) {
        path_entries.push(*entry);
        next = entry["parentId"].as_str();
        if path_entries.len() > entries.len() {
            return Err(LoadError::Loop { path: owned() });
        }
    }
    path_entries.reverse();
    let mut messages = Vec::new();
    // The last compaction on the path stands for everything before its first kept entry.
    let compaction = path_entries.iter().rposition(|e| e["type"] == "compaction");
    let mut keep_from = 0;
    if let Some(at) = compaction {
        let entry = path_entries[at];
        messages.push(user_text(&format!(
            "The conversation so far, summarized:\n\n{}",
            entry["summary"].as_str().unwrap_or_default()
        )));
        let first_kept = entry["firstKeptEntryId"].as_str();
        keep_from = path_entries
            .iter()
            .position(|e| first_kept.is_some() && e["id"].as_str() == first_kept)
            .unwrap_or(at + 1);
    }
    for (index, entry) in path_entries.iter().enumerate().skip(keep_from) {
        if Some(index) == compaction || entry["type"] != "message" {
            continue;
        }
        if let Some(message) = message(&entry["message"]) {
            messages.push(message);
        }
    }
    let interrupted = answer_interrupted_calls(&mut messages);
    Ok(Loaded {
        path: path.to_path_buf(),
        id,
        cwd: header["cwd"].as_str().map(str::to_string),
        messages,
        entry_ids: entries
            .iter()
            .filter_map(|e| e["id"].as_str().map(str::to_string))
            .collect(),
        leaf,
        interrupted,
        size: bytes.len() as u64,
        torn,
    })
}

/// What reading says about a last line cut mid-write.
fn torn_line(path: &Path, kept: usize, dropped: usize) -> InputTruncated {
    InputTruncated {
        input: TruncatedInput::Session,
        path: path.display().to_string(),
        reason: TruncationReason::TornLastLine,
        kept_bytes: kept as u64,
        dropped_bytes: dropped as u64,
        cap_bytes: None,
        message: format!(
            "session {}: its last line ({dropped} bytes) was cut mid-write and is dropped; resuming from the last whole entry",
            path.display()
        ),
    }
}

/// Calls of the last assistant message that have no result get one saying they were
/// interrupted; returns how many.
fn answer_interrupted_calls(messages: &mut Vec<Message>) -> usize {
    let Some(at) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
    else {
        return 0;
    };
    let answered: Vec<&ToolCallId> = messages[at + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(&r.tool_call_id),
            _ => None,
        })
        .collect();
    let missing: Vec<(ToolCallId, String)> = match &messages[at] {
        Message::Assistant(assistant) => assistant
            .tool_calls()
            .filter(|call| !answered.contains(&&call.id))
            .map(|call| (call.id.clone(), call.name.clone()))
            .collect(),
        _ => Vec::new(),
    };
    for (id, name) in &missing {
        messages.push(super::interrupted_result(id.as_str(), name));
    }
    missing.len()
}

fn user_text(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![TextContent::text(text)],
        timestamp: crate::events::now_millis(),
    })
}

fn texts(content: &Value) -> Vec<TextContent> {
    match content {
        Value::String(text) => vec![TextContent::text(text.as_str())],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(TextContent::text))
            .collect(),
        _ => Vec::new(),
    }
}

fn number(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// One stored message; roles worker does not use (Pi's bash executions, custom messages) are
/// left out.
fn message(value: &Value) -> Option<Message> {
    let timestamp = number(&value["timestamp"]);
    match value["role"].as_str()? {
        "user" => Some(Message::User(UserMessage {
            content: texts(&value["content"]),
            timestamp,
        })),
        "toolResult" => Some(Message::ToolResult(ToolResultMessage {
            tool_call_id: value["toolCallId"].as_str()?.into(),
            tool_name: value["toolName"].as_str().unwrap_or_default().to_string(),
            content: texts(&value["content"]),
            details: value.get("details").cloned().filter(|d| !d.is_null()),
            is_error: value["isError"].as_bool().unwrap_or(false),
            timestamp,
        })),
        "compactionSummary" => Some(user_text(&format!(
            "The conversation so far, summarized:\n\n{}",
            value["summary"].as_str().unwrap_or_default()
        ))),
        "assistant" => {
            let content = value["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|block| match block["type"].as_str()? {
                    "text" => Some(AssistantContent::Text {
                        text: block["text"].as_str()?.to_string(),
                    }),
                    "thinking" => Some(AssistantContent::Thinking {
                        thinking: block["thinking"].as_str()?.to_string(),
                        thinking_signature: block["thinkingSignature"].as_str().map(str::to_string),
                    }),
                    "toolCall" => Some(AssistantContent::ToolCall(ToolCall {
                        id: block["id"].as_str()?.into(),
                        name: block["name"].as_str()?.to_string(),
                        raw_arguments: block["arguments"].to_string(),
                        arguments_error: None,
                    })),
                    _ => None,
                })
                .collect();
            let usage = &value["usage"];
            let cost = &usage["cost"];
            let float = |v: &Value| v.as_f64().unwrap_or(0.0);
            Some(Message::Assistant(AssistantMessage {
                content,
                api: match value["api"].as_str() {
                    Some("anthropic-messages") => "anthropic-messages",
                    _ => ASSISTANT_API,
                },
                provider: value["provider"].as_str().unwrap_or_default().to_string(),
                model: value["model"].as_str().unwrap_or_default().to_string(),
                usage: Usage {
                    input: number(&usage["input"]),
                    output: number(&usage["output"]),
                    cache_read: number(&usage["cacheRead"]),
                    cache_write: number(&usage["cacheWrite"]),
                    total_tokens: number(&usage["totalTokens"]),
                    cost: Cost {
                        input: float(&cost["input"]),
                        output: float(&cost["output"]),
                        cache_read: float(&cost["cacheRead"]),
                        cache_write: float(&cost["cacheWrite"]),
                        total: float(&cost["total"]),
                    },
                    reasoning: usage["reasoning"].as_u64(),
                },
                stop_reason: match value["stopReason"].as_str() {
                    Some("toolUse") => StopReason::ToolUse,
                    Some("length") => StopReason::Length,
                    Some("error") => StopReason::Error,
                    Some("aborted") => StopReason::Aborted,
                    _ => StopReason::Stop,
                },
                timestamp,
                response_id: value["responseId"].as_str().map(str::to_string),
                error_message: value["errorMessage"].as_str().map(str::to_string),
            }))
        }
        _ => None,
    }
}
