//! Agent Skills (`SKILL.md` with YAML frontmatter), found where Pi and agentic-pi look and
//! offered to the model by progressive disclosure: the system prompt lists each skill's name,
//! description and file; the model `read`s the file when a task calls for it.
//!
//! Where skills come from, first found wins a name:
//! 1. `--skill PATH` (repeatable): a directory of skills, one skill's directory, or its file.
//!    A leading `~` is the home directory, a relative path is under `--cwd`. Loaded even with
//!    `--no-skills`; a missing path is a warning, not an abort.
//! 2. Unless `--no-skills`: `.pi/skills/` and `.agents/skills/` in `--cwd` and each parent up to
//!    the git root (nearest first), then `~/.pi/agent/skills/` and `~/.agents/skills/`.
//!
//! A skill whose frontmatter is missing or has no `description` is not offered; the
//! `skills_status` line lists it under `problems` with the reason.
//!
//! The line's `status` is agentic-pi's: `configured` when a `--skill` path was found,
//! else `disabled` with `--no-skills`, else `default`. A `default` run that found nothing
//! (no skill, no problem) prints no line at all, as agentic-pi does, so that the stream of a
//! run in a clean environment is the same with or without skills support.

use std::path::{Path, PathBuf};

use crate::events::{SkillEntry, SkillProblem, SkillsState, SkillsStatus};
use crate::extension::{Extension, StatusLine};
use crate::input_file::{InputKind, read_text};

/// Also read by agent definitions, which share the `SKILL.md` header format.
pub(crate) mod frontmatter;

/// A skills directory is searched this deep for `SKILL.md` files.
const MAX_DEPTH: usize = 4;

/// One skill found and offered (or listed only, when the model may not invoke it).
#[derive(Debug, Clone)]
pub struct Skill {
    /// The frontmatter's `name`, else the skill's directory name.
    pub name: String,
    /// The frontmatter's `description`, trimmed: what the model reads to decide.
    pub description: String,
    /// The `SKILL.md` file, which the model reads when it uses the skill.
    pub file: PathBuf,
    /// False when the frontmatter says `disable-model-invocation: true`: then it is left out of
    /// the system prompt.
    pub model_invocable: bool,
}

/// Where to look, from the command line.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--skill` paths, as given (`~` is [`Settings::home`], relative is under `--cwd`).
    pub paths: Vec<PathBuf>,
    /// `--no-skills`.
    pub no_discovery: bool,
    /// The home directory (`~`), when known.
    pub home: Option<PathBuf>,
}

/// The skills of a run and how they were found.
pub struct Skills {
    skills: Vec<Skill>,
    status: SkillsStatus,
    warnings: Vec<String>,
}

impl Skills {
    /// Loads the `--skill` paths, then (unless `--no-skills`) the project's and the home
    /// directory's skills, relative paths under `cwd`; the first skill found wins a name.
    pub fn discover(settings: &Settings, cwd: &Path) -> Skills {
        let mut found = Found::default();
        let mut mapped = Vec::new();
        for given in &settings.paths {
            let path = resolve(given, settings.home.as_deref(), cwd);
            if !path.exists() {
                found.warnings.push(format!(
                    "skills: skill path not found, ignoring: {}",
                    given.display()
                ));
                continue;
            }
            mapped.push(path.display().to_string());
            found.load(&path);
        }
        if !settings.no_discovery {
            for dir in project_roots(cwd) {
                found.load_dir(&dir.join(".pi/skills"));
                found.load_dir(&dir.join(".agents/skills"));
            }
            if let Some(home) = &settings.home {
                found.load_dir(&home.join(".pi/agent/skills"));
                found.load_dir(&home.join(".agents/skills"));
            }
        }
        let state = match (mapped.is_empty(), settings.no_discovery) {
            (false, _) => SkillsState::Configured,
            (true, true) => SkillsState::Disabled,
            (true, false) => SkillsState::Default,
        };
        let status = SkillsStatus {
            status: state,
            discovered: found.skills.len() as u32,
            skills: found
                .skills
                .iter()
                .map(|s| SkillEntry {
                    name: s.name.clone(),
                    source: s.file.display().to_string(),
                    model_invocable: s.model_invocable,
                })
                .collect(),
            mapped_paths: mapped,
            no_skills: settings.no_discovery,
            problems: found.problems,
        };
        Skills {
            skills: found.skills,
            status,
            warnings: found.warnings,
        }
    }

