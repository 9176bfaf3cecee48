//! The end of every run: the closing lines (`limit_reached` / `fatal_error`, `agent_end`, the
//! extensions' summaries, `output_error` for each output that could not be written,
//! `usage_snapshot`), `--output-last-message`, the exit code and the stderr failure line.

use super::*;

impl Session {
    pub(super) async fn finish(&mut self, ending: Ending) -> RunResult {
        for extension in &self.config.extensions {
            extension.run_ending();
        }
        self.keep_notes();
        self.count_children();
        self.tool_ctx.leftovers.clean_up();
        // Durable before the run ends; the closing lines are written meanwhile.
        self.sync_session();
        let (stop_reason, fatal, limit) = self.conclude(ending);
        self.emit_ending(stop_reason, fatal.as_ref(), limit.as_ref());
        self.state.stats.duration_ms = self.started.elapsed().as_millis() as u64;
        for extension in &self.config.extensions {
            for (name, value) in extension.counters() {
                *self
                    .state
                    .stats
                    .counters
                    .entry(name.to_string())
                    .or_default() += value;
            }
        }
        let outcome = RunOutcome {
            stop_reason,
            fatal: fatal.as_ref(),
            stats: &self.state.stats,
        };
        let closing = Closing {
            emitter: &self.emitter,
            output_errors: &mut self.output_errors,
            warnings: &mut self.warnings,
        };
        closing.finish(&self.config.extensions, outcome).await;
        if let (Some(recorder), Some(path)) = (&self.recorder, &self.config.record)
            && let Some(error) = recorder.error()
        {
            self.output_errors
                .push(OutputError::new(OutputKind::Record, path, error));
        }
        let final_text = self.state.messages.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(a.text()).filter(|t| !t.is_empty()),
            _ => None,
        });
        self.write_last_message(final_text.as_deref());
        self.session_synced();
        // Each output that failed, once, before the last line; the exit code says so too.
        for error in &self.output_errors {
            self.emitter.emit(&Event::OutputError(error));
            self.warnings.push(error.message.clone());
        }
        self.emitter.emit(&Event::UsageSnapshot {
            stats: &self.state.stats,
        });
        // A run that could not start for want of what it requires is a configuration error.
        let outcome_exit = match &fatal {
            Some(fatal)
                if fatal.kind == FatalErrorKind::Dependency
                    && self.state.stats.llm_requests == 0 =>
            {
                ExitStatus::Usage
            }
            _ => self.outcome_exit(stop_reason),
        };
        let exit = if self.output_errors.is_empty() {
            outcome_exit
        } else {
            outcome_exit.with_incomplete_output()
        };
        let failure = (outcome_exit != ExitStatus::Ok)
            .then(|| self.failure_text(fatal.as_ref(), limit.as_ref()));
        RunResult {
            exit,
            session_id: self.session_id.clone(),
            stop_reason,
            final_text,
            stats: self.state.stats.clone(),
            messages: std::mem::take(&mut self.state.messages),
            records: self.emitter.records(),
            // For stderr, like `failure`.
            warnings: std::mem::take(&mut self.warnings)
                .iter()
                .map(|warning| self.config.secrets.redact(warning).into_owned())
                .collect(),
            fatal_error: fatal,
            failure,
            structured_output: self.state.structured_output.take(),
        }
    }

    /// Why the run stopped, its fatal error and the limit it reached, from how it ended.
    fn conclude(
        &self,
        ending: Ending,
    ) -> (RunStopReason, Option<FatalError>, Option<LimitReached>) {
        let limit = |limit: LimitKind| LimitReached {
            limit,
            turns: self.state.stats.turns,
            max_turns: None,
            timeout_ms: None,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            used: None,
            budget_limit: None,
            tool_name: None,
        };
        let limits = &self.config.limits;
        match ending {
            Ending::Finished(reason) => (reason, None, None),
            Ending::Failed(fatal, reason) => (reason, Some(fatal), None),
            Ending::MaxTurns => {
                let reached = LimitReached {
                    max_turns: limits.max_turns,
                    ..limit(LimitKind::MaxTurns)
                };
                (RunStopReason::MaxTurns, None, Some(reached))
            }
            Ending::Budget(kind) => {
                let (used, budget_limit) = match kind {
                    LimitKind::MaxToolCalls => (
                        f64::from(self.state.stats.tool_calls),
                        limits.max_tool_calls.map(f64::from),
                    ),
                    LimitKind::MaxTotalTokens => (
                        self.state.stats.tokens.total as f64,
                        limits.max_total_tokens.map(|t| t as f64),
                    ),
                    _ => (self.state.stats.cost, limits.max_cost),
                };
                let reached = LimitReached {
                    used: Some(used),
                    budget_limit,
                    ..limit(kind)
                };
                (RunStopReason::BudgetExceeded, None, Some(reached))
            }
            Ending::RepeatedFailures { tool, failures } => {
                let reached = LimitReached {
                    used: Some(f64::from(failures)),
                    budget_limit: limits.max_repeated_failures.map(f64::from),
                    tool_name: Some(tool),
                    ..limit(LimitKind::RepeatedFailures)
                };
                (RunStopReason::RepeatedFailures, None, Some(reached))
            }
            Ending::Aborted => match self.config.control.reason() {
                Some(AbortReason::Timeout) => {
                    let reached = LimitReached {
                        timeout_ms: limits.timeout.map(|t| t.as_millis() as u64),
                        ..limit(LimitKind::Timeout)
                    };
                    (RunStopReason::Timeout, None, Some(reached))
                }
                _ => (RunStopReason::Aborted, None, None),
            },
        }
    }

    /// `max_steps_reached` and `limit_reached`, or `fatal_error`; then `agent_end`.
    fn emit_ending(
        &self,
        stop_reason: RunStopReason,
        fatal: Option<&FatalError>,
        limit: Option<&LimitReached>,
    ) {
        if let Some(limit) = limit {
            if let (LimitKind::MaxTurns, Some(max)) = (limit.limit, limit.max_turns) {
                self.emitter.emit(&Event::MaxStepsReached {
                    max_steps: max,
                    steps: self.state.stats.turns,
                });
            }
            self.emitter.emit(&Event::LimitReached(limit));
        }
        if let Some(fatal) = fatal {
            self.emitter.emit(&Event::FatalError { error: fatal });
        }
        if self.agent_started {
            self.emitter.emit(&Event::AgentEnd {
                messages: &self.state.messages,
                stop_reason,
                will_retry: false,
                structured_output: self.state.structured_output.as_ref(),
            });
        }
    }

    /// The exit status of how the run ended, before its outputs are counted.
    fn outcome_exit(&self, stop_reason: RunStopReason) -> ExitStatus {
        match stop_reason {
            RunStopReason::Stop => ExitStatus::Ok,
            RunStopReason::Length | RunStopReason::Error => ExitStatus::Failed,
            RunStopReason::MaxTurns
            | RunStopReason::Timeout
            | RunStopReason::BudgetExceeded
            | RunStopReason::RepeatedFailures => ExitStatus::Limit,
            RunStopReason::Aborted => self
                .config
                .control
                .reason()
                .map_or(ExitStatus::Failed, AbortReason::exit_status),
        }
    }

    /// The stderr line of a run that did not succeed, redacted.
    fn failure_text(&self, fatal: Option<&FatalError>, limit: Option<&LimitReached>) -> String {
        let failure = match (fatal, limit) {
            (Some(error), _) => Failure::Fatal {
                error,
                requests: self.state.failed_requests,
                target: &self.state.target,
            },
            (None, Some(limit)) => Failure::Limit(limit),
            (None, None) => {
                Failure::Aborted(self.config.control.reason(), self.config.control.note())
            }
        };
        self.config
            .secrets
            .redact(&failure_line(failure))
            .into_owned()
    }

    /// `--output-last-message`: the final answer (the JSON with `--output-schema`), redacted;
    /// a failed write is an output error.
    fn write_last_message(&mut self, final_text: Option<&str>) {
        let Some(path) = &self.config.output_last_message else {
            return;
        };
        let answer = match &self.state.structured_output {
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

/// Where the extensions' closing lines go: printed once every extension has finished, output
/// errors kept for the end.
struct Closing<'a> {
    emitter: &'a Emitter,
    output_errors: &'a mut Vec<OutputError>,
    warnings: &'a mut Vec<String>,
}

impl Closing<'_> {
    /// The extensions' closing work (the session-final request, the tee's last batch, the
    /// telemetry export, stopping MCP servers) runs at once, so the run's end waits for the
    /// longest of it rather than for the sum; the lines come out in the extensions' order, as
    /// they would one extension after another.
    async fn finish(self, extensions: &[Arc<dyn Extension>], outcome: RunOutcome<'_>) {
        let closings = extensions.iter().map(|extension| extension.finish(outcome));
        for lines in futures_util::future::join_all(closings).await {
            for line in lines {
                match line {
                    StatusLine::OutputError(error) => self.output_errors.push(error),
                    line => {
                        if let Some(warning) = emit_status(self.emitter, line) {
                            self.warnings.push(warning);
                        }
                    }
                }
            }
        }
    }
}
