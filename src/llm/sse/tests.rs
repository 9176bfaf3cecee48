use super::*;
use bytes::Bytes;
use futures_util::stream;

fn stream_of(parts: &[&str]) -> SseStream {
    let chunks: Vec<Result<Bytes, crate::llm::TransportError>> = parts
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
async fn an_event_larger_than_the_cap_is_malformed_not_buffered_forever() {
    let body = format!("data: {}", "x".repeat(5000));
    let parts: Vec<Result<Bytes, TransportError>> = body
        .as_bytes()
        .chunks(100)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut sse = SseStream {
        events: whole_events(Box::pin(stream::iter(parts)), 1024).eventsource(),
        anthropic: None,
    };
    match sse.next().await {
        Some(Err(LlmError::Malformed { error, .. })) => assert_eq!(
            error,
            "a single server-sent event exceeds the size limit (1024 bytes)"
        ),
        _ => panic!("expected a malformed-stream error"),
    }
    assert!(
        !LlmError::Malformed {
            error: String::new(),
            excerpt: String::new()
        }
        .is_retryable()
    );
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

mod props {
    use super::super::*;
    use bytes::Bytes;
    use futures_util::stream;
    use proptest::prelude::*;

    /// The text deltas (or `None` for `[DONE]`, `Some(Err)` for an error) a stream yields.
    fn collect(chunks: Vec<Vec<u8>>) -> Vec<Result<Option<String>, String>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let parts: Vec<Result<Bytes, crate::llm::TransportError>> =
                chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
            let mut sse = SseStream::new(Box::pin(stream::iter(parts)));
            let mut items = Vec::new();
            while let Some(item) = sse.next().await {
                items.push(match item {
                    Ok(SseItem::Done) => Ok(None),
                    Ok(SseItem::Chunk(chunk)) => Ok(chunk
                        .choices
                        .first()
                        .and_then(|c| c.delta.as_ref())
                        .and_then(|d| d.content.clone())),
                    Err(err) => Err(err.to_string()),
                });
            }
            items
        })
    }

    /// `body` cut at the given positions (sorted, deduplicated, within bounds).
    fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut parts = Vec::new();
        let mut start = 0;
        for cut in cuts {
            parts.push(body[start..cut].to_vec());
            start = cut;
        }
        parts.push(body[start..].to_vec());
        parts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Read boundaries (even inside a UTF-8 character or a `\r\n`) never change what the
        /// stream means.
        #[test]
        fn chunk_boundaries_do_not_change_the_items(
            texts in proptest::collection::vec("\\PC{0,12}", 0..8),
            pings in proptest::collection::vec(any::<bool>(), 8),
            crlf in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let newline = if crlf { "\r\n" } else { "\n" };
            let mut body = String::new();
            for (index, text) in texts.iter().enumerate() {
                if pings[index] {
                    body.push_str(&format!(": ping{newline}{newline}"));
                }
                let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
                body.push_str(&format!("data: {chunk}{newline}{newline}"));
            }
            body.push_str(&format!("data: [DONE]{newline}{newline}"));
            let whole = collect(vec![body.clone().into_bytes()]);
            let expected: Vec<Result<Option<String>, String>> = texts
                .iter()
                .map(|t| Ok(Some(t.clone())))
                .chain([Ok(None)])
                .collect();
            prop_assert_eq!(&whole, &expected);
            prop_assert_eq!(collect(split(body.as_bytes(), &cuts)), expected);
        }

        /// Arbitrary bytes are items or errors, never a panic or a hang; read boundaries do not
        /// change them, and no item appears without a `data` field to carry it.
        #[test]
        fn any_bytes_are_the_same_items_however_they_are_read(
            pieces in proptest::collection::vec(prop_oneof![
                proptest::collection::vec(any::<u8>(), 1..8),
                Just(b"data: ".to_vec()),
                Just(b"\n".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"[DONE]".to_vec()),
                Just(br#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#.to_vec()),
            ], 0..60),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
        ) {
            let bytes = pieces.concat();
            let whole = collect(vec![bytes.clone()]);
            let data_fields = bytes.windows(4).filter(|window| window == b"data").count();
            let items = whole.iter().filter(|item| item.is_ok()).count();
            prop_assert!(items <= data_fields, "{items} items from {data_fields} data fields");
            prop_assert_eq!(collect(split(&bytes, &cuts)), whole);
        }
    }
}
