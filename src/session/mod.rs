//! Sessions on disk, in Pi's session file format (version 3), so a run can be resumed after a
//! crash or continued by the next phase, and Pi itself can open it.
//!
//! The file is JSON Lines: a `session` header, then one `message` entry per complete message,
//! each with an 8-hex-digit `id` and the `parentId` of the entry before it. Entries are only
//! appended, each with one `write`: a `kill -9` at any moment leaves a file whose complete
//! lines are valid. The file is synced at every turn end, on a thread of its own so that the
//! next model request is not kept waiting; the run waits for that sync before the next turn
//! runs a tool that may change anything (a turn's side effects never precede the durable
//! record of the turn before; read-only calls need not wait) and before it exits. Reading leaves out a last line cut
//! short (the run says so with `input_truncated`), and resuming removes it from the file before
//! appending, so the next entry starts on a line of its own. A resumed session appends to its
//! own file, continuing the chain.
//!
//! Files live in `--session-dir`, by default `$XDG_STATE_HOME/worker/sessions/<cwd-slug>/`
//! (`~/.local/state/…`), named `<timestamp>_<session id>.jsonl`. A new file's header is
//! written under a hidden staging name first (`.session-<pid>-<random>.tmp`); a run killed
//! in that moment leaves the staging file behind, and the next lookup of the directory
//! (`--continue`, `--resume ID`) removes it once its writer is gone and it is
//! [`STAGING_ABANDONED_AFTER`] old. New runs do not list the directory, which grows by a file
//! a run: looking costs them nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::events::{Message, TextContent, ToolResultMessage, now_millis, now_rfc3339};
use sync::{SYNC_LIMIT, Syncer};

mod read;
mod sync;

pub use read::{LoadError, Loaded, load};

/// The session format generation written (Pi's).
pub const FORMAT_VERSION: u32 = 3;

/// The default directory for sessions of `cwd`.
pub fn default_dir(state_home: Option<&Path>, home: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    let base = match state_home {
        Some(state) => state.to_path_buf(),
        None => home?.join(".local/state"),
    };
    Some(base.join("worker/sessions").join(slug(cwd)))
}

/// `/home/me/repo` → `--home-me-repo--`, as Pi names its session folders.
fn slug(cwd: &Path) -> String {
    let text = cwd.display().to_string();
    let body: String = text
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c == ':' {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// The most recently written session of `cwd` in a directory. A directory given by
/// `--session-dir` may hold the sessions of many working directories; as in Pi, `--continue`
/// takes the newest whose header names this one, never another project's conversation.
pub fn most_recent(dir: &Path, cwd: &Path) -> Option<PathBuf> {
    entries(dir)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| header_cwd(p).is_some_and(|of| Path::new(&of) == cwd))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
}

/// The most of a session file read to find its header (Pi reads 512 bytes; a long `cwd`
/// or `parentSession` needs more).
const HEADER_MAX_BYTES: u64 = 8 * 1024;

/// The `cwd` a session file's header names, if its first line is a session header.
fn header_cwd(path: &Path) -> Option<String> {
    let (bytes, _) = crate::input_file::read_prefix(path, HEADER_MAX_BYTES).ok()?;
    let first = bytes.split(|b| *b == b'\n').next()?;
    let header: serde_json::Value = serde_json::from_slice(first).ok()?;
    if header["type"] != "session" || !header["id"].is_string() {
        return None;
    }
    header["cwd"]
        .as_str()
        .filter(|cwd| !cwd.is_empty())
        .map(str::to_string)
}

/// The file of session `id` in `dir`, if there is one.
pub fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("_{id}.jsonl");
    entries(dir)?.into_iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(&suffix))
    })
}

/// How old an abandoned header staging file must be before a lookup removes it. A live
/// writer's stays for one sync of a few bytes; this much longer covers a writer in another
/// PID namespace sharing the directory (whose PID means nothing here) on a slow disk.
pub const STAGING_ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// The staging name's start: `.session-<pid>-`, so a lookup can tell whether its writer lives.
const STAGING_PREFIX: &str = ".session-";
const STAGING_SUFFIX: &str = ".tmp";

/// The entries of a session directory, less the staging files of writers that are gone.
fn entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let listed = std::fs::read_dir(dir).ok()?;
    Some(
        listed
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|path| !remove_if_abandoned(path))
            .collect(),
    )
}

