//! The commands of `--control stdin`, one JSON object per line, and how a line becomes one.
//!
//! The names are agentic-pi's: `prompt`, `steer`, `follow_up`, `abort`, `decide`. Every command
//! may carry an `id` the answer (`control_ack`) echoes; for `decide`, `id` names the approval.
//! A line that is not a command still gets an answer, with what could be read of its `type` and
//! `id`, so a caller can always match its lines to the answers.

use serde::Deserialize;
use serde_json::Value;

/// One command from the controller.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Command {
    /// The task; the first line when the prompt is not given as the argument.
    Prompt {
        /// The prompt text.
        message: String,
        /// The caller's id for the answer.
        #[serde(default)]
        id: Option<String>,
    },
    /// A user message delivered at the next safe point (calls not yet started are skipped).
    Steer {
        /// The message.
        message: String,
        /// The caller's id for the answer.
        #[serde(default)]
        id: Option<String>,
    },
    /// A user message the run goes on with when it would otherwise end.
    FollowUp {
        /// The message.
        message: String,
        /// The caller's id for the answer.
        #[serde(default)]
        id: Option<String>,
    },
    /// Stop the run gracefully, recording the cost so far.
    Abort {
        /// Why, for the `control_abort` line and the stderr line.
        #[serde(default)]
        reason: Option<String>,
        /// The caller's id for the answer.
        #[serde(default)]
        id: Option<String>,
    },
    /// The answer to an approval.
    Decide {
        /// The approval's id, from `approval_requested`.
        id: String,
        /// Whether the call may run.
        allow: bool,
        /// Why; a denial's reason is the tool error the model reads.
        #[serde(default)]
        reason: Option<String>,
    },
}

/// A line that is not a command, with what could be read of it for the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotACommand {
    /// The line's `type`, when it had a string one.
    pub command: Option<String>,
    /// The line's `id`, when it had one.
    pub id: Option<String>,
    /// What is wrong, in one line.
    pub error: String,
}

/// The command names, for error messages.
const NAMES: &str = "prompt, steer, follow_up, abort, decide";

impl Command {
    /// The command's `type`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Prompt { .. } => "prompt",
            Command::Steer { .. } => "steer",
            Command::FollowUp { .. } => "follow_up",
            Command::Abort { .. } => "abort",
            Command::Decide { .. } => "decide",
        }
    }

    /// The id the answer echoes.
    pub(crate) fn id(&self) -> Option<&str> {
        match self {
            Command::Prompt { id, .. }
            | Command::Steer { id, .. }
            | Command::FollowUp { id, .. }
            | Command::Abort { id, .. } => id.as_deref(),
            Command::Decide { id, .. } => Some(id),
        }
    }

    /// Reads one line; `None` for a blank line, which is no command and gets no answer.
    pub(crate) fn parse(line: &str) -> Option<Result<Command, NotACommand>> {
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(err) => {
                return Some(Err(NotACommand {
                    command: None,
                    id: None,
                    error: format!("not JSON: {err}"),
                }));
            }
        };
        let Some(object) = value.as_object() else {
            return Some(Err(NotACommand {
                command: None,
                id: None,
                error: "a command is a JSON object with a \"type\"".to_string(),
            }));
        };
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = object.get("id").and_then(|id| match id {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        });
        let not_a_command = |error: String| NotACommand {
            command: kind.clone(),
            id: id.clone(),
            error,
        };
        let Some(name) = kind.as_deref() else {
            return Some(Err(not_a_command(format!(
                "a command needs a string \"type\": one of {NAMES}"
            ))));
        };
        if !NAMES.split(", ").any(|known| known == name) {
            return Some(Err(not_a_command(format!(
                "unknown command {name:?}: the commands are {NAMES}"
            ))));
        }
        let command = match serde_json::from_value::<Command>(value.clone()) {
            Ok(command) => command,
            Err(err) => return Some(Err(not_a_command(format!("invalid {name}: {err}")))),
        };
        Some(match &command {
            Command::Prompt { message, .. }
            | Command::Steer { message, .. }
            | Command::FollowUp { message, .. }
                if message.trim().is_empty() =>
            {
                Err(not_a_command(format!(
                    "{name} needs a non-empty \"message\""
                )))
            }
            _ => Ok(command),
        })
    }
}

#[cfg(test)]
mod tests;
