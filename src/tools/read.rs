//! `read {path, offset?, limit?, hashline?}`: a text file's lines, as the model should see them.
//!
//! The file is scanned once, streaming: only the lines that will be shown are kept, the rest
//! are counted (for "of N" and the continuation hint), so a multi-gigabyte log costs a scan,
//! not its size in memory. Binary files and images get a one-line description instead of
//! bytes.

use std::io::{self, BufRead, BufReader};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::access::{Access, PathPolicy};
use super::args::{Count, Flag};
use super::confined::verify_opened;
use super::files::{Irregular, not_regular, open_regular, read_error};
use super::hashline::line_prefix;
use super::truncate::{MAX_BYTES, MAX_LINES, TruncatedBy, Truncation, format_size};
use super::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};
use crate::events::ToolResult;

pub(super) struct ReadTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct ReadArgs {
    /// Path to the file to read (relative or absolute)
    path: String,
    /// Line number to start reading from (1-indexed)
    offset: Option<Count>,
    /// Maximum number of lines to read
    limit: Option<Count>,
    /// Prefix each line with its LINE#TAG anchor for hashline_edit
    hashline: Option<Flag>,
}

impl TypedTool for ReadTool {
    type Args = ReadArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "read",
            description: "Read a file's contents. Text comes back as-is, without line numbers. Output is limited \
                          to 2000 lines or 50KB, whichever comes first; when more remains, the result says which \
                          offset to continue from. Use offset (1-indexed line) and limit for large files. \
                          hashline: true prefixes each line with an anchor (LINE#TAG:) for hashline_edit. \
                          Binary files and images are described, not dumped.",
            snippet: Some("Read file contents"),
            read_only: true,
        }
    }

    async fn run(&self, args: ReadArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let path = ctx.path(&args.path, Access::Read)?;
        let request = ReadRequest {
            display: args.path,
            start: args.offset.map_or(1, |n| n.0).max(1),
            limit: args.limit.map(|n| n.0).filter(|n| *n > 0),
            hashline: args.hashline.is_some_and(|f| f.0),
        };
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || read_file(&path, policy.as_deref(), &request))
            .await
            .map_err(|err| ToolError::new(format!("read failed: {err}")))?
    }
}

struct ReadRequest {
    display: String,
    start: u64,
    limit: Option<u64>,
    hashline: bool,
}

/// How much of the file a scan shows.
#[derive(Default)]
struct Scan {
    lines: Vec<String>,
    bytes: usize,
    total: u64,
    stop: Option<Stop>,
    first_line_len: usize,
    lossy: bool,
    /// The file's size, as read.
    bytes_read: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Stop {
    UserLimit,
    Caps(TruncatedBy),
}

fn read_file(
    path: &Path,
    policy: Option<&PathPolicy>,
    req: &ReadRequest,
) -> Result<ToolResult, ToolError> {
    let display = &req.display;
    let opened = open_regular(path).map_err(|err| read_error(&err, display))?;
    if let Ok((file, _)) = &opened {
        verify_opened(policy, file, display)?;
    }
    let (file, meta) = match opened {
        Ok(opened) => opened,
        Err(Irregular::Directory) => {
            return Err(ToolError::new(format!(
                "Path is a directory: {display}. Use ls to list its contents."
            )));
        }
        Err(kind) => return Err(not_regular(display, kind, "read")),
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|err| read_error(&err, display))?;
    if let Some(mime) = image_mime(head, path) {
        return Ok(text_result(
            format!(
                "Read image file [{mime}]: {display} ({}). Image content is not passed to the model by this tool.",
                format_size(meta.len() as usize)
            ),
            Some(json!({"mimeType": mime, "bytes": meta.len()})),
        ));
    }
    if head[..head.len().min(8192)].contains(&0) {
        return Ok(text_result(
            format!(
                "{display} is a binary file ({}); its content is not shown. Use bash (file, xxd, strings) to inspect it.",
                format_size(meta.len() as usize)
            ),
            Some(json!({"binary": true, "bytes": meta.len()})),
        ));
    }
    let scan = scan(&mut reader, req).map_err(|err| read_error(&err, display))?;
    render(scan, req)
}

fn scan(reader: &mut impl BufRead, req: &ReadRequest) -> io::Result<Scan> {
    let mut scan = Scan::default();
    let mut current: Vec<u8> = Vec::new();
    let mut current_len = 0usize;
    let mut pending = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let consumed = chunk.len();
        scan.bytes_read += consumed as u64;
        let mut rest = chunk;
        while !rest.is_empty() {
            let collecting = scan.stop.is_none() && scan.total + 1 >= req.start;
            if !collecting && scan.stop.is_some() {
                // Past what we show: only count what is left.
                let newlines = memchr::memchr_iter(b'\n', rest).count() as u64;
                scan.total += newlines;
                pending = rest.last() != Some(&b'\n');
                break;
            }
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    if collecting {
                        append_capped(&mut current, &rest[..i]);
                    }
                    current_len += i;
                    finish_line(&mut scan, req, &mut current, current_len);
                    current_len = 0;
                    pending = false;
                    rest = &rest[i + 1..];
                }
                None => {
                    if collecting {
                        append_capped(&mut current, rest);
                    }
                    current_len += rest.len();
                    pending = true;
                    rest = &[];
                }
            }
        }
        reader.consume(consumed);
    }
    if pending {
        if scan.stop.is_some() {
            scan.total += 1;
        } else {
            finish_line(&mut scan, req, &mut current, current_len);
        }
    }
    Ok(scan)
}

