//! The prompt: all of stdin, and an optional argument placed before it.
//!
//! stdin must be UTF-8 (a BOM is dropped; UTF-16 with a BOM is decoded). When a prompt
//! argument is given, stdin is read only if it has data or is at EOF within a short wait: an
//! open pipe that nobody writes to must not hang the run. Without an argument, stdin is read
//! to EOF, within the run's `--timeout` when there is one, and no further than its cap
//! ([`InputKind::Prompt`]): `< /dev/zero` is refused, not read until memory runs out.

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::input_file::{InputKind, human_bytes};

/// How long stdin may stay silent when a prompt argument is given.
const STDIN_WAIT_WITH_ARGUMENT: Duration = Duration::from_secs(2);

/// Why there is no prompt.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// Empty, undecodable or unreadable input: a usage error.
    #[error(transparent)]
    Invalid(#[from] InvalidPrompt),
    /// stdin did not reach EOF within the budget.
    #[error("stdin did not close within --timeout ({}s); the prompt must be complete by then", .0.as_secs_f64())]
    TimedOut(Duration),
}

/// Why the input is not a prompt: a usage error.
#[derive(Debug, thiserror::Error)]
pub enum InvalidPrompt {
    /// Neither the argument nor stdin says anything.
    #[error(
        "empty prompt: pipe the prompt into stdin (echo '...' | worker run ...) or pass it as an argument"
    )]
    Empty,
    /// stdin starts with a UTF-16 byte order mark, and what follows is not UTF-16.
    #[error("stdin is not valid UTF-16")]
    Utf16,
    /// stdin is not UTF-8.
    #[error("stdin is not valid UTF-8 (invalid byte at offset {offset})")]
    Utf8 {
        /// Where the first invalid byte is, counting a byte order mark.
        offset: usize,
    },
    /// stdin holds more than a prompt may.
    #[error("stdin: larger than the {} cap for a prompt", human_bytes(*.cap))]
    TooLarge {
        /// The most a prompt may be, in bytes.
        cap: u64,
    },
    /// stdin could not be read.
    #[error("cannot read stdin: {0}")]
    Unreadable(#[source] std::io::Error),
    /// `--control stdin`: the first line is not a prompt command.
    #[error("--control stdin: {0}")]
    NotAPromptCommand(String),
}

/// The prompt of a `--control stdin` run: the argument, else the first command, which must be
/// `{"type":"prompt","message":…}`; `budget` (the run's `--timeout`) bounds the wait for it.
/// The lines after it are the run's commands.
pub fn read_prompt_command(
    argument: Option<&str>,
    lines: &crate::live::CommandLines,
    budget: Option<Duration>,
) -> Result<String, PromptError> {
    use crate::live::{Command, Next};
    if let Some(argument) = argument.filter(|text| !text.trim().is_empty()) {
        return Ok(argument.to_string());
    }
    let deadline = budget.map(|budget| Instant::now() + budget);
    let not_a_prompt = |why: String| PromptError::Invalid(InvalidPrompt::NotAPromptCommand(why));
    loop {
        let wait = deadline.map(|end| end.saturating_duration_since(Instant::now()));
        let line = match lines.next(wait) {
            Next::Line(line) => line,
            Next::Closed => {
                return Err(not_a_prompt(
                    "stdin ended before the first command, {\"type\":\"prompt\",\"message\":…}"
                        .to_string(),
                ));
            }
            Next::TimedOut => return Err(PromptError::TimedOut(budget.unwrap_or_default())),
        };
        if let Some(problem) = line.problem() {
            return Err(not_a_prompt(format!("the first command: {problem}")));
        }
        let crate::live::Line::Text(text) = line else {
            continue;
        };
        match Command::parse(&text) {
            None => {}
            Some(Ok(Command::Prompt { message, .. })) => return Ok(message),
            Some(Ok(other)) => {
                return Err(not_a_prompt(format!(
                    "the first command must be {{\"type\":\"prompt\",\"message\":…}}, not {:?}",
                    other.name()
                )));
            }
            Some(Err(not)) => {
                return Err(not_a_prompt(format!("the first command: {}", not.error)));
            }
        }
    }
}

