//! The end of every run: the closing lines (`limit_reached` / `fatal_error`, `agent_end`, the
//! extensions' summaries, `usage_snapshot`), the exit code, the stderr failure line, and
//! `--output-last-message`.

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
}
