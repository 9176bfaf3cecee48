//! The system prompt: who the agent is, its tools, guidelines, the project's own instructions
//! (`AGENTS.md` / `CLAUDE.md` from the filesystem root down to the cwd), date and cwd.

use std::path::{Path, PathBuf};

use crate::config::PromptConfig;
use crate::events::{InputTruncated, TruncatedInput, TruncationReason};
use crate::input_file::{InputFile, InputFileError, InputKind, human_bytes};
use crate::tools::ToolSet;

/// Names tried in each directory; the first that is there is used.
const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];
/// All context files together are cut to this (each is cut to [`InputKind::ContextFile`]'s
/// cap first), so that two dozen nested ones cannot crowd out the task either.
pub(super) const CONTEXT_FILES_TOTAL_MAX_BYTES: u64 = 64 * 1024;

const PREAMBLE: &str = "You are worker, an autonomous coding agent. You run headless: a \
program gave you this task and will read your final answer. Nobody can answer questions while \
you work, so make reasonable assumptions, carry the task through, and finish with a short \
summary of what you did and anything left undone.";

/// The system prompt; `sections` (from extensions: the skills on offer, ...) come after the
/// project's instructions. The context files read for it come back too, for what was cut.
pub(super) fn build(
    config: &PromptConfig,
    tools: &ToolSet,
    cwd: &Path,
    today: &str,
    sections: &[String],
) -> (String, ContextFiles) {
    let mut prompt = match &config.system {
        Some(custom) => custom.trim_end().to_string(),
        None => default_preamble(tools),
    };
    if let Some(append) = config.append.as_deref().filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(append.trim_end());
    }
    let context = if config.context_files {
        context_files(cwd)
    } else {
        ContextFiles::default()
    };
    if !context.files.is_empty() {
        prompt.push_str("\n\nProject-specific instructions and guidelines:\n");
        for (path, content) in &context.files {
            prompt.push_str(&format!(
                "\n<project_instructions path=\"{}\">\n{}\n</project_instructions>\n",
                path.display(),
                content.trim_end()
            ));
        }
    }
    for section in sections {
        prompt.push_str("\n\n");
        prompt.push_str(section.trim_end());
    }
    prompt.push_str(&format!(
        "\n\nCurrent date: {today}\nCurrent working directory: {}",
        cwd.display()
    ));
    (prompt, context)
}

fn default_preamble(tools: &ToolSet) -> String {
    let mut text = String::from(PREAMBLE);
    if tools.is_empty() {
        text.push_str("\n\nYou have no tools in this run: answer from the prompt alone.");
        return text;
    }
    text.push_str("\n\nAvailable tools:");
    for tool in tools.iter() {
        text.push_str(&format!("\n- {}: {}", tool.name(), tool.prompt_snippet()));
    }
    let has = |name: &str| tools.get(name).is_some();
    let mut guidelines = Vec::new();
    if has("bash") && !(has("grep") || has("find") || has("ls")) {
        guidelines.push("Use bash for file operations like ls, rg and find.");
    }
    if has("read") && (has("edit") || has("write")) {
        guidelines.push("Read a file before changing it; use edit for targeted changes and write for new files or complete rewrites.");
    }
    if has("bash") {
        guidelines.push("Commands run without a terminal or stdin: use non-interactive flags, and pass a timeout for anything long-running.");
    }
    guidelines.push("Be concise in your responses.");
    guidelines.push("Show file paths clearly when working with files.");
    text.push_str("\n\nGuidelines:");
    for line in guidelines {
        text.push_str("\n- ");
        text.push_str(line);
    }
    text
}

/// The project's instructions: one file per directory, and what was cut from them.
#[derive(Debug, Default)]
pub struct ContextFiles {
    /// From the root down to `cwd`, so the nearest comes last and wins where instructions
    /// conflict.
    pub files: Vec<(PathBuf, String)>,
    /// What the caps left out, one line per cut file.
    pub cuts: Vec<InputTruncated>,
    /// Context files that are not regular files (a FIFO, a device) or cannot be read,
    /// skipped: one warning each.
    pub skipped: Vec<String>,
}

/// Reads the context files of `cwd` and its parents. Each is read no further than
/// [`InputKind::ContextFile`]'s cap, and all of them together no further than
/// [`CONTEXT_FILES_TOTAL_MAX_BYTES`]: the nearest directories are read first, so it is the
/// farthest instructions that the total cap cuts.
pub fn context_files(cwd: &Path) -> ContextFiles {
    let per_file = InputKind::ContextFile.max_bytes();
    let mut left = CONTEXT_FILES_TOTAL_MAX_BYTES;
    let mut found = ContextFiles::default();
    for dir in cwd.ancestors() {
        let Some((path, file)) = open_context_file(dir, &mut found.skipped) else {
            continue;
        };
        let max = per_file.min(left);
        let (bytes, size) = match file.read_prefix(max) {
            Ok(read) => read,
            Err(err) => {
                let shown = path.display();
                found
                    .skipped
                    .push(format!("context file {shown}: {err}; skipped"));
                continue;
            }
        };
        let (mut text, kept) = kept_text(&bytes, size > bytes.len() as u64);
        left -= kept.min(left);
        if size > kept {
            let reason = if max == per_file {
                TruncationReason::FileCap
            } else {
                TruncationReason::TotalCap
            };
            let cut = context_cut(&path, reason, kept, size);
            text.push_str(&format!(
                "\n[... cut at {kept} of {size} bytes; read the file for the rest]"
            ));
            found.cuts.push(cut);
        }
        found.files.push((path, text));
    }
    found.files.reverse();
    found.cuts.reverse();
    found
}

/// The first of [`CONTEXT_FILE_NAMES`] in `dir` that is a regular file.
fn open_context_file(dir: &Path, skipped: &mut Vec<String>) -> Option<(PathBuf, InputFile)> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        match InputFile::open(&path) {
            Ok(file) => return Some((path, file)),
            Err(InputFileError::NotFound) => {}
            // Only a regular file: a FIFO or device named AGENTS.md must not hang the start.
            Err(err) => skipped.push(format!("context file {}: {err}; skipped", path.display())),
        }
    }
    None
}

/// The text of a context file's first bytes, and how many of them it holds: when the file
/// was cut, not the character the cut split.
fn kept_text(bytes: &[u8], cut: bool) -> (String, u64) {
    let whole = match std::str::from_utf8(bytes) {
        Err(err) if cut && err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    };
    (
        String::from_utf8_lossy(whole).into_owned(),
        whole.len() as u64,
    )
}

fn context_cut(path: &Path, reason: TruncationReason, kept: u64, size: u64) -> InputTruncated {
    let (cap, why) = match reason {
        TruncationReason::TotalCap => (
            CONTEXT_FILES_TOTAL_MAX_BYTES,
            "the context files reached their total cap",
        ),
        _ => (
            InputKind::ContextFile.max_bytes(),
            "over the cap for one context file",
        ),
    };
    InputTruncated {
        input: TruncatedInput::ContextFile,
        path: path.display().to_string(),
        reason,
        kept_bytes: kept,
        dropped_bytes: size - kept,
        cap_bytes: Some(cap),
        message: format!(
            "context file {}: {kept} of {size} bytes kept, {} cut: {why} ({})",
            path.display(),
            size - kept,
            human_bytes(cap)
        ),
    }
}

#[cfg(test)]
mod tests;
