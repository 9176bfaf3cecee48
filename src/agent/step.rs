//! The run as a state machine. The loop holds a [`Step`] and advances it until it is
//! [`Step::Finish`]; each step does one thing and returns the next, so what happens next is a
//! value that can be logged, tested and interrupted.
//!
//! ```text
//!            ┌──────────────── Tools ◄──────────┐
//!            ▼                                  │ (tool calls)
//!  start ─► Check ─► Request ───────────────────┤
//!            │  │       │ refused for its length│ (final answer, error, limit)
//!            │  ▼       ▼                       ▼
//!            │ Compact(Threshold) ─► Request   Finish
//!            │         Compact(Overflow) ─► Check
//!            └─► Finish (abort, max turns, budget)
//! ```
//!
//! `Check` is the safe point: nothing is in flight, the conversation is whole, and an abort
//! (or anything else a controller asks) is read there before the next request. The decisions
//! themselves are plain functions ([`stop_before_turn`], [`judge`]) tested without a model.

use super::*;
use crate::config::Limits;
use crate::events::ToolCall;
use crate::llm::RequestDecorator;
use crate::llm::pricing::Price;

/// What the loop does next.
#[derive(Debug)]
pub(super) enum Step {
    /// Stop for an abort, a limit or a budget; add the budget notes; compact when the
    /// conversation is over the window's threshold.
    Check,
    /// Summarize the older conversation, then go on.
    Compact(Compaction),
    /// Ask the model for the next assistant message.
    Request,
    /// Run the tool calls of the assistant message just kept.
    Tools(Pending),
    /// The run is over.
    Finish(Ending),
}

/// Why the conversation is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compaction {
    /// The estimate is over the threshold, before a request: then the request.
    Threshold,
    /// The server refused a request for its length: then the turn is asked again.
    Overflow,
}

impl Compaction {
    /// The `reason` of the `compaction_start` event.
    fn reason(self) -> &'static str {
        match self {
            Compaction::Threshold => "threshold",
            Compaction::Overflow => "overflow",
        }
    }
}

/// An assistant message's tool calls, waiting to run.
#[derive(Debug)]
pub(super) struct Pending {
    calls: Vec<ToolCall>,
    assistant_index: usize,
    serving: Option<Serving>,
}

/// What carries over from one step to the next.
#[derive(Debug)]
pub(super) struct Turn {
    /// The turn about to be asked (or being asked), from 0.
    index: u32,
    /// The last request was refused for its length and the conversation compacted for it:
    /// a second refusal in a row fails the run.
    overflow_compacted: bool,
    /// Where the prompt is in the conversation (its events go out with the first turn).
    prompt_index: usize,
}

/// What every request of the run shares, fixed before the first.
pub(super) struct Plan<'a> {
    pub transport: &'a dyn Transport,
    pub provider: &'a str,
    pub model: &'a str,
    pub system_prompt: String,
    pub tools: WireTools,
    pub decorators: Vec<Arc<dyn RequestDecorator>>,
    pub retry: RetryPolicy,
    pub price: Option<Price>,
    /// `max_tokens` or `max_completion_tokens` (OpenAI).
    pub max_tokens_field: &'static str,
    pub reasoning_effort: Option<&'static str>,
}

impl Plan<'_> {
    fn summarizer(&self) -> Summarizer<'_> {
        Summarizer {
            transport: self.transport,
            decorators: &self.decorators,
            retry: &self.retry,
            provider: self.provider,
            model: self.model,
            max_tokens_field: self.max_tokens_field,
            system_chars: self.system_prompt.len(),
        }
    }
}

/// Why the run must stop before its next turn, if it must: an abort first, then the turn
/// limit, then the tool-call, token and cost budgets.
pub(super) fn stop_before_turn(
    aborted: bool,
    limits: &Limits,
    stats: &UsageStats,
    turn: u32,
) -> Option<Ending> {
    if aborted {
        return Some(Ending::Aborted);
    }
    if limits.max_turns.is_some_and(|max| turn >= max) {
        return Some(Ending::MaxTurns);
    }
    budget::Budgets::exhausted(limits, stats).map(Ending::Budget)
}

