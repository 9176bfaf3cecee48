//! Reading the files worker's inputs name, safely: only regular files, opened without ever
//! blocking, and never more than a cap for their kind.
//!
//! A path given on the command line, in the environment or found in a repository can name
//! anything: a FIFO (opening one for reading waits for a writer, forever, in the kernel, where
//! neither the run's budget nor a signal reaches the thread), a device (`/dev/zero` never
//! ends, and memory grows as fast as it is copied), a directory, a socket, or a regular file
//! of any size. So every such file is opened with `O_NONBLOCK` (a FIFO's open returns at
//! once), checked with `fstat` on what was opened (nothing can be swapped in between the
//! check and the read), refused unless it is a regular file, and read through a limit one
//! byte past its cap, so that a file that grows, or says it is empty (as procfs files do), is
//! still read no further. Refusing takes a few system calls: milliseconds, whatever the path.
//!
//! Every kind of input has one cap, [`InputKind::max_bytes`]. An input over its cap is
//! refused, naming the cap, except the project's context files (`AGENTS.md`): they are
//! instructions rather than configuration, so their first bytes are kept ([`read_prefix`])
//! and the run says what was cut. The file tools use the same opener
//! ([`crate::tools::files`]).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// What an input file is for; each kind has its own cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// `--system-prompt @FILE`, `--append-system-prompt @FILE`.
    SystemPrompt,
    /// `--output-schema`.
    OutputSchema,
    /// `--prices-file`.
    Prices,
    /// `--auth-file`, or Pi's own `auth.json`.
    AuthFile,
    /// Pi's `settings.json`.
    Settings,
    /// A `--profiles-dir` profile.
    Profile,
    /// The GitHub App's private key (`GITHUB_APP_PRIVATE_KEY_PATH`).
    AppKey,
    /// A skill's `SKILL.md`.
    Skill,
    /// An agent definition (`.pi/agents/*.md`, `.claude/agents/*.md`).
    AgentDefinition,
    /// A replay fixture (`--model replay/FILE`): every recorded request and response.
    ReplayFixture,
    /// A session file to resume.
    Session,
    /// A trace to convert (`worker trace perfetto`).
    Trace,
    /// One `AGENTS.md` / `CLAUDE.md`: cut to this, not refused.
    ContextFile,
    /// The prompt on stdin: not a file, but just as endless when it is `< /dev/zero`.
    Prompt,
}

impl InputKind {
    /// The most bytes read from one file of this kind.
    pub const fn max_bytes(self) -> u64 {
        match self {
            InputKind::SystemPrompt
            | InputKind::OutputSchema
            | InputKind::Prices
            | InputKind::Settings => MIB,
            InputKind::AuthFile | InputKind::Profile | InputKind::AppKey => 64 * KIB,
            InputKind::Skill | InputKind::AgentDefinition => 256 * KIB,
            InputKind::Prompt => 16 * MIB,
            InputKind::ReplayFixture | InputKind::Session => 256 * MIB,
            InputKind::Trace => 1024 * MIB,
            // Codex caps its project docs at 32 KiB too.
            InputKind::ContextFile => 32 * KIB,
        }
    }
}

/// `1 MiB`, `256 KiB`, `12345 bytes`: a size for messages, exact.
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Irregular {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Any other kind of file that is not regular.
    Other,
}

impl Irregular {
    /// The kind of file `meta` describes; meant for one that is not regular (a regular file
    /// would be `Other`).
    pub fn of(meta: &Metadata) -> Irregular {
        let kind = meta.file_type();
        if kind.is_dir() {
            Irregular::Directory
        } else if kind.is_fifo() {
            Irregular::Fifo
        } else if kind.is_socket() {
            Irregular::Socket
        } else if kind.is_char_device() {
            Irregular::CharDevice
        } else if kind.is_block_device() {
            Irregular::BlockDevice
        } else {
            Irregular::Other
        }
    }

    /// "a FIFO", for messages.
    pub fn described(self) -> &'static str {
        match self {
            Irregular::Directory => "a directory",
            Irregular::Fifo => "a FIFO",
            Irregular::Socket => "a socket",
            Irregular::CharDevice => "a character device",
            Irregular::BlockDevice => "a block device",
            Irregular::Other => "a special file",
        }
    }
}

