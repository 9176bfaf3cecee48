//! Live control of a running phase: the commands an orchestrator sends on stdin
//! (`--control stdin`), approvals, pre- and post-tool hooks.
//!
//! Everything here rides beside the run kernel as an [`crate::extension::Extension`]: the
//! kernel reads steering and follow-ups at its safe points and asks every extension to admit
//! a tool call before it runs; it does not know who answers.

pub mod hooks;
