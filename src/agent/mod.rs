//! The run: header, model/tool loop, and the lines that end every stream.
//!
//! A turn is one model request. The loop asks the model, runs the tool calls it makes, and
//! asks again, until the model answers without tool calls, a limit stops it, or the run is
//! aborted. Whatever happens after the header is printed, the stream ends with `agent_end`
//! (once `agent_start` was printed) and `usage_snapshot`, and the exit code says how it went.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use futures_util::FutureExt;

use serde_json::Value;

mod budget;
mod children;
mod compaction;
mod connect;
mod conversation;
mod ending;
mod execute;
mod failures;
mod finish;
mod late_tools;
mod phase;
mod prompt;
mod step;
mod streaming;
mod turn;

pub use crate::control::{AbortReason, RunControl};
pub use crate::extension::{
    Exchange, Extension, Finish, RunInfo, RunOutcome, StatusLine, ToolEnding,
};
pub use prompt::{ContextFiles, context_files};

use crate::config::{ModelSource, RunConfig};
use crate::events::{
    Emitter, Event, EventSink, FatalError, FatalErrorKind, LimitKind, LimitReached, Message,
    OutputError, OutputKind, RunStopReason, Serving, SessionHeader, StopReason, TextContent,
    UsageStats, UserMessage, now_millis, now_rfc3339,
};
use crate::exit::ExitStatus;
use crate::http::RetryPolicy;
use crate::ids::{RequestIds, SessionId};
use crate::llm::fixture::{
    FIXTURE_VERSION, FixtureHeader, Recorder, RecordingTransport, ReplayTransport,
};
use crate::llm::{
    Body, HttpTransport, RequestSpec, ToolDefinition, Transport, WireMessages, WireTools,
    build_body, build_body_cached, first_model,
};
use crate::tools::{
    BashSettings, BudgetLimits, FileLocks, Leftovers, RunServices, ToolContext, ToolSet,
};
use ending::{Failure, failure_line};
use execute::{ExecContext, execute_calls};
use turn::{TurnContext, TurnEnd, TurnOutcome, request_assistant};

/// How a run went, for in-process callers (the binary maps it to an exit code).
#[derive(Debug, Clone)]
pub struct RunResult {
    /// How the process should exit; [`ExitStatus::Ok`] when the model finished.
    pub exit: ExitStatus,
    /// The run's id: the header's `id` and every line's `sessionId`.
    pub session_id: SessionId,
    /// Why the run ended (`agent_end.stopReason`).
    pub stop_reason: RunStopReason,
    /// The text of the last assistant message that had any.
    pub final_text: Option<String>,
    /// The run's totals, as the closing `usage_snapshot` reports them.
    pub stats: UsageStats,
    /// The conversation as `agent_end` reports it: a resumed session's history, the prompt and
    /// every message since (after a compaction, its summary stands for the earlier ones).
    pub messages: Vec<Message>,
    /// Every emitted line as JSON (when `retain_records` is set).
    pub records: Vec<Value>,
    /// Problems worth a line on stderr (redacted).
    pub warnings: Vec<String>,
    /// What ended the run in failure, as its `fatal_error` line reports it; `None` when the run did
    /// not fail.
    pub fatal_error: Option<FatalError>,
    /// Why the run did not succeed, as one line for stderr (redacted); `None` on success.
    pub failure: Option<String>,
    /// The final answer as JSON, valid against `--output-schema`.
    pub structured_output: Option<Value>,
}

impl RunResult {
    /// True when the model finished.
    pub fn ok(&self) -> bool {
        self.exit == ExitStatus::Ok
    }
}

/// Runs one task to completion. Never writes to stdout or stderr; events go to `sink`.
pub async fn run(config: RunConfig, prompt: String, sink: Box<dyn EventSink>) -> RunResult {
    let session_id = config.session_id.clone();
    let mut available = if config.tools.builtin {
        ToolSet::all_builtin()
    } else {
        Vec::new()
    };
    available.extend(config.extensions.iter().flat_map(|e| e.tools()));
    let tools = match ToolSet::select(available, config.tools.allow.as_deref()) {
        Ok(tools) => tools,
        Err(unknown) => return usage_failure(session_id, unknown.to_string()),
    };
    let emitter = Emitter::new(sink, session_id.as_str(), config.retain_records);
    emitter.set_secrets(config.secrets.clone());
    let control = config.control.clone();
    emitter.on_close(move || control.abort(AbortReason::OutputClosed));
    let cwd = config.cwd.display().to_string();
    let session_file = config
        .session
        .as_ref()
        .and_then(|s| s.writer.as_ref())
        .map(|w| w.path().display().to_string());
    let started_at = now_rfc3339();
    let mut header = SessionHeader::new(session_id.as_str(), &started_at, &cwd);
    header.session_file = session_file.as_deref();
    header.resumed_from = config.session.as_ref().and_then(|s| s.resumed.as_ref());
    emitter.header(&header);
    emitter.emit(&Event::SandboxStatus(&config.sandbox.status(&config.cwd)));
    let mut warnings = config.sandbox.warnings();
    if let Some(torn) = config.session.as_ref().and_then(|s| s.torn.as_ref()) {
        emitter.emit(&Event::InputTruncated(torn));
        warnings.push(torn.message.clone());
    }
    for extension in &config.extensions {
        warnings.extend(
            extension
                .status()
                .into_iter()
                .filter_map(|line| emit_status(&emitter, line)),
        );
        extension.attach(&emitter);
        extension.start();
    }

    let timer = config.limits.timeout.map(|timeout| {
        let control = config.control.clone();
        let left = timeout.saturating_sub(config.budget_start.elapsed());
        tokio::spawn(async move {
            tokio::time::sleep(left).await;
            control.abort(AbortReason::Timeout);
        })
    });
    let mut session = Session::new(config, emitter, session_id, tools);
    session.warnings = warnings;
    let result = session.run(prompt).await;
    if let Some(timer) = timer {
        timer.abort();
    }
    result
}

