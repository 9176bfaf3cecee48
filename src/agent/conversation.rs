//! The start of the conversation: the plan every request shares (system prompt, tool schemas,
//! decorators, retries, price), the prompt as the first message, then the steps of
//! [`super::step`] until the run ends.

use super::step::Plan;
use super::*;

impl Session {
    pub(super) async fn agent_loop(
        &mut self,
        prompt: String,
        shared_transport: &Arc<dyn Transport>,
        provider: &str,
        model: &str,
    ) -> Ending {
        let tools = definitions(&self.tools);
        let mut plan = self.plan(shared_transport.as_ref(), provider, model, tools);
        let info = RunInfo {
            session_id: self.session_id.as_str(),
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
        self.state.stats.user_messages += 1;
        self.persist(&user);
        self.state.messages.push(user);
        let prompt_index = self.state.messages.len() - 1;
        self.run_steps(&mut plan, prompt_index).await
    }

    /// What every request of the run shares: the system prompt (its context-file cuts
    /// reported), the tool schemas (derived once per run, not once per request), the
    /// decorators, the retry policy and the price.
    fn plan<'a>(
        &mut self,
        transport: &'a dyn Transport,
        provider: &'a str,
        model: &'a str,
        tools: WireTools,
    ) -> Plan<'a> {
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
        let max_tokens_field = match &self.config.model {
            ModelSource::Http { provider, .. } => provider.max_tokens_field,
            ModelSource::Replay { .. } => "max_tokens",
        };
        Plan {
            transport,
            provider,
            model,
            system_prompt,
            tools,
            decorators: self
                .config
                .extensions
                .iter()
                .filter_map(|e| e.decorator())
                .collect(),
            retry: RetryPolicy::new(
                self.config.limits.max_retries,
                self.config.limits.retry_base_delay,
            ),
            price: self
                .config
                .price
                .clone()
                .or_else(|| self.config.prices.lookup(provider, model)),
            max_tokens_field,
            reasoning_effort: self
                .config
                .thinking
                .and_then(crate::config::ThinkingLevel::reasoning_effort),
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
            message: &self.state.messages[assistant_index],
            tool_results: results,
            serving,
        });
        for extension in &self.config.extensions {
            extension.turn_ended(turn_index);
        }
    }
}

/// The `tools` of every request: each tool's name, description and JSON Schema, as text. Built
/// in place before the first request: a built-in tool's schema is stored text
/// ([`crate::tools::Tool::parameters_text`]), so this is a few tens of microseconds, less than
/// handing it to another thread would cost.
pub(super) fn definitions(tools: &ToolSet) -> WireTools {
    let definitions: Vec<ToolDefinition<'_>> = tools
        .iter()
        .map(|tool| ToolDefinition {
            name: tool.name(),
            description: tool.description(),
            parameters: tool.parameters_text(),
        })
        .collect();
    WireTools::new(&definitions)
}
