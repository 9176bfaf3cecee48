//! Agent definitions: Markdown files with YAML front matter, the format of Claude Code's
//! `.claude/agents/*.md` and Pi's `.pi/agents/*.md`, so that a repository's existing agents
//! work as they are.
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs and missing tests
//! tools: Read, Grep, Glob
//! model: dynamo/some-model
//! thinking: low
//! max-turns: 8
//! ---
//! You are a careful reviewer. ...
//! ```
//!
//! The header is read by the skills' front matter parser ([`crate::skills::frontmatter`]),
//! which keeps top-level scalars and passes over lists. `tools` is the one field that may be a
//! list, so this module reads its lines itself when the parser has no value for it; and since
//! YAML lets a list's `- ` items start in the key's column, such lines are indented before the
//! parser sees them (they would otherwise read as a key without a `:`). A ` #` comment after a
//! plain value is dropped, as YAML does.
//!
//! Each directory is read in order and only its `*.md` files, not below: agents are flat in
//! both tools' layouts. The first definition of a name wins, so an `--agents-dir` overrides the
//! repository's. Nothing here aborts a run: a file that cannot be used is a
//! [`DefinitionProblem`] naming it and saying why, and the others are still read. Every file
//! goes through the capped, non-blocking reader ([`crate::input_file`]), so a FIFO or a device
//! named `x.md` is refused at once rather than waited on.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::input_file::{InputKind, read_text};
use crate::skills::frontmatter;

/// The longest name allowed, as Claude Code allows.
const MAX_NAME_CHARS: usize = 64;

/// The `thinking` levels a definition may ask for.
const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

/// Claude Code's tool names and the worker tool each stands for, by lowercased name.
const CLAUDE_TOOLS: &[(&str, &str)] = &[
    ("read", "read"),
    ("write", "write"),
    ("edit", "edit"),
    ("multiedit", "edit"),
    ("bash", "bash"),
    ("grep", "grep"),
    ("glob", "find"),
    ("ls", "ls"),
    ("webfetch", "web_fetch"),
    ("websearch", "web_search"),
];

/// One agent a `task` may run: who it is, what it may use, and its instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// The name a task gives to run it: lowercase letters, digits and hyphens.
    pub name: String,
    /// When to use it, for the model that delegates; trimmed, never empty.
    pub description: String,
    /// The tools it may use, as worker names; `None` when the file does not say (the parent's
    /// tools), empty when it says `tools:` with none.
    pub tools: Option<Vec<String>>,
    /// The model to run it on, when not the parent's.
    pub model: Option<String>,
    /// The thinking level, when not the parent's: off, minimal, low, medium, high or xhigh.
    pub thinking: Option<String>,
    /// The most turns it may take, when the file says.
    pub max_turns: Option<u32>,
    /// The JSON Schema its final answer must be valid against (`output-schema: FILE`, the
    /// file relative to the definition's); the task then returns that JSON.
    pub output_schema: Option<serde_json::Value>,
    /// The body after the front matter, trimmed: appended to the child's system prompt.
    pub instructions: String,
    /// The file it was read from.
    pub source: PathBuf,
}

/// A file or directory that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionProblem {
    /// The file (or the directory, when it could not be listed).
    pub path: PathBuf,
    /// Why it was not used.
    pub message: String,
}

impl fmt::Display for DefinitionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// The agent definitions of a run, and the files that could not be used.
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    /// Sorted by name; no two share a name.
    agents: Vec<AgentDefinition>,
    problems: Vec<DefinitionProblem>,
}

impl Definitions {
    /// Reads `dirs` in order (the first definition of a name wins; a later one of the same name
    /// is a problem). A missing directory is skipped; one that cannot be listed is a problem.
    pub fn read(dirs: &[PathBuf]) -> Definitions {
        let mut found = Definitions::default();
        for dir in dirs {
            found.read_dir(dir);
        }
        found.agents.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// The directories of a run: each `--agents-dir` (a relative one is under `cwd`), then
    /// `<cwd>/.pi/agents`, then `<cwd>/.claude/agents`.
    pub fn default_dirs(cwd: &Path, agents_dirs: &[PathBuf]) -> Vec<PathBuf> {
        agents_dirs
            .iter()
            .map(|dir| cwd.join(dir))
            .chain([cwd.join(".pi/agents"), cwd.join(".claude/agents")])
            .collect()
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|agent| agent.name == name)
    }

    /// Every definition read, sorted by name.
    pub fn all(&self) -> &[AgentDefinition] {
        &self.agents
    }