/// Opens `path` for reading if it is a regular file (symlinks followed). `Ok(Err(kind))` says
/// what it is instead.
pub fn open_regular(path: &Path) -> io::Result<Result<(File, Metadata), Irregular>> {
    let opened = File::options()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path);
    let file = match opened {
        Ok(file) => file,
        // Nothing there (the common case, e.g. looking for context files up the tree): no
        // second look.
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(err),
        // A socket cannot be opened at all (ENXIO): say what it is rather than the errno.
        Err(err) => {
            return match std::fs::metadata(path) {
                Ok(meta) if !meta.is_file() => Ok(Err(Irregular::of(&meta))),
                _ => Err(err),
            };
        }
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Err(Irregular::of(&meta)));
    }
    // A regular file ignores O_NONBLOCK; reads behave as usual.
    Ok(Ok((file, meta)))
}

/// Why an input file was not read. Shown after the flag and the path:
/// `--system-prompt @/tmp/f: a FIFO, not a regular file`.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    /// The path does not exist.
    #[error("No such file or directory")]
    NotFound,
    /// Reading the path is not allowed.
    #[error("Permission denied")]
    PermissionDenied,
    /// Any other I/O error opening or reading the file.
    #[error("{0}")]
    Io(io::Error),
    /// The path is not a regular file; says what it is.
    #[error("{}, not a regular file", .0.described())]
    NotRegular(Irregular),
    /// The file holds more than its kind's cap allows.
    #[error("larger than the {} cap{}", human_bytes(*.cap), size_note(*.size))]
    TooLarge {
        /// The cap in bytes ([`InputKind::max_bytes`]).
        cap: u64,
        /// The file's size, when it says.
        size: Option<u64>,
    },
    /// The file is not UTF-8; carries the byte offset of the first invalid byte.
    #[error("not UTF-8 text (invalid byte at offset {0})")]
    NotText(usize),
}

/// ` (3221225472 bytes)`, when the size is known.
fn size_note(size: Option<u64>) -> String {
    size.map(|size| format!(" ({size} bytes)"))
        .unwrap_or_default()
}

impl From<io::Error> for InputFileError {
    fn from(err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::NotFound => InputFileError::NotFound,
            io::ErrorKind::PermissionDenied => InputFileError::PermissionDenied,
            _ => InputFileError::Io(err),
        }
    }
}

/// A regular file, open for reading.
#[derive(Debug)]
pub struct InputFile {
    file: File,
    meta: Metadata,
}

impl InputFile {
    /// Opens `path` if it is a regular file; anything else is refused at once.
    pub fn open(path: &Path) -> Result<InputFile, InputFileError> {
        match open_regular(path)? {
            Ok((file, meta)) => Ok(InputFile { file, meta }),
            Err(kind) => Err(InputFileError::NotRegular(kind)),
        }
    }

    /// The opened file's metadata (its mode, for a file of secrets).
    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// The open file itself, for a reader that reads it in its own way (and checks its
    /// kind's cap itself).
    pub fn into_file(self) -> File {
        self.file
    }

    /// All of it; more than `kind`'s cap is refused.
    pub fn read(self, kind: InputKind) -> Result<Vec<u8>, InputFileError> {
        let cap = kind.max_bytes();
        let size = self.meta.len();
        if size > cap {
            return Err(InputFileError::TooLarge {
                cap,
                size: Some(size),
            });
        }
        let (bytes, _) = self.read_prefix(cap + 1)?;
        if bytes.len() as u64 > cap {
            return Err(InputFileError::TooLarge { cap, size: None });
        }
        Ok(bytes)
    }

    /// All of it, as UTF-8 text; more than `kind`'s cap is refused.
    pub fn read_text(self, kind: InputKind) -> Result<String, InputFileError> {
        let bytes = self.read(kind)?;
        String::from_utf8(bytes)
            .map_err(|err| InputFileError::NotText(err.utf8_error().valid_up_to()))
    }

    /// At most `max` bytes from the start, and the file's size (at least what was read).
    pub fn read_prefix(self, max: u64) -> Result<(Vec<u8>, u64), InputFileError> {
        let size = self.meta.len();
        let expected = usize::try_from(size.min(max)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(expected);
        self.file.take(max).read_to_end(&mut bytes)?;
        let size = size.max(bytes.len() as u64);
        Ok((bytes, size))
    }
}

/// The text of the input file at `path`, under `kind`'s cap.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputFileError> {
    InputFile::open(path)?.read_text(kind)
}

/// The bytes of the input file at `path`, under `kind`'s cap.
pub fn read_bytes(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputFileError> {
    InputFile::open(path)?.read(kind)
}

/// At most `max` bytes from the start of the file at `path`, and its size.
pub fn read_prefix(path: &Path, max: u64) -> Result<(Vec<u8>, u64), InputFileError> {
    InputFile::open(path)?.read_prefix(max)
}

#[cfg(test)]
mod tests;
