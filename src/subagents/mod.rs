//! Subagents: a `task` tool that runs child agents in-process, through the run's child-run
//! host, with agent definitions read from the repository.

pub mod definitions;