    /// The files (and directories) that could not be used, in the order they were met.
    pub fn problems(&self) -> &[DefinitionProblem] {
        &self.problems
    }

    fn problem(&mut self, path: &Path, message: String) {
        self.problems.push(DefinitionProblem {
            path: path.to_path_buf(),
            message,
        });
    }

    fn read_dir(&mut self, dir: &Path) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
            Err(err) => return self.problem(dir, format!("cannot list the directory: {err}")),
        };
        let mut files = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => files.push(entry.path()),
                Err(err) => self.problem(dir, format!("cannot list the directory: {err}")),
            }
        }
        // Directory order is the file system's; a name's winner must not depend on it.
        files.sort();
        for file in files {
            // Only a directory is passed over: anything else named `*.md` goes to the reader,
            // so a FIFO or a device is reported rather than skipped in silence.
            if file.extension().is_none_or(|ext| ext != "md") || file.is_dir() {
                continue;
            }
            match read_file(&file) {
                Ok(agent) => self.add(agent),
                Err(message) => self.problem(&file, message),
            }
        }
    }

    fn add(&mut self, agent: AgentDefinition) {
        if let Some(first) = self.get(&agent.name) {
            let message = format!(
                "another agent named '{}' was found first, in {}",
                agent.name,
                first.source.display()
            );
            return self.problem(&agent.source, message);
        }
        self.agents.push(agent);
    }
}

/// The definition in `file`, or why it cannot be used.
fn read_file(file: &Path) -> Result<AgentDefinition, String> {
    let text =
        read_text(file, InputKind::AgentDefinition).map_err(|err| format!("cannot read: {err}"))?;
    parse(&text, file)
}

/// The definition in `text`, read from `source`, or why it cannot be used.
fn parse(text: &str, source: &Path) -> Result<AgentDefinition, String> {
    let Some((header, body)) = split(text) else {
        // Not a header the parser can take either; it says which part is missing.
        let message = match frontmatter::parse(text) {
            Err(err) => err.to_string(),
            Ok(_) => "no front matter".to_string(),
        };
        return Err(format!("invalid front matter: {message}"));
    };
    let fields = Fields::parse(&header)?;
    let name = fields.get("name").ok_or("invalid front matter: no name")?;
    check_name(&name)?;
    let description = fields
        .get("description")
        .ok_or("invalid front matter: no description")?;
    let max_turns = match fields.get("max-turns").or_else(|| fields.get("max_turns")) {
        None => None,
        Some(value) => Some(
            value
                .parse::<u32>()
                .ok()
                .filter(|turns| *turns > 0)
                .ok_or_else(|| {
                    format!("max-turns must be a positive whole number, not '{value}'")
                })?,
        ),
    };
    let thinking = match fields.get("thinking") {
        None => None,
        Some(level) if THINKING_LEVELS.contains(&level.as_str()) => Some(level),
        Some(level) => {
            return Err(format!(
                "thinking must be one of {}, not '{level}'",
                THINKING_LEVELS.join(", ")
            ));
        }
    };
    let output_schema = fields
        .get("output-schema")
        .or_else(|| fields.get("output_schema"))
        .map(|file| read_schema(source, &file))
        .transpose()?;
    Ok(AgentDefinition {
        name,
        description,
        tools: fields.tools(),
        model: fields.get("model"),
        thinking,
        max_turns,
        output_schema,
        instructions: body.trim().to_string(),
        source: source.to_path_buf(),
    })
}

/// The schema `output-schema` names, relative to the definition's directory: read with the
/// output schema's cap, and compiled once here so a bad one is the definition's problem, not
/// a failed task later.
fn read_schema(source: &Path, file: &str) -> Result<serde_json::Value, String> {
    let path = source.parent().unwrap_or(Path::new(".")).join(file);
    let text = read_text(&path, InputKind::OutputSchema)
        .map_err(|err| format!("output-schema {file}: cannot read: {err}"))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("output-schema {file}: not JSON: {err}"))?;
    crate::output::OutputSchema::new(schema.clone())
        .map_err(|err| format!("output-schema {file}: {err}"))?;
    Ok(schema)
}

/// Claude Code's rule: lowercase letters, digits and hyphens, at most 64 of them.
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if !name.chars().all(allowed) {
        return Err(format!(
            "name '{name}' may hold only lowercase letters, digits and hyphens"
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "name '{name}' is longer than {MAX_NAME_CHARS} characters"
        ));
    }
    Ok(())
}