/// Removes `path` when it is a header staging file whose writer is gone (no such process, or
/// a name from before staging names carried one) and that is [`STAGING_ABANDONED_AFTER`]
/// old. Whether it was removed.
fn remove_if_abandoned(path: &Path) -> bool {
    let Some(rest) = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_prefix(STAGING_PREFIX))
        .filter(|rest| rest.ends_with(STAGING_SUFFIX))
    else {
        return false;
    };
    let writer = rest
        .split_once('-')
        .and_then(|(pid, _)| pid.parse::<i32>().ok())
        .filter(|pid| *pid > 0);
    let writer_lives = writer.is_some_and(|pid| {
        // EPERM: alive, someone else's.
        !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
    });
    let old = std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age >= STAGING_ABANDONED_AFTER);
    !writer_lives && old && std::fs::remove_file(path).is_ok()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Header<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    version: u32,
    id: &'a str,
    timestamp: String,
    cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_session: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    parent_id: Option<String>,
    timestamp: String,
    message: &'a Message,
}

/// Appends a run's messages to its session file.
pub struct SessionWriter {
    file: File,
    path: PathBuf,
    /// The thread that syncs the file (and first, for a new file, makes it appear under its
    /// own name).
    syncer: Syncer,
    /// The id of the last entry written: the next one's parent.
    leaf: Option<String>,
    /// Ids already in the file, so a new one never repeats: ids are 8 hex digits, kept as
    /// the number they spell (an id of another form cannot be one this writer makes).
    used: std::collections::HashSet<u32>,
    secrets: crate::secrets::Secrets,
}

impl SessionWriter {
    /// A new session file in `dir`.
    pub fn create(
        dir: &Path,
        id: &str,
        cwd: &Path,
        parent: Option<&str>,
        secrets: crate::secrets::Secrets,
    ) -> std::io::Result<SessionWriter> {
        std::fs::create_dir_all(dir)?;
        let stamp = now_rfc3339().replace([':', '.'], "-");
        let path = dir.join(format!("{stamp}_{id}.jsonl"));
        let header = Header {
            kind: "session",
            version: FORMAT_VERSION,
            id,
            timestamp: now_rfc3339(),
            cwd: cwd.display().to_string(),
            parent_session: parent,
        };
        let mut line = serde_json::to_vec(&header)?;
        line.push(b'\n');
        // The header is written and synced under a temporary name, and the file appears under
        // its own name only then: a run killed at any moment leaves no session without a
        // header (which no reader could resume). Both happen on a thread while the run goes
        // on; entries appended meanwhile go to the same file.
        let mut staged = tempfile::Builder::new()
            .prefix(&format!("{STAGING_PREFIX}{}-", std::process::id()))
            .suffix(STAGING_SUFFIX)
            .tempfile_in(dir)?;
        staged.write_all(&line)?;
        let (file, staged_path) = staged.keep().map_err(|err| err.error)?;
        let named = path.clone();
        let syncer = Syncer::start(
            file.try_clone()?,
            Some(Box::new(move |file: &File| {
                file.sync_data()?;
                std::fs::hard_link(&staged_path, &named)?;
                std::fs::remove_file(&staged_path)
            })),
            File::sync_data,
            SYNC_LIMIT,
        )?;
        Ok(SessionWriter {
            file,
            path,
            syncer,
            leaf: None,
            used: std::collections::HashSet::default(),
            secrets,
        })
    }

    /// Continues a loaded session in its own file, without the last line a crash cut.
    pub fn append_to(
        loaded: &Loaded,
        secrets: crate::secrets::Secrets,
    ) -> std::io::Result<SessionWriter> {
        let file = OpenOptions::new().append(true).open(&loaded.path)?;
        if let Some(torn) = &loaded.torn {
            // Only the file that was read: cutting one that grew since would lose entries.
            if file.metadata()?.len() != loaded.size {
                return Err(std::io::Error::other(
                    "the file changed while it was being resumed",
                ));
            }
            file.set_len(torn.kept_bytes)?;
        }
        Ok(SessionWriter {
            syncer: Syncer::start(file.try_clone()?, None, File::sync_data, SYNC_LIMIT)?,
            file,
            path: loaded.path.clone(),
            leaf: loaded.leaf.clone(),
            used: loaded
                .entry_ids
                .iter()
                .filter_map(|id| id_number(id))
                .collect(),
            secrets,
        })
    }

