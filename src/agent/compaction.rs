//! Compaction at the context limit, Pi's way: keep the newest turn verbatim, have the model
//! summarize everything before it, and continue from the summary.
//!
//! Token counts come from the server: the last response's reported usage (its prompt and its
//! output, which is now part of the prompt) plus an estimate for what was added since, at
//! [`CHARS_PER_TOKEN`] characters a token (no tokenizer download). Without a reported usage
//! yet, the whole conversation is estimated that way. Compaction runs when the next request
//! would pass the window minus a reserve for the answer, or when the server rejects a request
//! for its length.

use crate::events::{AssistantContent, Message, TextContent, ToolResultMessage, UserMessage};

/// A rough, tokenizer-free estimate: English text and code average about four characters per
/// token for the common BPE vocabularies.
pub(super) const CHARS_PER_TOKEN: u64 = 4;
/// Tokens kept free for the answer when `--max-tokens` does not say.
pub(super) const DEFAULT_RESERVE: u64 = 16_384;
/// Each tool result is cut to this many characters in what the summarizer reads.
const SUMMARY_RESULT_CHARS: usize = 2_000;

pub(super) const SUMMARIZER: &str = "You compress a coding agent's conversation so it can continue \
with less context. Write a concise summary of everything so far: the task and its constraints, \
what was found, what was changed (files, commands) and why, decisions made, and what remains \
to do. Keep file paths, names and numbers exact. Write only the summary.";

/// The prefix of the message that stands for the summarized part.
pub(super) const SUMMARY_PREFIX: &str = "The conversation so far, summarized:\n\n";

/// Characters of a message as the model reads it.
fn chars(message: &Message) -> u64 {
    let n: usize = match message {
        Message::User(user) => user.content.iter().map(|c| c.as_str().len()).sum(),
        Message::ToolResult(result) => result.content.iter().map(|c| c.as_str().len()).sum(),
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Text { text } => text.len(),
                AssistantContent::Thinking { .. } => 0,
                AssistantContent::ToolCall(call) => call.name.len() + call.raw_arguments.len(),
            })
            .sum(),
    };
    n as u64
}

/// Tokens of the next request: the last reported count (taken when the conversation had
/// `known.0` messages) plus an estimate for the messages since.
pub(super) fn estimate(
    messages: &[Message],
    system_chars: usize,
    known: Option<(usize, u64)>,
) -> u64 {
    let (from, base) = match known {
        Some((count, tokens)) if count <= messages.len() => (count, tokens),
        _ => (0, system_chars as u64 / CHARS_PER_TOKEN),
    };
    base + messages[from..].iter().map(chars).sum::<u64>() / CHARS_PER_TOKEN
}

/// The tokens a request may use before compaction: the window less the answer's reserve
/// (at most a quarter of the window).
pub(super) fn threshold(window: u64, max_tokens: Option<u32>) -> u64 {
    let reserve = max_tokens
        .map_or(DEFAULT_RESERVE, u64::from)
        .min(window / 4);
    window - reserve
}

/// Where the kept part starts: the newest assistant message (with the results of its calls).
/// `None` when there is nothing before it to summarize.
pub(super) fn split_point(messages: &[Message]) -> Option<usize> {
    let at = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))?;
    (at > 0).then_some(at)
}

/// What the summarizer reads: the older messages, tool results cut short, and the request.
pub(super) fn summary_input(older: &[Message]) -> Vec<Message> {
    let mut input: Vec<Message> = older
        .iter()
        .map(|message| match message {
            Message::ToolResult(result) => {
                let text: String = result
                    .content
                    .iter()
                    .map(crate::events::TextContent::as_str)
                    .collect();
                let cut = crate::text::floor_char_boundary(&text, SUMMARY_RESULT_CHARS);
                let shown = if cut < text.len() {
                    format!("{}… [{} more characters]", &text[..cut], text.len() - cut)
                } else {
                    text
                };
                Message::ToolResult(ToolResultMessage {
                    content: vec![TextContent::text(shown)],
                    details: None,
                    ..result.clone()
                })
            }
            other => other.clone(),
        })
        .collect();
    input.push(user(
        "Summarize the conversation above as instructed, for continuing the task.",
    ));
    input
}

pub(super) fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![TextContent::text(text)],
        timestamp: crate::events::now_millis(),
    })
}

/// A server's refusal of a request for its length (OpenAI, vLLM/Dynamo, Anthropic wordings).
pub(super) fn is_overflow(error: &crate::llm::LlmError) -> bool {
    let crate::llm::LlmError::Status {
        status, message, ..
    } = error
    else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    matches!(status, 400 | 413 | 422)
        && [
            "context length",
            "context window",
            "prompt is too long",
            "too many tokens",
            "context_length_exceeded",
            "maximum context",
        ]
        .iter()
        .any(|needle| message.contains(needle))
}

#[cfg(test)]
mod tests;