/// What a kept answer leads to.
#[derive(Debug)]
pub(super) enum Answer {
    /// The run ends here.
    Ending(Ending),
    /// An answer without tool calls: the final one, unless `--output-schema` asks again.
    Final,
    /// Tool calls to run.
    Calls,
}

/// Judges a turn's outcome: how its request ended, why the model stopped, whether it called
/// tools.
pub(super) fn judge(
    end: TurnEnd,
    stop: StopReason,
    error_text: Option<String>,
    has_calls: bool,
) -> Answer {
    let failed = |kind, message, reason| {
        Answer::Ending(Ending::Failed(FatalError { kind, message }, reason))
    };
    match end {
        TurnEnd::Aborted => Answer::Ending(Ending::Aborted),
        TurnEnd::Failed(error) => failed(error.kind(), error.to_string(), RunStopReason::Error),
        TurnEnd::Completed => match stop {
            StopReason::Length => failed(
                FatalErrorKind::Length,
                "the model stopped at its output-token limit (finish_reason: length)".to_string(),
                RunStopReason::Length,
            ),
            StopReason::Error => failed(
                FatalErrorKind::ContentFilter,
                error_text.unwrap_or_else(|| "the model server reported an error".to_string()),
                RunStopReason::Error,
            ),
            _ if has_calls => Answer::Calls,
            _ => Answer::Final,
        },
    }
}

impl Session {
    /// Advances the run from its first check to its end.
    pub(super) async fn run_steps(&mut self, plan: &mut Plan<'_>, prompt_index: usize) -> Ending {
        let mut turn = Turn {
            index: 0,
            overflow_compacted: false,
            prompt_index,
        };
        let mut step = Step::Check;
        loop {
            // What tools read of the budget is the run's totals as of this step.
            self.tool_ctx.run.record_usage(&self.state.stats);
            step = match step {
                Step::Check => self.check(plan, &turn),
                Step::Compact(why) => self.compact_for(plan, why, &mut turn).await,
                Step::Request => self.request(plan, &mut turn).await,
                Step::Tools(pending) => self.run_tools(pending, &mut turn).await,
                Step::Finish(ending) => return ending,
            };
        }
    }

    fn check(&mut self, plan: &Plan<'_>, turn: &Turn) -> Step {
        self.keep_notes();
        self.count_children();
        let aborted = self.config.control.is_aborted();
        if let Some(ending) =
            stop_before_turn(aborted, &self.config.limits, &self.state.stats, turn.index)
        {
            return Step::Finish(ending);
        }
        if let Some(fatal) = self.broken() {
            return Step::Finish(Ending::Failed(fatal, RunStopReason::Error));
        }
        if let Some((tool, failures)) = self
            .config
            .limits
            .max_repeated_failures
            .and_then(|max| self.state.failures.reached(max))
        {
            return Step::Finish(Ending::RepeatedFailures {
                tool: tool.to_string(),
                failures,
            });
        }
        // Steering from outside joins the conversation here, before the next request (the
        // first request goes out with the prompt alone).
        if turn.index > 0 {
            let steering: Vec<String> = self
                .config
                .extensions
                .iter()
                .flat_map(|e| e.take_steering())
                .collect();
            for message in steering {
                self.add_user_message(message);
            }
        }
        let elapsed = self.config.budget_start.elapsed();
        let notes = self.state.budgets.warnings(
            &self.config.limits,
            &self.state.stats,
            turn.index,
            elapsed,
        );
        for note in notes {
            self.emitter.emit(&Event::BudgetWarning(&note));
            self.add_user_message(note.message);
        }
        let Some(limit) = self.compaction_limit() else {
            return Step::Request;
        };
        let system_chars = plan.system_prompt.len();
        if compaction::estimate(&self.state.messages, system_chars, self.state.last_known) > limit {
            Step::Compact(Compaction::Threshold)
        } else {
            Step::Request
        }
    }

