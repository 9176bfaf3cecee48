//! Pre- and post-tool hook programs (Claude Code's PreToolUse / PostToolUse contract).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// PreToolUse input.
#[derive(Debug, Serialize)]
pub struct PreToolUse<'a> {
    /// Session.
    pub session_id: &'a str,
    /// Cwd.
    pub cwd: &'a str,
    /// Tool.
    pub tool_name: &'a str,
    /// Input.
    pub tool_input: &'a Value,
    /// Call id.
    pub tool_use_id: &'a str,
}

/// PostToolUse input.
#[derive(Debug, Serialize)]
pub struct PostToolUse<'a> {
    /// Session.
    pub session_id: &'a str,
    /// Cwd.
    pub cwd: &'a str,
    /// Tool.
    pub tool_name: &'a str,
    /// Input.
    pub tool_input: &'a Value,
    /// Call id.
    pub tool_use_id: &'a str,
    /// Response.
    pub tool_response: &'a Value,
}

/// Verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Allow.
    Allow {
        /// Replaced input.
        updated_input: Option<Value>,
    },
    /// Ask.
    Ask {
        /// Why.
        reason: Option<String>,
    },
    /// Deny.
    Deny {
        /// Why.
        reason: String,
    },
    /// Failed.
    Failed {
        /// Why.
        reason: String,
    },
}

/// Failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HookFailure(String);

/// A hook program.
#[derive(Debug)]
pub struct HookProgram {
    command: String,
}

impl HookProgram {
    /// New.
    pub fn new(command: String) -> Self {
        HookProgram { command }
    }
    /// Command.
    pub fn command(&self) -> &str {
        &self.command
    }
    /// Pre.
    pub async fn pre_tool(&self, _i: &PreToolUse<'_>, _c: &Path, _t: Duration) -> Verdict {
        Verdict::Failed {
            reason: "stub".into(),
        }
    }
    /// Post.
    pub async fn post_tool(
        &self,
        _i: &PostToolUse<'_>,
        _c: &Path,
        _t: Duration,
    ) -> Result<(), HookFailure> {
        Err(HookFailure("stub".into()))
    }
}
