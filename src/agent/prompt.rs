//! The system prompt: who the agent is, its tools, guidelines, the project's own instructions
//! (`AGENTS.md` / `CLAUDE.md` from the filesystem root down to the cwd), date and cwd.

use std::path::{Path, PathBuf};

use crate::config::PromptConfig;
use crate::tools::ToolSet;
use crate::tools::files::read_regular;

/// Names tried in each directory; the first that exists is used.
const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];
/// A context file larger than this is cut (with a note) so it cannot crowd out the task.
const CONTEXT_FILE_MAX_BYTES: usize = 64 * 1024;

const PREAMBLE: &str = "You are worker, an autonomous coding agent. You run headless: a \
program gave you this task and will read your final answer. Nobody can answer questions while \
you work, so make reasonable assumptions, carry the task through, and finish with a short \
summary of what you did and anything left undone.";

/// The system prompt; `sections` (from extensions: the skills on offer, ...) come after the
/// project's instructions.
pub fn build(
    config: &PromptConfig,
    tools: &ToolSet,
    cwd: &Path,
    today: &str,
    sections: &[String],
) -> String {
    let mut prompt = match &config.system {
        Some(custom) => custom.trim_end().to_string(),
        None => default_preamble(tools),
    };
    if let Some(append) = config.append.as_deref().filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(append.trim_end());
    }
    if config.context_files {
        let files = context_files(cwd);
        if !files.is_empty() {
            prompt.push_str("\n\nProject-specific instructions and guidelines:\n");
            for (path, content) in files {
                prompt.push_str(&format!(
                    "\n<project_instructions path=\"{}\">\n{}\n</project_instructions>\n",
                    path.display(),
                    content.trim_end()
                ));
            }
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
    prompt
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

/// One file per directory, from the root down to `cwd` (so the nearest comes last and wins
/// where instructions conflict).
pub fn context_files(cwd: &Path) -> Vec<(PathBuf, String)> {
    let dirs: Vec<&Path> = cwd.ancestors().collect();
    let mut found = Vec::new();
    for dir in dirs.into_iter().rev() {
        for name in CONTEXT_FILE_NAMES {
            let path = dir.join(name);
            // Only a regular file: a FIFO or device named AGENTS.md must not hang the start.
            let Ok(bytes) = read_regular(&path, "", "") else {
                continue;
            };
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if text.len() > CONTEXT_FILE_MAX_BYTES {
                let cut = crate::text::floor_char_boundary(&text, CONTEXT_FILE_MAX_BYTES);
                text.truncate(cut);
                text.push_str(&format!(
                    "\n[... cut at {} of {} bytes; read the file for the rest]",
                    cut,
                    bytes.len()
                ));
            }
            found.push((path, text));
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests;
