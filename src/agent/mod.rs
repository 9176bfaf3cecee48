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
mod ending;
mod execute;
mod prompt;
mod streaming;
mod turn;

pub use crate::control::{AbortReason, RunControl};
pub use crate::extension::{
    Exchange, Extension, Finish, RunInfo, RunOutcome, StatusLine, ToolEnding,
};
pub use prompt::context_files;

use crate::config::{HttpProvider, ModelSource, RunConfig};
use crate::events::{
    Emitter, Event, EventSink, FatalError, FatalErrorKind, LimitKind, LimitReached, Message,
    RunStopReason, SessionHeader, StopReason, TextContent, UsageStats, UserMessage, now_millis,
    now_rfc3339,
};
use crate::exit::ExitStatus;
use crate::llm::fixture::{
    FIXTURE_VERSION, FixtureHeader, Recorder, RecordingTransport, ReplayTransport,
};
use crate::llm::{
    HttpTransport, RequestSpec, RetryPolicy, ToolDefinition, Transport, build_body, first_model,
    http_client, tools_json,
};
use crate::tools::{BashSettings, FileLocks, Leftovers, ToolContext, ToolSet};
use ending::{Failure, failure_line};
use execute::{ExecContext, execute_calls};
use turn::{TurnContext, TurnEnd, request_assistant};

/// How a run went, for in-process callers (the binary maps it to an exit code).
#[derive(Debug, Clone)]
pub struct RunResult {
    /// How the process should exit; [`ExitStatus::Ok`] when the model finished.
    pub exit: ExitStatus,
    pub session_id: String,
    pub stop_reason: RunStopReason,
    /// The text of the last assistant message that had any.
    pub final_text: Option<String>,
    pub stats: UsageStats,
    pub messages: Vec<Message>,
    /// Every emitted line as JSON (when `retain_records` is set).
    pub records: Vec<Value>,
    pub warnings: Vec<String>,
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
        Err(message) => return usage_failure(session_id, message),
    };
    let emitter = Emitter::new(sink, session_id.clone(), config.retain_records);
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
    let mut header = SessionHeader::new(&session_id, &started_at, &cwd);
    header.session_file = session_file.as_deref();
    header.resumed_from = config.session.as_ref().and_then(|s| s.resumed.as_ref());
    emitter.header(&header);
    emitter.emit(&Event::SandboxStatus(&config.sandbox.status(&config.cwd)));
    let mut warnings = config.sandbox.warnings();
    for extension in &config.extensions {
        warnings.extend(
            extension
                .status()
                .into_iter()
                .filter_map(|line| emit_status(&emitter, line)),
        );
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
        StatusLine::Warning(warning) => return Some(warning),
    }
    None
}

