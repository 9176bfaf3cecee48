//! Server-sent events to chat chunks.
//!
//! `eventsource-stream` does the SSE framing (split lines, comments, multi-line data); this
//! turns each event's data into a [`ChatChunk`], recognizes `[DONE]`, and reports anything
//! else as an error rather than skipping it.

use eventsource_stream::{EventStream, Eventsource};
use futures_util::StreamExt;

use super::error::{LlmError, excerpt};
use super::transport::ByteStream;
use super::wire::ChatChunk;

pub enum SseItem {
    Chunk(ChatChunk),
    Done,
}

pub struct SseStream {
    events: EventStream<ByteStream>,
}

impl SseStream {
    pub fn new(body: ByteStream) -> Self {
        SseStream {
            events: body.eventsource(),
        }
    }

    /// The next item; `None` when the byte stream ended.
    pub async fn next(&mut self) -> Option<Result<SseItem, LlmError>> {
        loop {
            let event = match self.events.next().await? {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(err)) => {
                    return Some(Err(LlmError::Cut(err)));
                }
                Err(err) => {
                    return Some(Err(LlmError::Malformed {
                        error: err.to_string(),
                        excerpt: String::new(),
                    }));
                }
            };
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return Some(Ok(SseItem::Done));
            }
            if event.event == "error" {
                return Some(Err(LlmError::InStream(excerpt(data, 500))));
            }
            return Some(match serde_json::from_str::<ChatChunk>(data) {
                Ok(chunk) => match &chunk.error {
                    Some(error) => {
                        let message = error
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| error.to_string());
                        Err(LlmError::InStream(message))
                    }
                    None => Ok(SseItem::Chunk(chunk)),
                },
                Err(err) => Err(LlmError::Malformed {
                    error: err.to_string(),
                    excerpt: excerpt(data, 200),
                }),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures_util::stream;

    fn stream_of(parts: &[&str]) -> SseStream {
        let chunks: Vec<Result<Bytes, super::super::transport::TransportError>> = parts
            .iter()
            .map(|p| Ok(Bytes::from(p.to_string())))
            .collect();
        SseStream::new(Box::pin(stream::iter(chunks)))
    }

    #[tokio::test]
    async fn events_split_across_reads_and_comments_are_handled() {
        let mut sse = stream_of(&[
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"He",
            "llo\"}}]}\n\n",
            "data: [DONE]\n\n",
        ]);
        match sse.next().await {
            Some(Ok(SseItem::Chunk(chunk))) => {
                let delta = chunk.choices[0].delta.as_ref().unwrap();
                assert_eq!(delta.content.as_deref(), Some("Hello"));
            }
            _ => panic!("expected a chunk"),
        }
        assert!(matches!(sse.next().await, Some(Ok(SseItem::Done))));
        assert!(sse.next().await.is_none());
    }

    #[tokio::test]
    async fn malformed_json_and_in_stream_errors_are_errors() {
        let mut sse = stream_of(&["data: {not json\n\n"]);
        match sse.next().await {
            Some(Err(LlmError::Malformed { excerpt, .. })) => assert_eq!(excerpt, "{not json"),
            _ => panic!("expected a malformed-chunk error"),
        }
        let mut sse = stream_of(&["data: {\"error\":{\"message\":\"overloaded\"}}\n\n"]);
        assert!(matches!(sse.next().await, Some(Err(LlmError::InStream(m))) if m == "overloaded"));
    }
}
