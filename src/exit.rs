//! How the process ends: every exit code worker can return, decided in one place.
//!
//! The library decides an [`ExitStatus`] (a run's outcome, a usage error); only the binary turns
//! it into a process exit code. `--help`, the README and the tests all read this list.

use std::process::ExitCode;

/// How the process ends; each status is one exit code ([`ExitStatus::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The model finished (`stop`).
    Ok,
    /// The run failed after it started, or could not start (model/API error after retries,
    /// `length`, content filter, model discovery, an internal failure).
    Failed,
    /// Usage or configuration error before the run: stderr only, nothing on stdout.
    Usage,
    /// A limit stopped the run (`--max-turns`, `--timeout`, a budget, `--max-repeated-failures`).
    Limit,
    /// An output the run was asked to write (`--trace-file`, `--record`,
    /// `--output-last-message`, the session file) is incomplete. It replaces 0, 1 and 3: a
    /// caller must not trust those files whatever else happened; a signal or a closed stdout
    /// keeps its own code.
    OutputIncomplete,
    /// An `abort` command (`--control stdin`) stopped the run.
    Aborted,
    /// SIGINT.
    Interrupted,
    /// The reader closed stdout.
    ClosedStdout,
    /// SIGTERM.
    Terminated,
}

impl ExitStatus {
    /// Every status, in code order (for `--help` and the README).
    pub const ALL: [ExitStatus; 9] = [
        ExitStatus::Ok,
        ExitStatus::Failed,
        ExitStatus::Usage,
        ExitStatus::Limit,
        ExitStatus::OutputIncomplete,
        ExitStatus::Aborted,
        ExitStatus::Interrupted,
        ExitStatus::ClosedStdout,
        ExitStatus::Terminated,
    ];

    /// The process exit code: 0 to 5, or 128 plus the signal's number (130 SIGINT,
    /// 141 SIGPIPE, 143 SIGTERM).
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Failed => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Limit => 3,
            ExitStatus::OutputIncomplete => 4,
            ExitStatus::Aborted => 5,
            ExitStatus::Interrupted => 130,
            ExitStatus::ClosedStdout => 141,
            ExitStatus::Terminated => 143,
        }
    }

    /// The status once an output turned out incomplete: [`ExitStatus::OutputIncomplete`]
    /// instead of the run's own outcome (0, 1, 3); a usage error, a signal or a closed stdout
    /// stays as it is.
    pub fn with_incomplete_output(self) -> ExitStatus {
        match self {
            ExitStatus::Ok | ExitStatus::Failed | ExitStatus::Limit => ExitStatus::OutputIncomplete,
            other => other,
        }
    }

    /// One line for `--help`.
    pub fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Ok => "the model finished (stop)",
            ExitStatus::Failed => {
                "the run failed after it started (model/API error after retries, length, fatal \
                 error); fatal_error and usage_snapshot were printed"
            }
            ExitStatus::Usage => {
                "usage or configuration error before the run (message on stderr, nothing on stdout)"
            }
            ExitStatus::Limit => {
                "a limit stopped the run (--max-turns, --timeout, a budget, --max-repeated-failures)"
            }
            ExitStatus::OutputIncomplete => {
                "an output file could not be written in full (--trace-file, --record, \
                 --output-last-message, the session file); output_error and stderr say which"
            }
            ExitStatus::Aborted => {
                "an abort command (--control stdin) stopped the run; control_abort, agent_end and \
                 usage_snapshot were printed"
            }
            ExitStatus::Interrupted => "interrupted by SIGINT",
            ExitStatus::ClosedStdout => "stdout was closed by the reader",
            ExitStatus::Terminated => "terminated by SIGTERM",
        }
    }

    /// The `Exit codes:` section of `--help`.
    pub fn help_section() -> String {
        let mut text = String::from("Exit codes:");
        for status in ExitStatus::ALL {
            text.push_str(&format!("\n  {:<4} {}", status.code(), status.meaning()));
        }
        text
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}

impl From<ExitStatus> for i32 {
    fn from(status: ExitStatus) -> i32 {
        i32::from(status.code())
    }
}

#[cfg(test)]
mod tests;
