//! The conversation loop: the system prompt, then turn after turn — check the limits and the
//! context window, ask the model, run the tool calls it made — until the model answers
//! without tool calls, a limit stops it, or the run is aborted.

use super::*;

impl Session {
    pub(super) async fn agent_loop(
        &mut self,
        prompt: String,
        shared_transport: &Arc<dyn Transport>,
        provider: &str,
        model: &str,
    ) -> Ending {
        let transport = shared_transport.as_ref();
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
        let (system_prompt, context) = prompt::build(
            &self.config.prompt,
            &self.tools,
            &self.config.cwd,
            &today,
            &sections,
        );
        for cut in &context.cuts {
            self.emitter.emit(&Event::InputTruncated(cut));
            self.warnings.push(cut.message.clone());
        }
        self.warnings.extend(context.skipped);
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
            .clone()
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
            transport: shared_transport,
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
        let mut overflow_compacted = false;
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
                self.add_user_message(note.message);
            }
            let request = Summarizer {
                transport,
                decorators: &decorators,
                retry: &retry,
                provider,
                model,
                max_tokens_field,
                system_chars: system_prompt.len(),
            };
            if let Some(window) = self.context_window {
                let limit = compaction::threshold(window, self.config.limits.max_tokens);
                let estimate =
                    compaction::estimate(&self.messages, request.system_chars, self.last_known);
                if estimate > limit {
                    if let Err(fatal) = self.compact("threshold", &request).await {
                        return Ending::Failed(fatal, RunStopReason::Error);
                    }
                    let after = compaction::estimate(&self.messages, request.system_chars, None);
                    if after > limit {
                        return Ending::Failed(
                            FatalError {
                                kind: FatalErrorKind::ContextOverflow,
                                message: format!(
                                    "about {after} tokens after compaction, over the {limit} a request may use (window {window})"
                                ),
                            },
                            RunStopReason::Error,
                        );
                    }
                }
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
                secrets: &self.config.secrets,
                provider,
                model,
                dialect: self.config.model.dialect(),
                price: price.clone(),
                request_id: self.request_ids.turn(turn_index),
            };
            let requested_at = SystemTime::now();
            let outcome = request_assistant(&ctx, &body).await;
            for extension in &self.config.extensions {
                extension.assistant_finished(turn_index, &outcome.message, requested_at);
            }
            self.stats.llm_requests += outcome.requests;
            self.stats.assistant_messages += 1;
            self.stats.add_usage(&outcome.message.usage);
            let serving = outcome.serving.clone();
            if let Some(serving) = &serving {
                let usage = &outcome.message.usage;
                let prompt = usage.input + usage.cache_read + usage.cache_write;
                self.stats
                    .serving
                    .get_or_insert_default()
                    .add(serving, prompt);
            }
            let calls: Vec<_> = outcome.message.tool_calls().cloned().collect();
            self.stats.tool_calls += calls.len() as u32;
            let stop = outcome.message.stop_reason;
            let error_text = outcome.message.error_message.clone();
            // A request refused for its length: compact once, and ask again.
            if let TurnEnd::Failed(error) = &outcome.end
                && compaction::is_overflow(error)
                && !overflow_compacted
            {
                overflow_compacted = true;
                self.emitter.emit(&Event::TurnEnd {
                    turn_index,
                    message: &Message::Assistant(outcome.message),
                    tool_results: &[],
                    serving: None,
                });
                if let Err(fatal) = self.compact("overflow", &request).await {
                    return Ending::Failed(fatal, RunStopReason::Error);
                }
                turn_index += 1;
                continue;
            }
            overflow_compacted = false;
            let usage = &outcome.message.usage;
            let reported = usage.input + usage.cache_read + usage.cache_write + usage.output;
            let assistant = Message::Assistant(outcome.message);
            self.persist(&assistant);
            self.messages.push(assistant);
            let assistant_index = self.messages.len() - 1;
            self.last_known = (reported > 0).then_some((self.messages.len(), reported));

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
                self.emit_turn_end(turn_index, assistant_index, &[], serving.as_ref());
                return ending;
            }

            let exec = ExecContext {
                emitter: &self.emitter,
                tools: &self.tools,
                base: &self.tool_ctx,
                control: &self.config.control,
                extensions: &self.config.extensions,
                secrets: &self.config.secrets,
                deadline: self.tool_ctx.bash.budget_end,
            };
            let results = execute_calls(&exec, &calls).await;
            self.stats.tool_results += results.len() as u32;
            let results: Vec<Message> = results.into_iter().map(Message::ToolResult).collect();
            for result in &results {
                self.persist(result);
            }
            self.sync_session();
            self.emit_turn_end(turn_index, assistant_index, &results, serving.as_ref());
            self.messages.extend(results);
            turn_index += 1;
        }
    }

    pub(super) fn emit_turn_end(
        &self,
        turn_index: u32,
        assistant_index: usize,
        results: &[Message],
        serving: Option<&Serving>,
    ) {
        self.emitter.emit(&Event::TurnEnd {
            turn_index,
            message: &self.messages[assistant_index],
            tool_results: results,
            serving,
        });
        for extension in &self.config.extensions {
            extension.turn_ended(turn_index);
        }
    }
}