/// Prints a status line; a warning is handed back instead.
fn emit_status(emitter: &Emitter, line: StatusLine) -> Option<String> {
    match line {
        StatusLine::Extension(status) => emitter.emit(&Event::ExtensionStatus(&status)),
        StatusLine::Skills(status) => emitter.emit(&Event::SkillsStatus(&status)),
        StatusLine::TraceStatus(value) => emitter.emit(&Event::TraceStatus(&value)),
        StatusLine::TraceSummary(value) => emitter.emit(&Event::TraceSummary(&value)),
        StatusLine::OutputError(error) => {
            emitter.emit(&Event::OutputError(&error));
            return Some(error.message);
        }
        StatusLine::Warning(warning) => return Some(warning),
    }
    None
}

fn usage_failure(session_id: SessionId, message: String) -> RunResult {
    RunResult {
        exit: ExitStatus::Usage,
        session_id,
        stop_reason: RunStopReason::Error,
        final_text: None,
        stats: UsageStats::default(),
        messages: Vec::new(),
        records: Vec::new(),
        warnings: Vec::new(),
        structured_output: None,
        failure: Some(message.clone()),
        fatal_error: Some(FatalError {
            kind: FatalErrorKind::Internal,
            message,
        }),
    }
}

/// What a run knows and has used so far: the conversation, the usage and the budgets, and the
/// bookkeeping of its turns. The step machine ([`step`]) reads it to choose the next step and
/// advances it; everything else in [`Session`] is where the run writes (the stream, the
/// session file, the recording) and what it was given.
#[derive(Default)]
struct RunState {
    /// The conversation so far, the prompt and any resumed history included.
    messages: Vec<Message>,
    /// The run's totals, printed in `usage_snapshot`.
    stats: UsageStats,
    /// Which budgets have had their wrap-up note.
    budgets: budget::Budgets,
    /// The final answer as JSON (`--output-schema`), once valid.
    structured_output: Option<Value>,
    /// The corrective turn for an invalid structured answer was used.
    corrected: bool,
    /// The model's context window in tokens, when known.
    context_window: Option<u64>,
    /// The prompt and output tokens the server reported for the last response, and how many
    /// messages the conversation had then.
    last_known: Option<(usize, u64)>,
    /// Model requests made for the turn that failed, and where they went, for the failure
    /// line.
    failed_requests: u32,
    /// Where the failed turn's requests went (the failure line names it).
    target: String,
    /// Compaction summaries requested so far (they number their request ids).
    summaries: u32,
    /// Tool calls that keep failing (`--max-repeated-failures`).
    failures: failures::RepeatedFailures,
    /// The conversation as sent, each message converted once (cleared when it is rewritten).
    wire: WireMessages,
}

struct Session {
    config: RunConfig,
    emitter: Emitter,
    session_id: SessionId,
    started: Instant,
    /// The tools offered now: the run's own, then the extensions' late ones.
    tools: ToolSet,
    /// The tools fixed at the start (built-in and extension tools, narrowed by `--tools`).
    own_tools: ToolSet,
    /// Each extension's latest late tools, by its place in the extension list.
    late_tools: Vec<Vec<Arc<dyn crate::tools::Tool>>>,
    tool_ctx: ToolContext,
    warnings: Vec<String>,
    agent_started: bool,
    recorder: Option<Arc<Recorder>>,
    /// The session file, appended to as messages complete.
    session: Option<crate::session::SessionWriter>,
    /// Outputs that could not be written in full, reported at the end.
    output_errors: Vec<OutputError>,
    request_ids: RequestIds,
    /// The conversation, usage and budgets, and the bookkeeping of the turns.
    state: RunState,
    /// Starts the child runs the run's `task` calls ask for.
    children: Arc<children::ChildHost>,
}

