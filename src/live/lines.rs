//! The controller's lines: read from stdin on a thread of their own, handed over one by one.
//!
//! Reading stdin blocks, so it happens on a dedicated thread that stops at EOF; the run takes
//! lines from a bounded queue (a controller that writes faster than the run answers waits on
//! its pipe, memory does not grow). A line longer than the prompt cap is skipped to its end and
//! reported, not buffered: `< /dev/zero` cannot exhaust memory. EOF means "no more commands",
//! never "stop".

use std::io::BufRead;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::input_file::{InputKind, human_bytes};
use crate::sync::LockExt;

/// Lines read but not yet taken; the reader waits when this many are queued.
const QUEUED_LINES: usize = 256;

/// One line from the controller, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line, without its newline.
    Text(String),
    /// Not UTF-8.
    NotUtf8,
    /// Longer than the cap; skipped to its end.
    TooLong,
}

impl Line {
    /// Why this line is not a command, for the answer; `None` for a line of text.
    pub fn problem(&self) -> Option<String> {
        match self {
            Line::Text(_) => None,
            Line::NotUtf8 => Some("the line is not valid UTF-8".to_string()),
            Line::TooLong => Some(format!(
                "the line is longer than the {} a command may be",
                human_bytes(line_cap())
            )),
        }
    }
}

/// What waiting for a line gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A line.
    Line(Line),
    /// EOF (or stdin could not be read): no more lines will come.
    Closed,
    /// Nothing came within the wait.
    TimedOut,
}

/// The controller's lines, shared: the binary takes the first (the prompt), the run the rest.
#[derive(Clone)]
pub struct CommandLines {
    lines: Arc<Mutex<Receiver<Line>>>,
}

impl std::fmt::Debug for CommandLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommandLines")
    }
}

/// The most one command line may hold: as much as a prompt.
fn line_cap() -> u64 {
    InputKind::Prompt.max_bytes()
}

impl CommandLines {
    /// Starts reading `source` on a thread of its own.
    pub fn spawn(source: impl BufRead + Send + 'static) -> std::io::Result<CommandLines> {
        let (sender, receiver) = sync_channel(QUEUED_LINES);
        std::thread::Builder::new()
            .name("control-stdin".into())
            .spawn(move || read_lines(source, &sender))?;
        Ok(CommandLines {
            lines: Arc::new(Mutex::new(receiver)),
        })
    }

    /// Reads the process's stdin.
    pub fn stdin() -> std::io::Result<CommandLines> {
        CommandLines::spawn(std::io::BufReader::new(std::io::stdin()))
    }

    /// The next line, waiting at most `wait` (forever when `None`).
    pub fn next(&self, wait: Option<Duration>) -> Next {
        let lines = self.lines.lock_or_recover();
        match wait {
            None => lines.recv().map_or(Next::Closed, Next::Line),
            Some(wait) => match lines.recv_timeout(wait) {
                Ok(line) => Next::Line(line),
                Err(RecvTimeoutError::Timeout) => Next::TimedOut,
                Err(RecvTimeoutError::Disconnected) => Next::Closed,
            },
        }
    }
}

/// The reader thread: every line of `source` until EOF, a read error or no one listening.
fn read_lines<R: BufRead>(mut source: R, sender: &SyncSender<Line>) {
    let cap = line_cap();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = std::io::Read::take(source.by_ref(), cap + 1).read_until(b'\n', &mut buffer);
        let line = match read {
            Ok(0) | Err(_) => return,
            Ok(_) if buffer.len() as u64 > cap && buffer.last() != Some(&b'\n') => {
                if !skip_line(&mut source) {
                    let _ = sender.send(Line::TooLong);
                    return;
                }
                Line::TooLong
            }
            Ok(_) => {
                if buffer.last() == Some(&b'\n') {
                    buffer.pop();
                }
                match String::from_utf8(std::mem::take(&mut buffer)) {
                    Ok(text) => Line::Text(text),
                    Err(_) => Line::NotUtf8,
                }
            }
        };
        if sender.send(line).is_err() {
            return;
        }
    }
}

/// Reads to the end of the current line without keeping it; false at EOF or an error.
fn skip_line(source: &mut impl BufRead) -> bool {
    loop {
        let (done, used) = match source.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(bytes) => match memchr::memchr(b'\n', bytes) {
                Some(at) => (true, at + 1),
                None => (false, bytes.len()),
            },
        };
        source.consume(used);
        if done {
            return true;
        }
    }
}

#[cfg(test)]
mod tests;