/// Reads the prompt; `budget` (the run's `--timeout`) bounds the wait for stdin's EOF.
pub fn read_prompt(
    argument: Option<&str>,
    budget: Option<Duration>,
) -> Result<String, PromptError> {
    let stdin = std::io::stdin();
    // A terminal is never read; a pipe is skipped when an argument is given and it stays silent.
    let skip = stdin.is_terminal()
        || (argument.is_some() && !readable_within(&stdin, STDIN_WAIT_WITH_ARGUMENT));
    let piped = if skip {
        None
    } else {
        Some(read_to_end_within(&stdin, budget)?)
    };
    Ok(combine(argument, piped.as_deref())?)
}

/// All of stdin, up to its cap; with a budget, waits for data at most that long in total.
fn read_to_end_within(
    stdin: &std::io::Stdin,
    budget: Option<Duration>,
) -> Result<Vec<u8>, PromptError> {
    let cap = InputKind::Prompt.max_bytes();
    let over_cap = |bytes: &[u8]| {
        (bytes.len() as u64 > cap).then_some(PromptError::Invalid(InvalidPrompt::TooLarge { cap }))
    };
    let mut bytes = Vec::new();
    let unreadable = |err: std::io::Error| PromptError::Invalid(InvalidPrompt::Unreadable(err));
    let Some(budget) = budget else {
        stdin
            .lock()
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        return over_cap(&bytes).map_or(Ok(bytes), Err);
    };
    let deadline = Instant::now() + budget;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !readable_within(stdin, left) {
            return Err(PromptError::TimedOut(budget));
        }
        // Readable: a read returns what is there (or 0 at EOF) without blocking.
        match stdin.lock().read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if let Some(err) = over_cap(&bytes) {
                    return Err(err);
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(unreadable(err)),
        }
    }
}

fn readable_within(stdin: &std::io::Stdin, wait: Duration) -> bool {
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, timeout) {
        Ok(n) if n > 0 => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP)),
        _ => false,
    }
}

/// Joins the argument and stdin the way `codex exec` does:
/// `argument\n\n<stdin>\n...\n</stdin>`.
pub(super) fn combine(
    argument: Option<&str>,
    stdin: Option<&[u8]>,
) -> Result<String, InvalidPrompt> {
    let piped = stdin.map(decode).transpose()?;
    let piped = piped.filter(|text| !text.trim().is_empty());
    let argument = argument.filter(|text| !text.trim().is_empty());
    match (argument, piped) {
        (None, None) => Err(InvalidPrompt::Empty),
        (Some(argument), None) => Ok(argument.to_string()),
        (None, Some(piped)) => Ok(piped),
        (Some(argument), Some(piped)) => {
            let newline = if piped.ends_with('\n') { "" } else { "\n" };
            Ok(format!("{argument}\n\n<stdin>\n{piped}{newline}</stdin>"))
        }
    }
}

fn decode(bytes: &[u8]) -> Result<String, InvalidPrompt> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return utf8(rest, 3);
    }
    for (bom, little) in [(b"\xFF\xFE", true), (b"\xFE\xFF", false)] {
        if let Some(rest) = bytes.strip_prefix(bom) {
            let units: Vec<u16> = rest
                .chunks_exact(2)
                .map(|pair| {
                    if little {
                        u16::from_le_bytes([pair[0], pair[1]])
                    } else {
                        u16::from_be_bytes([pair[0], pair[1]])
                    }
                })
                .collect();
            return String::from_utf16(&units).map_err(|_| InvalidPrompt::Utf16);
        }
    }
    utf8(bytes, 0)
}

fn utf8(bytes: &[u8], offset: usize) -> Result<String, InvalidPrompt> {
    String::from_utf8(bytes.to_vec()).map_err(|err| InvalidPrompt::Utf8 {
        offset: offset + err.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests;