fn append_capped(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = (MAX_BYTES + 1).saturating_sub(line.len());
    line.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

fn finish_line(scan: &mut Scan, req: &ReadRequest, current: &mut Vec<u8>, len: usize) {
    scan.total += 1;
    let number = scan.total;
    if scan.stop.is_some() || number < req.start {
        current.clear();
        return;
    }
    if req.limit.is_some_and(|limit| number - req.start >= limit) {
        scan.stop = Some(Stop::UserLimit);
        current.clear();
        return;
    }
    if scan.lines.len() == MAX_LINES {
        scan.stop = Some(Stop::Caps(TruncatedBy::Lines));
        current.clear();
        return;
    }
    if current.last() == Some(&b'\r') {
        current.pop();
    }
    // A line too long to show was cut when it was collected, maybe inside a character:
    // it is not decoded, so the cut cannot pass for invalid UTF-8.
    if len > MAX_BYTES {
        if scan.lines.is_empty() {
            scan.first_line_len = len;
        }
        scan.stop = Some(Stop::Caps(TruncatedBy::Bytes));
        current.clear();
        return;
    }
    let text = match std::str::from_utf8(current) {
        Ok(text) => text.to_string(),
        Err(_) => {
            scan.lossy = true;
            String::from_utf8_lossy(current).into_owned()
        }
    };
    current.clear();
    let rendered = if req.hashline {
        format!("{}{text}", line_prefix(number as usize, &text))
    } else {
        text
    };
    let cost = rendered.len() + usize::from(!scan.lines.is_empty());
    if scan.bytes + cost > MAX_BYTES {
        if scan.lines.is_empty() {
            scan.first_line_len = len;
        }
        scan.stop = Some(Stop::Caps(TruncatedBy::Bytes));
        return;
    }
    scan.bytes += cost;
    scan.lines.push(rendered);
}

fn render(scan: Scan, req: &ReadRequest) -> Result<ToolResult, ToolError> {
    let display = &req.display;
    if scan.total == 0 {
        if req.start > 1 {
            return Err(ToolError::new(format!(
                "Offset {} is beyond end of file (0 lines total)",
                req.start
            )));
        }
        return Ok(text_result("(empty file)", None));
    }
    if req.start > scan.total {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({} lines total)",
            req.start, scan.total
        )));
    }
    let kept = scan.lines.len() as u64;
    let last = req.start + kept.saturating_sub(1);
    let mut text = scan.lines.join("\n");
    let mut details = None;
    match scan.stop {
        Some(Stop::Caps(by)) => {
            let first_line_exceeds = kept == 0;
            if first_line_exceeds {
                text = format!(
                    "[Line {} is {}, exceeds {} limit. Use bash: sed -n '{}p' {} | head -c {}]",
                    req.start,
                    format_size(scan.first_line_len),
                    format_size(MAX_BYTES),
                    req.start,
                    display,
                    MAX_BYTES
                );
            } else {
                let limit_note = match by {
                    TruncatedBy::Lines => String::new(),
                    TruncatedBy::Bytes => format!(" ({} limit)", format_size(MAX_BYTES)),
                };
                text.push_str(&format!(
                    "\n\n[Showing lines {}-{} of {}{}. Use offset={} to continue.]",
                    req.start,
                    last,
                    scan.total,
                    limit_note,
                    last + 1
                ));
            }
            let truncation = Truncation {
                truncated: true,
                truncated_by: Some(by),
                total_lines: scan.total as usize,
                total_bytes: scan.bytes_read as usize,
                output_lines: kept as usize,
                output_bytes: scan.bytes,
                last_line_partial: false,
                first_line_exceeds_limit: first_line_exceeds,
                max_lines: MAX_LINES,
                max_bytes: MAX_BYTES,
            };
            details = Some(json!({ "truncation": truncation }));
        }
        Some(Stop::UserLimit) => {
            text.push_str(&format!(
                "\n\n[{} more lines in file. Use offset={} to continue.]",
                scan.total - last,
                last + 1
            ));
        }
        None => {}
    }
    if scan.lossy {
        text.push_str("\n\n[The file is not valid UTF-8; invalid bytes are shown as U+FFFD.]");
    }
    Ok(text_result(text, details))
}

fn image_mime(head: &[u8], path: &Path) -> Option<&'static str> {
    let by_magic = if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    };
    by_magic.or_else(|| {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        // An empty or text file with an image name is still text; only trust the extension
        // when the content is not plain text.
        let textual = std::str::from_utf8(&head[..head.len().min(512)]).is_ok();
        if textual {
            return None;
        }
        match ext.as_str() {
            "png" => Some("image/png"),
            "jpg" | "jpeg" => Some("image/jpeg"),
            "gif" => Some("image/gif"),
            "webp" => Some("image/webp"),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests;