fn usage_failure(session_id: String, message: String) -> RunResult {
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

struct Session {
    config: RunConfig,
    emitter: Emitter,
    session_id: String,
    started: Instant,
    tools: ToolSet,
    tool_ctx: ToolContext,
    messages: Vec<Message>,
    stats: UsageStats,
    warnings: Vec<String>,
    agent_started: bool,
    recorder: Option<Arc<Recorder>>,
    /// The session file, appended to as messages complete.
    session: Option<crate::session::SessionWriter>,
    /// Which budgets have had their wrap-up note.
    budgets: budget::Budgets,
    /// The final answer as JSON (`--output-schema`), once valid.
    structured_output: Option<Value>,
    /// The corrective turn for an invalid structured answer was used.
    corrected: bool,
    /// Model requests made for the turn that failed, and where they went, for the failure
    /// line.
    failed_requests: u32,
    target: String,
}

/// How the loop ended, before it is written out.
enum Ending {
    Finished(RunStopReason),
    Failed(FatalError, RunStopReason),
    Aborted,
    MaxTurns,
    /// A tool-call, token or cost budget is used up.
    Budget(LimitKind),
}

impl Session {
    fn new(mut config: RunConfig, emitter: Emitter, session_id: String, tools: ToolSet) -> Self {
        let (session, history) = match config.session.take() {
            Some(setup) => (setup.writer, setup.history),
            None => (None, Vec::new()),
        };
        let tool_ctx = ToolContext {
            cwd: Arc::new(config.cwd.clone()),
            cancel: config.control.token().clone(),
            progress: Arc::new(|_| {}),
            files: FileLocks::default(),
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
                budget_end: config.limits.timeout.map(|t| config.budget_start + t),
                secrets: config.secrets.clone(),
                ..BashSettings::default()
            },
        };
        Session {
            config,
            emitter,
            session_id,
            started: Instant::now(),
            tools,
            tool_ctx,
            messages: history,
            stats: UsageStats::default(),
            warnings: Vec::new(),
            agent_started: false,
            recorder: None,
            session,
            budgets: budget::Budgets::default(),
            structured_output: None,
            corrected: false,
            failed_requests: 0,
            target: String::new(),
        }
    }

    async fn run(&mut self, prompt: String) -> RunResult {
        // A bug anywhere in the loop (or an extension hook it calls) must still end the stream
        // properly: the panic becomes an internal fatal error and `finish` writes the rest.
        let looped = AssertUnwindSafe(async {
            match self.connect().await {
                Ok((transport, provider, model)) => {
                    self.agent_loop(prompt, transport.as_ref(), &provider, &model)
                        .await
                }
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

    /// Picks the transport and the model name (discovering it when asked to).
    async fn connect(&mut self) -> Result<(Arc<dyn Transport>, String, String), FatalError> {
        let provider = self.config.model.provider_name().to_string();
        let (transport, model): (Arc<dyn Transport>, String) = match &self.config.model {
            ModelSource::Replay { fixture, .. } => (
                Arc::new(ReplayTransport::new(fixture)),
                fixture.header.model.clone(),
            ),
            ModelSource::Http {
                provider,
                endpoint,
                model,
            } => {
                let internal = |message: String| FatalError {
                    kind: FatalErrorKind::Internal,
                    message,
                };
                if let (None, Some(var)) = (&endpoint.api_key, &endpoint.required_key) {
                    return Err(FatalError {
                        kind: FatalErrorKind::Auth,
                        message: format!("{var} is not set"),
                    });
                }
                // Plain-http endpoints (a local Dynamo) need no CA store.
                let tls = endpoint.base_url.starts_with("https://");
                let client = http_client(self.config.limits.connect_timeout, tls)
                    .map_err(|e| internal(e.to_string()))?;
                let model = match model {
                    Some(model) => model.clone(),
                    None => self.discover(&client, endpoint).await?,
                };
                let key = endpoint.api_key.clone();
                let transport = match provider {
                    HttpProvider::Anthropic => {
                        HttpTransport::anthropic(client, &endpoint.base_url, key)
                    }
                    HttpProvider::Dynamo | HttpProvider::OpenAi | HttpProvider::Compatible => {
                        HttpTransport::with_client(client, &endpoint.base_url, key)
                    }
                };
                (Arc::new(transport), model)
            }
        };
        let transport = match &self.config.record {
            None => transport,
            Some(path) => {
                let header = FixtureHeader {
                    worker_fixture: FIXTURE_VERSION,
                    provider: provider.clone(),
                    model: model.clone(),
                    recorded_at: Some(now_rfc3339()),
                    api: Some(self.config.model.dialect().api_name().to_string()),
                };
                let secrets = self.config.secrets.clone();
                let recorder =
                    Recorder::create(path, &header, secrets).map_err(|err| FatalError {
                        kind: FatalErrorKind::Internal,
                        message: format!("cannot write --record file {}: {err}", path.display()),
                    })?;
                let recorder = Arc::new(recorder);
                self.recorder = Some(recorder.clone());
                Arc::new(RecordingTransport::new(transport, recorder))
            }
        };
        self.target = transport.target();
        Ok((transport, provider, model))
    }

    /// `dynamo/default`: the first model the server lists, retried like a chat request.
    async fn discover(
        &self,
        client: &reqwest::Client,
        endpoint: &crate::config::Endpoint,
    ) -> Result<String, FatalError> {
        let policy = RetryPolicy::new(
            self.config.limits.max_retries,
            self.config.limits.retry_base_delay,
        );
        let control = &self.config.control;
        let fatal = |message: String| FatalError {
            kind: FatalErrorKind::ModelDiscovery,
            message,
        };
        let mut attempt = 0;
        loop {
            let found = tokio::select! {
                _ = control.aborted() => return Err(fatal("aborted during model discovery".into())),
                found = first_model(client, &endpoint.base_url, endpoint.api_key.as_deref(), crate::config::defaults::DISCOVERY_TIMEOUT) => found,
            };
            let error = match found {
                Ok(model) => return Ok(model),
                Err(error) => error,
            };
            if !error.transient || attempt >= policy.max_retries {
                let tries = match attempt {
                    0 => String::new(),
                    n => format!(" ({} attempts)", n + 1),
                };
                return Err(fatal(format!("{}{tries}", error.message)));
            }
            attempt += 1;
            tokio::select! {
                _ = control.aborted() => return Err(fatal("aborted during model discovery".into())),
                _ = tokio::time::sleep(policy.delay(attempt, None)) => {}
            }
        }
    }

    async fn agent_loop(
        &mut self,
        prompt: String,
        transport: &dyn Transport,
        provider: &str,
        model: &str,
    ) -> Ending {
        let today: String = now_rfc3339().chars().take(10).collect();
        let mut sections: Vec<String> = self
            .config
            .extensions
            .iter()
            .filter_map(|e| e.system_prompt())
            .collect();
        sections.extend(
            self.config
                .output_schema
                .as_ref()
                .map(|s| s.prompt_section()),
        );
        let system_prompt = prompt::build(
            &self.config.prompt,
            &self.tools,
            &self.config.cwd,
            &today,
            &sections,
        );
        // Schemas are derived once per run, not once per request.
        let definitions: Vec<ToolDefinition<'_>> = self
            .tools
            .iter()
            .map(|tool| ToolDefinition {
                name: tool.name(),
                description: tool.description(),
                parameters: tool.parameters(),
            })
            .collect();
        let tools_json = tools_json(&definitions);
        let price = self
            .config
            .price
            .or_else(|| self.config.prices.lookup(provider, model));
        let retry = RetryPolicy::new(
            self.config.limits.max_retries,
            self.config.limits.retry_base_delay,
        );
        let (max_tokens_field, reasoning_effort) = match &self.config.model {
            ModelSource::Http {
                provider: HttpProvider::OpenAi,
                ..
            } => (
                "max_completion_tokens",
                self.config.thinking.and_then(|t| t.reasoning_effort()),
            ),
            _ => (
                "max_tokens",
                self.config.thinking.and_then(|t| t.reasoning_effort()),
            ),
        };

        let decorators: Vec<_> = self
            .config
            .extensions
            .iter()
            .filter_map(|e| e.decorator())
            .collect();
        let info = RunInfo {
            session_id: &self.session_id,
            provider,
            model,
            prompt: &prompt,
        };
        for extension in &self.config.extensions {
            extension.run_started(info);
        }
        self.emitter.emit(&Event::AgentStart);
        self.agent_started = true;
        let user = Message::User(UserMessage {
            content: vec![TextContent::text(prompt)],
            timestamp: now_millis(),
        });
        self.stats.user_messages += 1;
        self.persist(&user);
        self.messages.push(user);
        let prompt_index = self.messages.len() - 1;

        let mut turn_index = 0u32;
        loop {
            if self.config.control.is_aborted() {
                return Ending::Aborted;
            }
            if self
                .config
                .limits
                .max_turns
                .is_some_and(|max| turn_index >= max)
            {
                return Ending::MaxTurns;
            }
            if let Some(kind) = budget::Budgets::exhausted(&self.config.limits, &self.stats) {
                return Ending::Budget(kind);
            }
            let notes = self.budgets.warnings(
                &self.config.limits,
                &self.stats,
                turn_index,
                self.config.budget_start.elapsed(),
            );
            for note in notes {
                self.emitter.emit(&Event::BudgetWarning(&note));
                let message = Message::User(UserMessage {
                    content: vec![TextContent::text(note.message)],
                    timestamp: now_millis(),
                });
                self.emitter
                    .emit(&Event::MessageStart { message: &message });
                self.emitter.emit(&Event::MessageEnd { message: &message });
                self.persist(&message);
                self.messages.push(message);
            }
            self.emitter.emit(&Event::TurnStart { turn_index });
            for extension in &self.config.extensions {
                extension.turn_started(turn_index);
            }
            self.stats.turns += 1;
            if turn_index == 0 {
                self.emitter.emit(&Event::MessageStart {
                    message: &self.messages[prompt_index],
                });
                self.emitter.emit(&Event::MessageEnd {
                    message: &self.messages[prompt_index],
                });
            }
            let body = build_body(&RequestSpec {
                model,
                system_prompt: &system_prompt,
                messages: &self.messages,
                tools: &tools_json,
                max_tokens: self.config.limits.max_tokens,
                max_tokens_field,
                reasoning_effort,
                dialect: self.config.model.dialect(),
                response_schema: self.response_schema(),
            });
            let ctx = TurnContext {
                emitter: &self.emitter,
                transport,
                decorators: &decorators,
                extensions: &self.config.extensions,
                retry: &retry,
                idle_timeout: self.config.limits.idle_timeout,
                control: &self.config.control,
                provider,
                model,
                dialect: self.config.model.dialect(),
                price,
            };
            let requested_at = SystemTime::now();
            let outcome = request_assistant(&ctx, &body).await;
            for extension in &self.config.extensions {
                extension.assistant_finished(turn_index, &outcome.message, requested_at);
            }
            self.stats.llm_requests += outcome.requests;
            self.stats.assistant_messages += 1;
            self.stats.add_usage(&outcome.message.usage);
            let calls: Vec<_> = outcome.message.tool_calls().cloned().collect();
            self.stats.tool_calls += calls.len() as u32;
            let stop = outcome.message.stop_reason;
            let error_text = outcome.message.error_message.clone();
            let assistant = Message::Assistant(outcome.message);
            self.persist(&assistant);
            self.messages.push(assistant);
            let assistant_index = self.messages.len() - 1;

            self.failed_requests = outcome.requests;
            let proceed = match outcome.end {
                TurnEnd::Aborted => Some(Ending::Aborted),
                TurnEnd::Failed(error) => Some(Ending::Failed(
                    FatalError { kind: error.kind(), message: error.to_string() },
                    RunStopReason::Error,
                )),
                TurnEnd::Completed => match stop {
                    StopReason::Length => Some(Ending::Failed(
                        FatalError {
                            kind: FatalErrorKind::Length,
                            message: "the model stopped at its output-token limit (finish_reason: length)".to_string(),
                        },
                        RunStopReason::Length,
                    )),
                    StopReason::Error => Some(Ending::Failed(
                        FatalError {
                            kind: FatalErrorKind::ContentFilter,
                            message: error_text.unwrap_or_else(|| "the model server reported an error".to_string()),
                        },
                        RunStopReason::Error,
                    )),
                    _ if calls.is_empty() => self.final_answer(assistant_index),
                    _ => None,
                },
            };
            if let Some(ending) = proceed {
                self.emit_turn_end(turn_index, assistant_index, &[]);
                return ending;
            }

            let exec = ExecContext {
                emitter: &self.emitter,
                tools: &self.tools,
                base: &self.tool_ctx,
                control: &self.config.control,
                extensions: &self.config.extensions,
                secrets: &self.config.secrets,
            };
            let results = execute_calls(&exec, &calls).await;
            self.stats.tool_results += results.len() as u32;
            let results: Vec<Message> = results.into_iter().map(Message::ToolResult).collect();
            for result in &results {
                self.persist(result);
            }
            self.sync_session();
            self.emit_turn_end(turn_index, assistant_index, &results);
            self.messages.extend(results);
            turn_index += 1;
        }
    }

    /// The model answered without tool calls: the run is done, unless `--output-schema` wants
    /// another try (then the corrective message is already in the conversation).
    fn final_answer(&mut self, assistant_index: usize) -> Option<Ending> {
        let Some(schema) = self.config.output_schema.clone() else {
            return Some(Ending::Finished(RunStopReason::Stop));
        };
        let text = match &self.messages[assistant_index] {
            Message::Assistant(assistant) => assistant.text(),
            _ => String::new(),
        };
        match schema.check(&text) {
            Ok(value) => {
                self.structured_output = Some(value);
                Some(Ending::Finished(RunStopReason::Stop))
            }
            Err(problems) if !self.corrected => {
                self.corrected = true;
                let message = Message::User(UserMessage {
                    content: vec![TextContent::text(schema.correction(&problems))],
                    timestamp: now_millis(),
                });
                self.emitter
                    .emit(&Event::MessageStart { message: &message });
                self.emitter.emit(&Event::MessageEnd { message: &message });
                self.persist(&message);
                self.messages.push(message);
                None
            }
            Err(problems) => Some(Ending::Failed(
                FatalError {
                    kind: FatalErrorKind::OutputSchema,
                    message: problems,
                },
                RunStopReason::Error,
            )),
        }
    }

    /// `response_format` for the corrective turn, where the server takes one.
    fn response_schema(&self) -> Option<&Value> {
        let schema = self.config.output_schema.as_ref()?;
        let chat = self.config.model.dialect() == crate::llm::Dialect::ChatCompletions;
        (self.corrected && chat).then(|| schema.schema())
    }

    /// Appends a complete message to the session file; a failure is reported once, at the end.
    fn persist(&mut self, message: &Message) {
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.append(message)
        {
            self.warnings.push(format!(
                "session file {}: {err}; the rest of the run is not saved",
                writer.path().display()
            ));
            self.session = None;
        }
    }

    /// Makes the session durable (turn ends, and the end of the run).
    fn sync_session(&mut self) {
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.sync()
        {
            self.warnings
                .push(format!("session file {}: {err}", writer.path().display()));
            self.session = None;
        }
    }

    fn emit_turn_end(&self, turn_index: u32, assistant_index: usize, results: &[Message]) {
        self.emitter.emit(&Event::TurnEnd {
            turn_index,
            message: &self.messages[assistant_index],
            tool_results: results,
        });
        for extension in &self.config.extensions {
            extension.turn_ended(turn_index);
        }
    }

    async fn finish(&mut self, ending: Ending) -> RunResult {
        self.tool_ctx.leftovers.clean_up();
        self.sync_session();
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        let (stop_reason, fatal, limit) = match ending {
            Ending::Finished(reason) => (reason, None, None),
            Ending::Failed(fatal, reason) => (reason, Some(fatal), None),
            Ending::MaxTurns => (
                RunStopReason::MaxTurns,
                None,
                Some(LimitReached {
                    limit: LimitKind::MaxTurns,
                    turns: self.stats.turns,
                    max_turns: self.config.limits.max_turns,
                    timeout_ms: None,
                    elapsed_ms,
                    used: None,
                    budget_limit: None,
                }),
            ),
            Ending::Budget(kind) => {
                let limits = &self.config.limits;
                let (used, limit) = match kind {
                    LimitKind::MaxToolCalls => (
                        f64::from(self.stats.tool_calls),
                        limits.max_tool_calls.map(f64::from),
                    ),
                    LimitKind::MaxTotalTokens => (
                        self.stats.tokens.total as f64,
                        limits.max_total_tokens.map(|t| t as f64),
                    ),
                    _ => (self.stats.cost, limits.max_cost),
                };
                (
                    RunStopReason::Budget,
                    None,
                    Some(LimitReached {
                        limit: kind,
                        turns: self.stats.turns,
                        max_turns: None,
                        timeout_ms: None,
                        elapsed_ms,
                        used: Some(used),
                        budget_limit: limit,
                    }),
                )
            }
            Ending::Aborted => match self.config.control.reason() {
                Some(AbortReason::Timeout) => (
                    RunStopReason::Timeout,
                    None,
                    Some(LimitReached {
                        limit: LimitKind::Timeout,
                        turns: self.stats.turns,
                        max_turns: None,
                        timeout_ms: self.config.limits.timeout.map(|t| t.as_millis() as u64),
                        elapsed_ms,
                        used: None,
                        budget_limit: None,
                    }),
                ),
                _ => (RunStopReason::Aborted, None, None),
            },
        };
        if let Some(limit) = &limit {
            if let (LimitKind::MaxTurns, Some(max)) = (limit.limit, limit.max_turns) {
                self.emitter.emit(&Event::MaxStepsReached {
                    max_steps: max,
                    steps: self.stats.turns,
                });
            }
            self.emitter.emit(&Event::LimitReached(limit));
        }
        if let Some(fatal) = &fatal {
            self.emitter.emit(&Event::FatalError { error: fatal });
        }
        if self.agent_started {
            self.emitter.emit(&Event::AgentEnd {
                messages: &self.messages,
                stop_reason,
                will_retry: false,
                structured_output: self.structured_output.as_ref(),
            });
        }
        self.stats.duration_ms = self.started.elapsed().as_millis() as u64;
        for extension in &self.config.extensions {
            for (name, value) in extension.counters() {
                *self.stats.counters.entry(name.to_string()).or_default() += value;
            }
        }
        let outcome = RunOutcome {
            stop_reason,
            fatal: fatal.as_ref(),
            stats: &self.stats,
        };
        for extension in &self.config.extensions {
            for line in extension.finish(outcome).await {
                if let Some(warning) = emit_status(&self.emitter, line) {
                    self.warnings.push(warning);
                }
            }
        }
        self.emitter
            .emit(&Event::UsageSnapshot { stats: &self.stats });

        if let Some(error) = self.recorder.as_ref().and_then(|r| r.error()) {
            self.warnings
                .push(format!("--record: could not write the fixture: {error}"));
        }
        let exit = match stop_reason {
            RunStopReason::Stop => ExitStatus::Ok,
            RunStopReason::Length | RunStopReason::Error => ExitStatus::Failed,
            RunStopReason::MaxTurns | RunStopReason::Timeout | RunStopReason::Budget => {
                ExitStatus::Limit
            }
            RunStopReason::Aborted => self
                .config
                .control
                .reason()
                .map_or(ExitStatus::Failed, AbortReason::exit_status),
        };
        let failure = match (&fatal, &limit) {
            _ if exit == ExitStatus::Ok => None,
            (Some(error), _) => Some(Failure::Fatal {
                error,
                requests: self.failed_requests,
                target: &self.target,
            }),
            (None, Some(limit)) => Some(Failure::Limit(limit)),
            (None, None) => Some(Failure::Aborted(self.config.control.reason())),
        }
        .map(|failure| {
            self.config
                .secrets
                .redact(&failure_line(failure))
                .into_owned()
        });
        let final_text = self.messages.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(a.text()).filter(|t| !t.is_empty()),
            _ => None,
        });
        if let Some(path) = &self.config.output_last_message {
            let answer = match &self.structured_output {
                Some(value) => serde_json::to_string_pretty(value).unwrap_or_default() + "\n",
                None => final_text.clone().unwrap_or_default(),
            };
            let answer = self.config.secrets.redact(&answer).into_owned();
            if let Err(err) = std::fs::write(path, answer) {
                self.warnings
                    .push(format!("--output-last-message {}: {err}", path.display()));
            }
        }
        RunResult {
            exit,
            session_id: self.session_id.clone(),
            stop_reason,
            final_text,
            stats: self.stats.clone(),
            messages: std::mem::take(&mut self.messages),
            records: self.emitter.records(),
            warnings: std::mem::take(&mut self.warnings),
            fatal_error: fatal,
            failure,
            structured_output: self.structured_output.take(),
        }
    }
}