    /// The estimated tokens a request may reach before the conversation is compacted.
    fn compaction_limit(&self) -> Option<u64> {
        let window = self.state.context_window?;
        Some(compaction::threshold(window, self.config.limits.max_tokens))
    }

    async fn compact_for(&mut self, plan: &Plan<'_>, why: Compaction, turn: &mut Turn) -> Step {
        if let Err(fatal) = self.compact(why.reason(), &plan.summarizer()).await {
            return Step::Finish(Ending::Failed(fatal, RunStopReason::Error));
        }
        if why == Compaction::Overflow {
            turn.index += 1;
            return Step::Check;
        }
        let (Some(window), Some(limit)) = (self.state.context_window, self.compaction_limit())
        else {
            return Step::Request;
        };
        let after = compaction::estimate(&self.state.messages, plan.system_prompt.len(), None);
        if after <= limit {
            return Step::Request;
        }
        Step::Finish(Ending::Failed(
            FatalError {
                kind: FatalErrorKind::ContextOverflow,
                message: format!(
                    "about {after} tokens after compaction, over the {limit} a request may use (window {window})"
                ),
            },
            RunStopReason::Error,
        ))
    }

    async fn request(&mut self, plan: &mut Plan<'_>, turn: &mut Turn) -> Step {
        self.refresh_tools(plan).await;
        self.start_turn(turn);
        let outcome = self.ask(plan, turn.index).await;
        let calls: Vec<ToolCall> = outcome.message.tool_calls().cloned().collect();
        self.state.stats.tool_calls += calls.len() as u32;
        let refused_for_length =
            matches!(&outcome.end, TurnEnd::Failed(error) if compaction::is_overflow(error));
        if refused_for_length && !turn.overflow_compacted {
            // Compact once, and ask again.
            turn.overflow_compacted = true;
            self.emitter.emit(&Event::TurnEnd {
                turn_index: turn.index,
                message: &Message::Assistant(outcome.message),
                tool_results: &[],
                serving: None,
            });
            return Step::Compact(Compaction::Overflow);
        }
        turn.overflow_compacted = false;
        let TurnOutcome {
            message,
            end,
            requests,
            serving,
        } = outcome;
        let stop = message.stop_reason;
        let error_text = message.error_message.clone();
        let assistant_index = self.keep_answer(message);
        self.state.failed_requests = requests;
        let ending = match judge(end, stop, error_text, !calls.is_empty()) {
            Answer::Ending(ending) => Some(ending),
            Answer::Final => self.go_on_or_end(assistant_index),
            Answer::Calls => None,
        };
        match ending {
            Some(ending) => {
                self.emit_turn_end(turn.index, assistant_index, &[], serving.as_ref());
                Step::Finish(ending)
            }
            None => Step::Tools(Pending {
                calls,
                assistant_index,
                serving,
            }),
        }
    }

    /// An answer without tool calls ends the run, unless a message from outside waits: steering
    /// (taken at the next check) or a follow-up (added now).
    fn go_on_or_end(&mut self, assistant_index: usize) -> Option<Ending> {
        let extensions = &self.config.extensions;
        if extensions.iter().any(|e| e.steering_waiting()) {
            return None;
        }
        if let Some(follow_up) = extensions.iter().find_map(|e| e.take_follow_up()) {
            self.add_user_message(follow_up);
            return None;
        }
        self.final_answer(assistant_index)
    }

    /// `turn_start`, and with the first turn the prompt's own events.
    fn start_turn(&mut self, turn: &Turn) {
        self.emitter.emit(&Event::TurnStart {
            turn_index: turn.index,
        });
        for extension in &self.config.extensions {
            extension.turn_started(turn.index);
        }
        self.state.stats.turns += 1;
        if turn.index == 0 {
            let prompt = &self.state.messages[turn.prompt_index];
            self.emitter.emit(&Event::MessageStart { message: prompt });
            self.emitter.emit(&Event::MessageEnd { message: prompt });
        }
    }