/// The front matter's lines (without the `---` lines) and the body after it, when `text`
/// opens with a `---` line and a `---` or `...` line closes it (the parser's rules).
fn split(text: &str) -> Option<(Vec<&str>, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let mut offset = first.len();
    let mut header = Vec::new();
    for line in lines {
        offset += line.len();
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if matches!(line.trim_end(), "---" | "...") {
            return Some((header, text.get(offset..).unwrap_or("")));
        }
        header.push(line);
    }
    None
}

/// A top-level line's key, when it is one (`key: value`, not indented).
fn top_level_key(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t']) || line.trim_start().starts_with(['#', '-']) {
        return None;
    }
    line.split_once(':').map(|(key, _)| key.trim())
}

/// The header's fields: the parser's values, with what the parser passes over.
struct Fields<'a> {
    parsed: HashMap<String, String>,
    header: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn parse(header: &[&'a str]) -> Result<Fields<'a>, String> {
        // YAML lets a list's items sit in the key's column; the parser wants them indented.
        let mut normalized = String::from("---\n");
        for line in header {
            if line.starts_with('-') {
                normalized.push_str("  ");
            }
            normalized.push_str(line);
            normalized.push('\n');
        }
        normalized.push_str("---\n");
        let parsed = frontmatter::parse(&normalized)
            .map_err(|err| format!("invalid front matter: {err}"))?;
        Ok(Fields {
            parsed,
            header: header.to_vec(),
        })
    }

    /// The value after `key:` on its top-level line.
    fn raw(&self, key: &str) -> Option<&'a str> {
        self.header.iter().find_map(|line| {
            (top_level_key(line) == Some(key))
                .then(|| line.split_once(':').map(|(_, value)| value.trim()))
                .flatten()
        })
    }

    /// `key`'s value, trimmed, with a plain value's ` #` comment dropped; `None` when absent
    /// or empty.
    fn get(&self, key: &str) -> Option<String> {
        let value = self.parsed.get(key)?;
        let plain = self
            .raw(key)
            .is_some_and(|raw| !raw.starts_with(['"', '\'', '|', '>']));
        let value = if plain { strip_comment(value) } else { value };
        Some(value.trim().to_string()).filter(|value| !value.is_empty())
    }

    /// `tools`: a comma-separated value, a flow list (`[Read, Grep]`) or a block list; `None`
    /// when the header has no `tools` key at all.
    fn tools(&self) -> Option<Vec<String>> {
        let names: Vec<String> = if self.parsed.contains_key("tools") {
            let value = self.get("tools").unwrap_or_default();
            let value = value
                .strip_prefix('[')
                .and_then(|v| v.strip_suffix(']'))
                .unwrap_or(&value);
            value.split([',', '\n']).map(unquote).collect()
        } else {
            // The parser passes over `tools:` with no value: a block list, or nothing at all.
            let start = self
                .header
                .iter()
                .position(|line| top_level_key(line) == Some("tools"))?;
            self.header[start + 1..]
                .iter()
                .take_while(|line| top_level_key(line).is_none())
                .filter_map(|line| line.trim().strip_prefix('-'))
                .map(|item| unquote(strip_comment(item)))
                .collect()
        };
        let mut tools: Vec<String> = Vec::new();
        for name in names.iter().filter(|name| !name.is_empty()) {
            let tool = worker_tool(name);
            // `Edit, MultiEdit` both mean `edit`; the list names each tool once.
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        Some(tools)
    }
}

/// The worker tool a definition's tool name stands for: Claude Code's names mapped, any other
/// lowercased (a later step keeps only the tools the parent has).
fn worker_tool(name: &str) -> String {
    let lower = name.to_lowercase();
    CLAUDE_TOOLS
        .iter()
        .find(|(claude, _)| *claude == lower)
        .map_or(lower, |(_, worker)| (*worker).to_string())
}

/// `value` up to a YAML comment: a `#` after a space or tab.
fn strip_comment(value: &str) -> &str {
    let cut = value
        .char_indices()
        .find(|&(i, c)| c == '#' && value[..i].ends_with([' ', '\t']))
        .map_or(value.len(), |(i, _)| i);
    &value[..cut]
}

/// A list item, trimmed and without its quotes.
fn unquote(item: &str) -> String {
    let item = item.trim();
    ['"', '\'']
        .iter()
        .find_map(|&quote| item.strip_prefix(quote)?.strip_suffix(quote))
        .unwrap_or(item)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests;
