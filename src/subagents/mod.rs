//! Subagents (`--subagents`): the `task` tool, which runs child agents through the run's
//! child-run host, and the agent definitions it may name (`--agents-dir`, `.pi/agents/`,
//! `.claude/agents/`).
//!
//! The extension only offers the tool and reports the definitions; starting a child, its
//! limits and its lineage belong to the run's kernel (see `agent/children.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::extension::{Extension, StatusLine};
use crate::tools::Tool;

pub mod definitions;
mod task;

pub use definitions::{AgentDefinition, Definitions};
pub use task::NAME as TASK_TOOL;

/// The subagents of a run: the `task` tool and the definitions it offers.
pub struct Subagents {
    task: Arc<task::TaskTool>,
    warnings: Vec<String>,
}

impl Subagents {
    /// Reads the definitions of a run in `cwd` (each `--agents-dir` first).
    pub fn new(cwd: &Path, agents_dirs: &[PathBuf]) -> Subagents {
        let definitions = Definitions::read(&Definitions::default_dirs(cwd, agents_dirs));
        let warnings = definitions
            .problems()
            .iter()
            .map(|problem| {
                format!(
                    "agent definition {}: {}",
                    problem.path.display(),
                    problem.message
                )
            })
            .collect();
        Subagents {
            task: Arc::new(task::TaskTool::new(Arc::new(definitions))),
            warnings,
        }
    }
}

impl Extension for Subagents {
    fn status(&self) -> Vec<StatusLine> {
        self.warnings
            .iter()
            .cloned()
            .map(StatusLine::Warning)
            .collect()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![self.task.clone()]
    }
}