    /// The skills found, in the order found.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The system prompt's skills section; `None` when there is nothing to offer.
    pub fn prompt_section(&self) -> Option<String> {
        let offered: Vec<&Skill> = self.skills.iter().filter(|s| s.model_invocable).collect();
        if offered.is_empty() {
            return None;
        }
        let mut text = String::from(
            "The following skills provide specialized instructions for specific tasks.\n\
             Use the read tool to load a skill's file when the task matches its description.\n\n\
             <available_skills>",
        );
        for skill in offered {
            text.push_str(&format!(
                "\n  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>",
                escape(&skill.name),
                escape(&skill.description),
                escape(&skill.file.display().to_string())
            ));
        }
        text.push_str("\n</available_skills>");
        Some(text)
    }
}

impl Extension for Skills {
    fn status(&self) -> Vec<StatusLine> {
        let quiet = self.status.status == SkillsState::Default
            && self.status.discovered == 0
            && self.status.problems.is_empty();
        let mut lines = Vec::new();
        if !quiet {
            lines.push(StatusLine::Skills(self.status.clone()));
        }
        lines.extend(self.warnings.iter().cloned().map(StatusLine::Warning));
        lines
    }

    fn system_prompt(&self) -> Option<String> {
        self.prompt_section()
    }
}

/// `~` and `~/...` under `home` (when known), then a relative path under `cwd`.
fn resolve(given: &Path, home: Option<&Path>, cwd: &Path) -> PathBuf {
    let expanded = match (given.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) if rest.as_os_str().is_empty() => home.to_path_buf(),
        (Ok(rest), Some(home)) => home.join(rest),
        _ => given.to_path_buf(),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `cwd` and its parents up to the git root (the first with `.git`), nearest first; just
/// `cwd` outside a repository.
fn project_roots(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    vec![cwd.to_path_buf()]
}

#[derive(Default)]
struct Found {
    skills: Vec<Skill>,
    problems: Vec<SkillProblem>,
    warnings: Vec<String>,
}

impl Found {
    fn problem(&mut self, path: &Path, message: &str) {
        self.problems.push(SkillProblem {
            path: path.display().to_string(),
            message: message.to_string(),
        });
    }

    /// A `--skill` path: a skill file, a skill's directory, or a directory of skills.
    /// Anything but a directory is read as a skill file, so that a FIFO or a device is
    /// reported as a problem rather than skipped in silence.
    fn load(&mut self, path: &Path) {
        if !path.is_dir() {
            self.load_file(path);
        } else if path.join("SKILL.md").exists() {
            self.load_file(&path.join("SKILL.md"));
        } else {
            self.load_dir(path);
        }
    }

    /// Every `SKILL.md` under `dir` (not below another skill's directory).
    fn load_dir(&mut self, dir: &Path) {
        if !dir.is_dir() {
            return;
        }
        let mut files = Vec::new();
        collect(dir, 0, &mut files);
        files.sort();
        for file in files {
            self.load_file(&file);
        }
    }

    fn load_file(&mut self, file: &Path) {
        let text = match read_text(file, InputKind::Skill) {
            Ok(text) => text,
            Err(err) => return self.problem(file, &format!("cannot read: {err}")),
        };
        let fields = match frontmatter::parse(&text) {
            Ok(fields) => fields,
            Err(err) => return self.problem(file, &format!("invalid frontmatter: {err}")),
        };
        let Some(description) = fields.get("description").filter(|d| !d.trim().is_empty()) else {
            return self.problem(file, "invalid frontmatter: no description");
        };
        // The standard names a skill after its directory when the frontmatter does not.
        let name = fields
            .get("name")
            .cloned()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| {
                file.parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        if self.skills.iter().any(|s| s.name == name) {
            return self.problem(
                file,
                &format!("another skill named '{name}' was found first"),
            );
        }
        let model_invocable = fields
            .get("disable-model-invocation")
            .is_none_or(|v| v.trim() != "true");
        self.skills.push(Skill {
            name,
            description: description.trim().to_string(),
            file: file.to_path_buf(),
            model_invocable,
        });
    }
}

fn collect(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
    let skill = dir.join("SKILL.md");
    if skill.exists() {
        files.push(skill);
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect(&entry.path(), depth + 1, files);
        }
    }
}

#[cfg(test)]
mod tests;