    /// The session file being appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one complete message (one `write` of one whole line).
    pub fn append(&mut self, message: &Message) -> std::io::Result<()> {
        let id = self.fresh_id();
        let entry = Entry {
            kind: "message",
            id: id.clone(),
            parent_id: self.leaf.clone(),
            timestamp: now_rfc3339(),
            message,
        };
        let line = serde_json::to_vec(&entry)?;
        self.write_line(id, line)
    }

    /// Records a compaction: the summary stands for everything before it (Pi's compaction
    /// entry; the kept messages are appended again after it).
    pub fn append_compaction(&mut self, summary: &str, tokens_before: u64) -> std::io::Result<()> {
        let id = self.fresh_id();
        let entry = serde_json::json!({
            "type": "compaction",
            "id": id,
            "parentId": self.leaf,
            "timestamp": now_rfc3339(),
            "summary": summary,
            "firstKeptEntryId": id,
            "tokensBefore": tokens_before,
        });
        self.write_entry(id, entry)
    }

    /// Records a note of the run's control (a controller's answer, an approval, a hook's
    /// decision) as Pi's custom entry, `customType` `worker.<kind>`: kept beside the
    /// conversation, never part of what the model is sent on resume.
    pub fn append_note(
        &mut self,
        kind: &str,
        at_unix_ms: u64,
        data: &serde_json::Value,
    ) -> std::io::Result<()> {
        let id = self.fresh_id();
        let entry = serde_json::json!({
            "type": "custom",
            "id": id,
            "parentId": self.leaf,
            "timestamp": now_rfc3339(),
            "customType": format!("worker.{kind}"),
            "data": {"atUnixMs": at_unix_ms, "record": data},
        });
        self.write_entry(id, entry)
    }

    fn write_entry(&mut self, id: String, entry: serde_json::Value) -> std::io::Result<()> {
        let line = serde_json::to_vec(&entry)?;
        self.write_line(id, line)
    }

    /// Writes entry `id`, serialized as `line`, redacted as one line (one `write`; a secret is
    /// also found in its JSON-escaped form), and makes it the leaf the next entry hangs from.
    /// Serialized straight to text, a message costs no JSON value tree on its way out.
    fn write_line(&mut self, id: String, mut line: Vec<u8>) -> std::io::Result<()> {
        if let std::borrow::Cow::Owned(clean) = self.secrets.redact_bytes(&line) {
            line = clean;
        }
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.leaf = Some(id);
        Ok(())
    }

    /// Starts making what was written durable (at each turn end), on the writer's thread;
    /// [`SessionWriter::synced`] waits for it.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.syncer.request()
    }

    /// Waits for every sync asked for: what was written before the last one is durable. The
    /// first error of any of them is returned (once).
    pub fn synced(&mut self) -> std::io::Result<()> {
        self.syncer.wait()
    }

    fn fresh_id(&mut self) -> String {
        loop {
            // The first 32 bits, whose hex digits the id used to be cut from.
            let (number, ..) = uuid::Uuid::new_v4().as_fields();
            if self.used.insert(number) {
                return format!("{number:08x}");
            }
        }
    }
}

/// The number an entry id of 8 hex digits spells.
fn id_number(id: &str) -> Option<u32> {
    (id.len() == 8)
        .then(|| u32::from_str_radix(id, 16).ok())
        .flatten()
}

impl Drop for SessionWriter {
    /// A new file appears under its name, and the last sync ends, before the writer is gone.
    fn drop(&mut self) {
        let _ = self.synced();
    }
}

/// The result a tool call gets when its session was cut before the call finished: the call
/// is not run again (it may have had side effects), and the model is told so.
pub fn interrupted_result(call_id: &str, tool_name: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: call_id.into(),
        tool_name: tool_name.to_string(),
        content: vec![TextContent::text(
            "This call was interrupted when the previous run ended, and was not run again: it may or may not have taken effect. Check before repeating it.",
        )],
        details: Some(serde_json::json!({"interrupted": true})),
        is_error: true,
        timestamp: now_millis(),
    })
}

#[cfg(test)]
mod tests;
