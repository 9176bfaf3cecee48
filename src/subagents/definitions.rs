//! Agent definitions: Markdown files with YAML front matter.

use std::path::{Path, PathBuf};

/// One agent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Tools.
    pub tools: Option<Vec<String>>,
    /// Model.
    pub model: Option<String>,
    /// Thinking.
    pub thinking: Option<String>,
    /// Max turns.
    pub max_turns: Option<u32>,
    /// Instructions.
    pub instructions: String,
    /// Source.
    pub source: PathBuf,
}

/// A file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionProblem {
    /// Path.
    pub path: PathBuf,
    /// Why.
    pub message: String,
}

/// The definitions of a run.
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    agents: Vec<AgentDefinition>,
    problems: Vec<DefinitionProblem>,
}

impl Definitions {
    /// Reads `dirs`.
    pub fn read(_dirs: &[PathBuf]) -> Definitions {
        Definitions::default()
    }
    /// Dirs.
    pub fn default_dirs(cwd: &Path, agents_dirs: &[PathBuf]) -> Vec<PathBuf> {
        let mut dirs = agents_dirs.to_vec();
        dirs.push(cwd.join(".pi/agents"));
        dirs.push(cwd.join(".claude/agents"));
        dirs
    }
    /// Get.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }
    /// All.
    pub fn all(&self) -> &[AgentDefinition] {
        &self.agents
    }
    /// Problems.
    pub fn problems(&self) -> &[DefinitionProblem] {
        &self.problems
    }
}
