//! The phase lifecycle inside a run: the session file the conversation is appended to,
//! compaction at the context limit, and the structured final answer of `--output-schema`.

use super::*;

impl Session {
    /// Replaces everything before the newest turn with a summary the model writes (see
    /// [`compaction`]); the events say so, and the session records it.
    pub(super) async fn compact(
        &mut self,
        reason: &str,
        with: &Summarizer<'_>,
    ) -> Result<(), FatalError> {
        let overflow = |message: String| FatalError {
            kind: FatalErrorKind::ContextOverflow,
            message,
        };
        let before = compaction::estimate(
            &self.state.messages,
            with.system_chars,
            self.state.last_known,
        );
        self.emitter.emit(&Event::CompactionStart {
            reason,
            tokens_before: before,
        });
        let Some(split) = compaction::split_point(&self.state.messages) else {
            return Err(overflow(format!(
                "about {before} tokens, and nothing before the newest turn to summarize"
            )));
        };
        let input = compaction::summary_input(&self.state.messages[..split]);
        let outcome = self.summarize(&input, with).await;
        self.state.stats.llm_requests += outcome.requests;
        self.state.stats.add_usage(&outcome.message.usage);
        if let TurnEnd::Failed(error) = &outcome.end {
            return Err(overflow(format!("the summary request failed: {error}")));
        }
        let summary = outcome.message.text();
        if summary.trim().is_empty() {
            return Err(overflow("the summary came back empty".to_string()));
        }
        let kept: Vec<Message> = self.state.messages.drain(split..).collect();
        self.state.messages = vec![compaction::user(&format!(
            "{}{summary}",
            compaction::SUMMARY_PREFIX
        ))];
        self.state.messages.extend(kept);
        self.state.wire.clear();
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.append_compaction(&summary, before)
        {
            self.session_failed(err);
        }
        for index in 1..self.state.messages.len() {
            let message = self.state.messages[index].clone();
            self.persist(&message);
        }
        self.state.last_known = None;
        let after = compaction::estimate(&self.state.messages, with.system_chars, None);
        self.emitter.emit(&Event::CompactionEnd {
            reason,
            tokens_before: before,
            tokens_after: after,
            summary: &summary,
        });
        Ok(())
    }

    /// Asks the model for a summary of `input`. The request is not part of the conversation:
    /// its deltas are not printed, and the extensions do not hear of it.
    async fn summarize(&mut self, input: &[Message], with: &Summarizer<'_>) -> TurnOutcome {
        let body = Body::whole(build_body(&RequestSpec {
            model: with.model,
            system_prompt: compaction::SUMMARIZER,
            messages: input,
            tools: &WireTools::default(),
            max_tokens: Some(4096),
            max_tokens_field: with.max_tokens_field,
            reasoning_effort: None,
            dialect: self.config.model.dialect(),
            response_schema: None,
        }));
        let quiet = Emitter::new(
            Box::new(crate::events::CollectorSink::default()),
            self.session_id.as_str(),
            false,
        );
        let ctx = TurnContext {
            emitter: &quiet,
            transport: with.transport,
            decorators: with.decorators,
            extensions: &[],
            retry: with.retry,
            idle_timeout: self.config.limits.idle_timeout,
            control: &self.config.control,
            secrets: &self.config.secrets,
            provider: with.provider,
            model: with.model,
            dialect: self.config.model.dialect(),
            price: None,
            request_id: self.request_ids.summary(self.state.summaries),
        };
        self.state.summaries += 1;
        request_assistant(&ctx, body).await
    }

    /// The model answered without tool calls: the run is done, unless `--output-schema` wants
    /// another try (then the corrective message is already in the conversation).
    pub(super) fn final_answer(&mut self, assistant_index: usize) -> Option<Ending> {
        let Some(schema) = self.config.output_schema.clone() else {
            return Some(Ending::Finished(RunStopReason::Stop));
        };
        let text = match &self.state.messages[assistant_index] {
            Message::Assistant(assistant) => assistant.text(),
            _ => String::new(),
        };
        match schema.check(&text) {
            Ok(value) => {
                self.state.structured_output = Some(value);
                Some(Ending::Finished(RunStopReason::Stop))
            }
            Err(problems) if !self.state.corrected => {
                self.state.corrected = true;
                self.add_user_message(schema.correction(&problems.to_string()));
                None
            }
            Err(problems) => Some(Ending::Failed(
                FatalError {
                    kind: FatalErrorKind::OutputSchema,
                    message: problems.to_string(),
                },
                RunStopReason::Error,
            )),
        }
    }

    /// `response_format` for the corrective turn, where the server takes one.
    pub(super) fn response_schema(&self) -> Option<&Value> {
        let schema = self.config.output_schema.as_ref()?;
        let chat = self.config.model.dialect() == crate::llm::Dialect::ChatCompletions;
        (self.state.corrected && chat).then(|| schema.schema())
    }

    /// A message the run adds to the conversation for the model (a budget note, a
    /// correction): printed, saved and sent with the next request.
    pub(super) fn add_user_message(&mut self, text: String) {
        let message = Message::User(UserMessage {
            content: vec![TextContent::text(text)],
            timestamp: now_millis(),
        });
        self.emitter
            .emit(&Event::MessageStart { message: &message });
        self.emitter.emit(&Event::MessageEnd { message: &message });
        self.persist(&message);
        self.state.messages.push(message);
    }

    /// Appends a complete message to the session file; a failure is reported once, at the end.
    pub(super) fn persist(&mut self, message: &Message) {
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.append(message)
        {
            self.session_failed(err);
        }
    }

    /// The records extensions wrote since the last call (a controller's answers, approvals,
    /// hooks' decisions), redacted: saved in the session file and handed to every extension.
    pub(super) fn keep_notes(&mut self) {
        let mut notes: Vec<crate::extension::RunNote> = self
            .config
            .extensions
            .iter()
            .flat_map(|e| e.take_notes())
            .collect();
        if notes.is_empty() {
            return;
        }
        for note in &mut notes {
            self.config.secrets.redact_value(&mut note.data);
            if let Some(writer) = &mut self.session
                && let Err(err) = writer.append_note(&note.kind, note.at_unix_ms, &note.data)
            {
                self.session_failed(err);
            }
            for extension in &self.config.extensions {
                extension.noted(note);
            }
        }
    }

    /// Starts making the session durable (turn ends, and the end of the run).
    pub(super) fn sync_session(&mut self) {
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.sync()
        {
            self.session_failed(err);
        }
    }

    /// Waits until the session is durable as far as the last sync (before a turn's tools
    /// run, and before the run ends).
    pub(super) fn session_synced(&mut self) {
        if let Some(writer) = &mut self.session
            && let Err(err) = writer.synced()
        {
            self.session_failed(err);
        }
    }

    /// The session file could not be written: nothing more is written to it (a later line
    /// after a lost one would make a session that resumes wrongly), and the run ends with
    /// `output_error`.
    fn session_failed(&mut self, err: impl std::fmt::Display) {
        if let Some(writer) = self.session.take() {
            self.output_errors
                .push(OutputError::new(OutputKind::Session, writer.path(), err));
        }
    }
}
