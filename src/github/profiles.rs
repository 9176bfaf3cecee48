//! Permission profiles: which GitHub tools a run registers.
//!
//! A profile is data: a JSON file `{description, extends?, tools:[...]}` named after the
//! profile. The four shipped in `profiles/` (read, issues-write, review-write, repo-write) are
//! compiled into the binary, so an installed worker needs no data directory;
//! `--profiles-dir` adds profiles or replaces shipped ones by name. A profile that extends
//! another gets the parent's tools first. Every profile is checked when loaded: an unknown
//! parent, a cycle, an unknown tool name or a tool listed twice along the chain is an error
//! naming the file. A profile may also list MCP tools (`mcp__SERVER__TOOL`, or a glob such as
//! `mcp__github__get_*`): a run with MCP servers then offers only the MCP tools it lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::input_file::{InputKind, read_text};

const SHIPPED: [(&str, &str); 4] = [
    ("read", include_str!("../../profiles/read.json")),
    (
        "issues-write",
        include_str!("../../profiles/issues-write.json"),
    ),
    (
        "review-write",
        include_str!("../../profiles/review-write.json"),
    ),
    ("repo-write", include_str!("../../profiles/repo-write.json")),
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    extends: Option<String>,
    tools: Vec<String>,
}

#[derive(Debug, Clone)]
struct Profile {
    file: ProfileFile,
    /// Where it came from, for messages.
    origin: String,
}

/// Why a profile could not be loaded or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// `--profile` names no known profile.
    #[error("unknown GitHub profile '{name}'. Expected one of: {available}")]
    Unknown {
        /// The name given.
        name: String,
        /// The known profile names, comma-separated.
        available: String,
    },
    /// A profile file is broken (bad JSON, an unknown tool or parent, a cycle, a tool listed
    /// twice).
    #[error("GitHub profile {origin}: {message}")]
    Invalid {
        /// The profile's name with `(built in)`, or its file's path.
        origin: String,
        /// What is wrong with it.
        message: String,
    },
    /// `--profiles-dir` could not be listed, or a file in it could not be read.
    #[error("--profiles-dir {dir}: {message}")]
    Dir {
        /// The directory, as given.
        dir: String,
        /// What failed (the OS error, or which file could not be read).
        message: String,
    },
}

/// Every profile there is, shipped and from `--profiles-dir`, each checked.
#[derive(Debug, Clone)]
pub struct Profiles {
    profiles: BTreeMap<String, Profile>,
}

impl Profiles {
    /// The shipped profiles, plus (and overridden by) the `*.json` files in `dir`; every one
    /// is validated against `known_tools`.
    pub fn load(dir: Option<&Path>, known_tools: &[&str]) -> Result<Profiles, ProfileError> {
        let mut profiles = BTreeMap::new();
        for (name, text) in SHIPPED {
            let origin = format!("{name} (built in)");
            profiles.insert(name.to_string(), parse(text, origin)?);
        }
        if let Some(dir) = dir {
            for (name, path) in json_files(dir)? {
                let text =
                    read_text(&path, InputKind::Profile).map_err(|err| ProfileError::Dir {
                        dir: dir.display().to_string(),
                        message: format!("cannot read {}: {err}", path.display()),
                    })?;
                profiles.insert(name, parse(&text, path.display().to_string())?);
            }
        }
        let loaded = Profiles { profiles };
        for name in loaded.profiles.keys() {
            loaded.resolve_checked(name, known_tools)?;
        }
        Ok(loaded)
    }

    /// The profile names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.profiles.keys().map(String::as_str).collect()
    }

    /// The tools of profile `name`, parents' first.
    pub fn resolve(&self, name: &str, known_tools: &[&str]) -> Result<Vec<String>, ProfileError> {
        if !self.profiles.contains_key(name) {
            return Err(ProfileError::Unknown {
                name: name.to_string(),
                available: self.names().join(", "),
            });
        }
        self.resolve_checked(name, known_tools)
    }

    fn resolve_checked(
        &self,
        name: &str,
        known_tools: &[&str],
    ) -> Result<Vec<String>, ProfileError> {
        let mut chain: Vec<&str> = Vec::new();
        let mut current = Some(name);
        while let Some(link) = current {
            let profile = &self.profiles[link];
            if chain.contains(&link) {
                chain.push(link);
                return Err(invalid(
                    &self.profiles[name],
                    format!("extends chain has a cycle: {}", chain.join(" -> ")),
                ));
            }
            chain.push(link);
            current = match &profile.file.extends {
                None => None,
                Some(parent) if self.profiles.contains_key(parent) => Some(parent.as_str()),
                Some(parent) => {
                    return Err(invalid(
                        profile,
                        format!(
                            "extends unknown profile '{parent}' (available: {})",
                            self.names().join(", ")
                        ),
                    ));
                }
            };
        }
        let mut tools: Vec<String> = Vec::new();
        for link in chain.iter().rev() {
            let profile = &self.profiles[*link];
            for tool in &profile.file.tools {
                // MCP tools (`mcp__SERVER__TOOL`, globs too) are known only once their servers
                // run: the profile narrows them then.
                if !known_tools.contains(&tool.as_str())
                    && !tool.starts_with(crate::events::MCP_TOOL_PREFIX)
                {
                    return Err(invalid(profile, format!("unknown tool '{tool}'")));
                }
                if tools.contains(tool) {
                    return Err(invalid(
                        profile,
                        format!("tool '{tool}' is listed twice (with what it extends)"),
                    ));
                }
                tools.push(tool.clone());
            }
        }
        Ok(tools)
    }
}

fn invalid(profile: &Profile, message: String) -> ProfileError {
    ProfileError::Invalid {
        origin: profile.origin.clone(),
        message,
    }
}

fn parse(text: &str, origin: String) -> Result<Profile, ProfileError> {
    let file: ProfileFile = serde_json::from_str(text).map_err(|err| ProfileError::Invalid {
        origin: origin.clone(),
        message: format!("not a profile ({err})"),
    })?;
    Ok(Profile { file, origin })
}

fn json_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, ProfileError> {
    let entries = std::fs::read_dir(dir).map_err(|err| ProfileError::Dir {
        dir: dir.display().to_string(),
        message: err.to_string(),
    })?;
    let mut files: Vec<(String, PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests;