    /// One model request (with its retries) for the conversation as it is, counted.
    async fn ask(&mut self, plan: &Plan<'_>, turn_index: u32) -> TurnOutcome {
        // Out of the state while `spec` borrows it.
        let mut wire = std::mem::take(&mut self.state.wire);
        let spec = RequestSpec {
            model: plan.model,
            system_prompt: &plan.system_prompt,
            messages: &self.state.messages,
            tools: &plan.tools,
            max_tokens: self.config.limits.max_tokens,
            max_tokens_field: plan.max_tokens_field,
            reasoning_effort: plan.reasoning_effort,
            dialect: self.config.model.dialect(),
            response_schema: self.response_schema(),
        };
        let body = build_body_cached(&spec, &mut wire, &self.config.secrets);
        self.state.wire = wire;
        let ctx = TurnContext {
            emitter: &self.emitter,
            transport: plan.transport,
            decorators: &plan.decorators,
            extensions: &self.config.extensions,
            retry: &plan.retry,
            idle_timeout: self.config.limits.idle_timeout,
            control: &self.config.control,
            secrets: &self.config.secrets,
            provider: plan.provider,
            model: plan.model,
            dialect: self.config.model.dialect(),
            price: plan.price.clone(),
            request_id: self.request_ids.turn(turn_index),
        };
        let requested_at = SystemTime::now();
        let outcome = request_assistant(&ctx, body).await;
        for extension in &self.config.extensions {
            extension.assistant_finished(turn_index, &outcome.message, requested_at);
        }
        self.state.stats.llm_requests += outcome.requests;
        self.state.stats.assistant_messages += 1;
        self.state.stats.add_usage(&outcome.message.usage);
        if let Some(serving) = &outcome.serving {
            let usage = &outcome.message.usage;
            let prompt = usage.input + usage.cache_read + usage.cache_write;
            self.state
                .stats
                .serving
                .get_or_insert_default()
                .add(serving, prompt);
        }
        outcome
    }

    /// Saves and keeps the answer; returns where it is in the conversation.
    fn keep_answer(&mut self, message: crate::events::AssistantMessage) -> usize {
        let usage = &message.usage;
        let reported = usage.input + usage.cache_read + usage.cache_write + usage.output;
        let assistant = Message::Assistant(message);
        self.persist(&assistant);
        self.state.messages.push(assistant);
        self.state.last_known = (reported > 0).then_some((self.state.messages.len(), reported));
        self.state.messages.len() - 1
    }

    async fn run_tools(&mut self, pending: Pending, turn: &mut Turn) -> Step {
        // The turn before is on disk before this one's tools change anything (read-only
        // calls change nothing, so they need not wait).
        let changes = pending.calls.iter().any(|call| {
            self.tools
                .get(&call.name)
                .is_none_or(|tool| !tool.is_read_only())
        });
        if changes {
            self.session_synced();
        }
        let exec = ExecContext {
            emitter: &self.emitter,
            tools: &self.tools,
            base: &self.tool_ctx,
            control: &self.config.control,
            extensions: &self.config.extensions,
            secrets: &self.config.secrets,
            deadline: self.tool_ctx.run.deadline(),
        };
        let results = execute_calls(&exec, &pending.calls).await;
        self.keep_notes();
        self.state.stats.tool_results += results.len() as u32;
        for (call, result) in pending.calls.iter().zip(&results) {
            self.state.failures.record(call, result.is_error);
        }
        let results: Vec<Message> = results.into_iter().map(Message::ToolResult).collect();
        for result in &results {
            self.persist(result);
        }
        self.sync_session();
        self.emit_turn_end(
            turn.index,
            pending.assistant_index,
            &results,
            pending.serving.as_ref(),
        );
        self.state.messages.extend(results);
        turn.index += 1;
        Step::Check
    }
}

#[cfg(test)]
mod tests;
