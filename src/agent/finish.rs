//! The end of every run: the closing lines (`limit_reached` / `fatal_error`, `agent_end`, the
//! extensions' summaries, `output_error` for each output that could not be written,
//! `usage_snapshot`), `--output-last-message`, the exit code and the stderr failure line.

use super::*;

impl Session {
    pub(super) async fn finish(&mut self, ending: Ending) -> RunResult {
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
                match line {
                    StatusLine::OutputError(error) => self.output_errors.push(error),
                    line => {
                        if let Some(warning) = emit_status(&self.emitter, line) {
                            self.warnings.push(warning);
                        }
                    }
                }
            }
        }
        if let (Some(recorder), Some(path)) = (&self.recorder, &self.config.record)
            && let Some(error) = recorder.error()
        {
            self.output_errors
                .push(OutputError::new(OutputKind::Record, path, error));
        }
        let final_text = self.messages.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(a.text()).filter(|t| !t.is_empty()),
            _ => None,
        });
        self.write_last_message(final_text.as_deref());
        // Each output that failed, once, before the last line; the exit code says so too.
        for error in &self.output_errors {
            self.emitter.emit(&Event::OutputError(error));
            self.warnings.push(error.message.clone());
        }
        self.emitter
            .emit(&Event::UsageSnapshot { stats: &self.stats });

        let outcome_exit = match stop_reason {
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
        let exit = if self.output_errors.is_empty() {
            outcome_exit
        } else {
            outcome_exit.with_incomplete_output()
        };
        let failure = match (&fatal, &limit) {
            _ if outcome_exit == ExitStatus::Ok => None,
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
        RunResult {
            exit,
            session_id: self.session_id.clone(),
            stop_reason,
            final_text,
            stats: self.stats.clone(),
            messages: std::mem::take(&mut self.messages),
            records: self.emitter.records(),
            // For stderr, like `failure`.
            warnings: std::mem::take(&mut self.warnings)
                .iter()
                .map(|warning| self.config.secrets.redact(warning).into_owned())
                .collect(),
            fatal_error: fatal,
            failure,
            structured_output: self.structured_output.take(),
        }
    }

    /// `--output-last-message`: the final answer (the JSON with `--output-schema`), redacted;
    /// a failed write is an output error.
    fn write_last_message(&mut self, final_text: Option<&str>) {
        let Some(path) = &self.config.output_last_message else {
            return;
        };
        let answer = match &self.structured_output {
            Some(value) => serde_json::to_string_pretty(value).unwrap_or_default() + "\n",
            None => final_text.unwrap_or_default().to_string(),
        };
        let answer = self.config.secrets.redact(&answer).into_owned();
        if let Err(err) = std::fs::write(path, answer) {
            self.output_errors
                .push(OutputError::new(OutputKind::OutputLastMessage, path, err));
        }
    }
}
