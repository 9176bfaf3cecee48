//! Live control of a running phase: the commands an orchestrator sends on stdin
//! (`--control stdin`), approvals, pre- and post-tool hooks, heartbeats.
//!
//! All of it rides beside the run kernel as one [`Extension`], [`Live`]: the kernel takes
//! steering and follow-ups at its safe points, asks every extension to admit a tool call
//! before it runs, and tells them when a call is over; it does not know who answers. The
//! controller's lines are read on a thread of their own ([`lines`]) and answered there
//! ([`channel`]); the decisions on a call ([`gate`]) run inside the call. Every decision
//! point fails closed: a hook that fails, an approval that times out or is cut short by an
//! abort, a call the run cannot ask about, is refused with a reason the model reads.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use globset::{Glob, GlobSet, GlobSetBuilder};
use tokio_util::sync::CancellationToken;

use crate::control::RunControl;
use crate::events::{Emitter, Event, ToolCall};
use crate::extension::{Admission, Extension, Finish, RunNote, RunOutcome, StatusLine, ToolEnding};
use crate::sync::LockExt;

mod approval;
mod channel;
mod command;
mod gate;
mod heartbeat;
pub mod hooks;
mod lines;

pub(crate) use command::Command;
pub use lines::{CommandLines, Line, Next};

/// `--approval-timeout`'s default: how long a call waits for its decision.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);
/// `--hook-timeout`'s default: how long a hook program may run.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where control commands come from (`--control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ControlSource {
    /// JSON lines on stdin.
    Stdin,
}

/// What the flags ask of live control.
#[derive(Debug, Clone)]
pub struct LiveSettings {
    /// `--approve-tools`: names or globs of tools whose calls wait for an approval.
    pub approve_tools: Vec<String>,
    /// `--approval-timeout`.
    pub approval_timeout: Duration,
    /// `--pre-tool-hook` command lines.
    pub pre_tool_hooks: Vec<String>,
    /// `--post-tool-hook` command lines.
    pub post_tool_hooks: Vec<String>,
    /// `--hook-timeout`.
    pub hook_timeout: Duration,
    /// `--heartbeat`.
    pub heartbeat: Option<Duration>,
}

/// Settings live control cannot work with: a usage error.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// Approvals nobody can give.
    #[error(
        "--approve-tools needs someone to decide: add --control stdin (decide commands) or a --pre-tool-hook"
    )]
    NoDecider,
    /// Not a tool name or glob.
    #[error("--approve-tools {pattern:?}: {source}")]
    Glob {
        /// The pattern given.
        pattern: String,
        /// Why it is not a glob.
        #[source]
        source: globset::Error,
    },
    /// A duration of zero.
    #[error("{0} must be longer than 0")]
    Zero(&'static str),
    /// A hook with nothing to run.
    #[error("{0} must not be empty")]
    EmptyHook(&'static str),
}

/// Where the run is, as the controller's answers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    Running = 0,
    /// An abort command (or a signal) is winding the run down.
    Stopping = 1,
    /// The loop is over.
    Ended = 2,
}

/// Live control of one run: an extension (see the module docs).
pub struct Live {
    shared: Arc<Shared>,
}

/// What the controller thread, the heartbeat and the calls share.
struct Shared {
    control: RunControl,
    session_id: String,
    cwd: PathBuf,
    started: Instant,
    approve: Option<GlobSet>,
    approval_timeout: Duration,
    pre_hooks: Vec<hooks::HookProgram>,
    post_hooks: Vec<hooks::HookProgram>,
    hook_timeout: Duration,
    heartbeat: Option<Duration>,
    /// The controller's lines; `None` without `--control`.
    commands: Option<CommandLines>,
    /// The stream, once attached; taken back when the run closes, so nothing follows
    /// `usage_snapshot`.
    stream: Mutex<Option<Emitter>>,
    inbox: Mutex<Inbox>,
    approvals: approval::Approvals,
    phase: AtomicU8,
    /// Post-hook failures, reported as warnings at the end.
    warnings: Mutex<Vec<String>>,
    /// Records for the session file, OTEL and the trace file, until the loop takes them.
    notes: Mutex<Vec<RunNote>>,
    /// Stops the heartbeat.
    done: CancellationToken,
    /// Held while a command is handled and answered, and while the stream is closed, so a
    /// command is never half answered.
    answering: Mutex<()>,
}

/// Messages waiting for the model.
#[derive(Default)]
struct Inbox {
    steering: Vec<String>,
    follow_ups: std::collections::VecDeque<String>,
}