/// What a compaction's summary request needs from the loop.
struct Summarizer<'a> {
    transport: &'a dyn Transport,
    decorators: &'a [Arc<dyn crate::llm::RequestDecorator>],
    retry: &'a RetryPolicy,
    provider: &'a str,
    model: &'a str,
    max_tokens_field: &'static str,
    system_chars: usize,
}

/// How the loop ended, before it is written out.
#[derive(Debug)]
enum Ending {
    Finished(RunStopReason),
    Failed(FatalError, RunStopReason),
    Aborted,
    MaxTurns,
    /// A tool-call, token or cost budget is used up.
    Budget(LimitKind),
    /// The same call of `tool` failed `failures` times (`--max-repeated-failures`).
    RepeatedFailures {
        tool: String,
        failures: u32,
    },
}

impl Session {
    fn new(mut config: RunConfig, emitter: Emitter, session_id: SessionId, tools: ToolSet) -> Self {
        let (session, history, prior_entries) = match config.session.take() {
            Some(setup) => (setup.writer, setup.history, setup.prior_entries),
            None => (None, Vec::new(), 0),
        };
        let request_ids = RequestIds::new(&session_id, prior_entries);
        let mut services = RunServices::new(
            config.control.clone(),
            config.limits.timeout.map(|t| config.budget_start + t),
            BudgetLimits {
                tool_calls: config.limits.max_tool_calls,
                tokens: config.limits.max_total_tokens,
                cost: config.limits.max_cost,
            },
        );
        if let Some(approver) = config.extensions.iter().find_map(|e| e.approver()) {
            services = services.with_approver(approver);
        }
        let files = config
            .parent
            .as_ref()
            .map_or_else(FileLocks::default, |parent| parent.files.clone());
        let children = Arc::new(children::ChildHost::new(
            &config,
            &tools,
            &emitter,
            &session_id,
            services.clone(),
            files.clone(),
            session
                .as_ref()
                .and_then(|writer| writer.path().parent())
                .map(std::path::Path::to_path_buf),
        ));
        let services = services.with_child_runs(children.clone());
        let tool_ctx = ToolContext {
            cwd: Arc::new(config.cwd.clone()),
            call_id: Arc::from(""),
            run: services,
            progress: Arc::new(|_| {}),
            files,
            leftovers: Leftovers::default(),
            bash: BashSettings {
                max_timeout: config.limits.bash_timeout_max,
                env: config
                    .extensions
                    .iter()
                    .flat_map(|e| e.child_env())
                    .chain(
                        config
                            .sandbox
                            .env
                            .iter()
                            .map(|(key, value)| (key.clone(), Some(value.clone()))),
                    )
                    .collect(),
                secrets: config.secrets.clone(),
                runner: config
                    .sandbox
                    .confinement
                    .as_ref()
                    .map(|c| c.runner.clone()),
                contain: config.sandbox.contain.clone(),
                ..BashSettings::default()
            },
            policy: config
                .sandbox
                .confinement
                .as_ref()
                .map(|c| c.policy.clone()),
            edit_scope: config.tools.edit_scope.clone(),
        };
        for extension in &config.extensions {
            extension.tool_context(&tool_ctx);
        }
        Session {
            late_tools: vec![Vec::new(); config.extensions.len()],
            config,
            emitter,
            session_id,
            started: Instant::now(),
            own_tools: tools.clone(),
            tools,
            tool_ctx,
            warnings: Vec::new(),
            agent_started: false,
            recorder: None,
            session,
            output_errors: Vec::new(),
            request_ids,
            state: RunState {
                messages: history,
                ..RunState::default()
            },
            children,
        }
    }

    async fn run(&mut self, prompt: String) -> RunResult {
        // A bug anywhere in the loop (or an extension hook it calls) must still end the stream
        // properly: the panic becomes an internal fatal error and `finish` writes the rest.
        let looped = AssertUnwindSafe(async {
            match self.connect_and_prepare().await {
                Ok((transport, provider, model)) => match self.broken() {
                    // What the run requires is not there: it ends before its first request.
                    Some(fatal) => Ending::Failed(fatal, RunStopReason::Error),
                    None => {
                        self.children.connected(crate::config::Connected {
                            transport: transport.clone(),
                            provider: provider.clone(),
                            model: model.clone(),
                            context_window: self.state.context_window,
                        });
                        self.agent_loop(prompt, &transport, &provider, &model).await
                    }
                },
                // Stopped while connecting (the budget ran out during model discovery): the
                // run ends like any other stopped run, not as a failure.
                Err(_) if self.config.control.is_aborted() => Ending::Aborted,
                Err(fatal) => Ending::Failed(fatal, RunStopReason::Error),
            }
        })
        .catch_unwind()
        .await;
        let ending = looped.unwrap_or_else(|panic| {
            Ending::Failed(
                FatalError {
                    kind: FatalErrorKind::Internal,
                    message: format!("internal error: {}", execute::panic_message(panic.as_ref())),
                },
                RunStopReason::Error,
            )
        });
        self.finish(ending).await
    }
}