impl Live {
    /// Live control for a run stopped by `control`, in `cwd`; `commands` are the controller's
    /// lines (`--control stdin`), after the prompt.
    pub fn new(
        settings: LiveSettings,
        commands: Option<CommandLines>,
        control: RunControl,
        session_id: &str,
        cwd: PathBuf,
    ) -> Result<Live, LiveError> {
        if !settings.approve_tools.is_empty()
            && commands.is_none()
            && settings.pre_tool_hooks.is_empty()
        {
            return Err(LiveError::NoDecider);
        }
        for (flag, value) in [
            ("--approval-timeout", Some(settings.approval_timeout)),
            ("--hook-timeout", Some(settings.hook_timeout)),
            ("--heartbeat", settings.heartbeat),
        ] {
            if value.is_some_and(|d| d.is_zero()) {
                return Err(LiveError::Zero(flag));
            }
        }
        let hooks = |commands: &[String], flag| {
            commands
                .iter()
                .map(|command| {
                    if command.trim().is_empty() {
                        Err(LiveError::EmptyHook(flag))
                    } else {
                        Ok(hooks::HookProgram::new(command.clone()))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Live {
            shared: Arc::new(Shared {
                control,
                session_id: session_id.to_string(),
                cwd,
                started: Instant::now(),
                approve: approve_globs(&settings.approve_tools)?,
                approval_timeout: settings.approval_timeout,
                pre_hooks: hooks(&settings.pre_tool_hooks, "--pre-tool-hook")?,
                post_hooks: hooks(&settings.post_tool_hooks, "--post-tool-hook")?,
                hook_timeout: settings.hook_timeout,
                heartbeat: settings.heartbeat,
                commands,
                stream: Mutex::new(None),
                inbox: Mutex::new(Inbox::default()),
                approvals: approval::Approvals::default(),
                phase: AtomicU8::new(Phase::Running as u8),
                warnings: Mutex::new(Vec::new()),
                notes: Mutex::new(Vec::new()),
                done: CancellationToken::new(),
                answering: Mutex::new(()),
            }),
        })
    }
}

/// The `--approve-tools` patterns as one set; `None` when there are none.
fn approve_globs(patterns: &[String]) -> Result<Option<GlobSet>, LiveError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern.trim()).map_err(|source| LiveError::Glob {
            pattern: pattern.clone(),
            source,
        })?);
    }
    set.build().map(Some).map_err(|source| LiveError::Glob {
        pattern: patterns.join(","),
        source,
    })
}

impl Shared {
    fn phase(&self) -> Phase {
        match self.phase.load(Ordering::SeqCst) {
            0 => Phase::Running,
            1 => Phase::Stopping,
            _ => Phase::Ended,
        }
    }

    /// Moves the phase on (never back).
    fn advance(&self, to: Phase) {
        self.phase.fetch_max(to as u8, Ordering::SeqCst);
    }

    /// Writes a line, while the stream is attached, and keeps it as a note of the run (a
    /// heartbeat is only for the stream). The note is kept before the line is written, and
    /// under the same lock: a controller answers a line it has read, so the answer's own note
    /// must not be kept before the note of the line it answers.
    fn emit(&self, event: &Event<'_>) {
        let Some(stream) = self.stream.lock_or_recover().clone() else {
            return;
        };
        if matches!(event, Event::Heartbeat(_)) {
            stream.emit(event);
            return;
        }
        let mut notes = self.notes.lock_or_recover();
        if let Ok(serde_json::Value::Object(mut data)) = serde_json::to_value(event)
            && let Some(serde_json::Value::String(kind)) = data.remove("type")
        {
            notes.push(RunNote {
                kind,
                at_unix_ms: crate::events::now_millis(),
                data: serde_json::Value::Object(data),
            });
        }
        stream.emit(event);
    }
}

impl Extension for Live {
    fn take_notes(&self) -> Vec<RunNote> {
        std::mem::take(&mut *self.shared.notes.lock_or_recover())
    }

    fn attach(&self, stream: &Emitter) {
        *self.shared.stream.lock_or_recover() = Some(stream.clone());
        if self.shared.commands.is_some() {
            channel::listen(self.shared.clone());
        }
        if let Some(every) = self.shared.heartbeat {
            heartbeat::start(self.shared.clone(), stream.clone(), every);
        }
    }

    fn approver(&self) -> Option<Arc<dyn crate::tools::Approver>> {
        Some(Arc::new(gate::Approvals(self.shared.clone())))
    }

    fn take_steering(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.inbox.lock_or_recover().steering)
    }

    fn steering_waiting(&self) -> bool {
        !self.shared.inbox.lock_or_recover().steering.is_empty()
    }

    fn take_follow_up(&self) -> Option<String> {
        self.shared.inbox.lock_or_recover().follow_ups.pop_front()
    }

    fn admit<'a>(
        &'a self,
        call: &'a ToolCall,
        input: serde_json::Value,
    ) -> BoxFuture<'a, Admission> {
        Box::pin(gate::admit(&self.shared, call, input))
    }

    fn after_call<'a>(&'a self, call: &'a ToolCall, ending: ToolEnding<'a>) -> BoxFuture<'a, ()> {
        Box::pin(gate::after_call(&self.shared, call, ending))
    }

    fn run_ending(&self) {
        // A command being handled finishes first: its lines come before the closing ones.
        let _answering = self.shared.answering.lock_or_recover();
        self.shared.advance(Phase::Ended);
        self.shared.done.cancel();
    }

    fn finish(&self, _outcome: RunOutcome<'_>) -> Finish<'_> {
        // Nothing is written after the closing lines; later commands go unanswered.
        {
            let _answering = self.shared.answering.lock_or_recover();
            self.shared.stream.lock_or_recover().take();
        }
        self.shared.done.cancel();
        let warnings = std::mem::take(&mut *self.shared.warnings.lock_or_recover());
        Box::pin(async move { warnings.into_iter().map(StatusLine::Warning).collect() })
    }
}

#[cfg(test)]
mod tests;
