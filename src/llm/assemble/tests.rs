mod unit {
    use super::super::*;
    use serde_json::{Value, json};

    fn chunk(value: Value) -> ChatChunk {
        serde_json::from_value(value).unwrap()
    }

    fn run(chunks: Vec<Value>) -> (Vec<Value>, Assembled) {
        let mut events = Vec::new();
        let mut asm = Assembler::new();
        let mut emit =
            |e: &AssistantMessageEvent<'_>| events.push(serde_json::to_value(e).unwrap());
        for c in chunks {
            asm.push(chunk(c), &mut emit);
        }
        let done = asm.finish(None, &mut emit);
        (events, done)
    }

    #[test]
    fn text_deltas_become_one_block_with_start_delta_end() {
        let (events, done) = run(vec![
            json!({"id":"r1","choices":[{"index":0,"delta":{"role":"assistant"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"Hel"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}),
        ]);
        assert_eq!(
            events,
            vec![
                json!({"type":"text_start","contentIndex":0}),
                json!({"type":"text_delta","contentIndex":0,"delta":"Hel"}),
                json!({"type":"text_delta","contentIndex":0,"delta":"lo"}),
                json!({"type":"text_end","contentIndex":0,"content":"Hello"}),
            ]
        );
        assert_eq!(done.stop_reason, StopReason::Stop);
        assert_eq!(done.response_id.as_deref(), Some("r1"));
        assert_eq!(
            (
                done.usage.input,
                done.usage.cache_read,
                done.usage.output,
                done.usage.total_tokens
            ),
            (6, 4, 2, 12)
        );
    }

    #[test]
    fn tool_calls_are_keyed_by_sparse_interleaved_indices() {
        let (events, done) = run(vec![
            json!({"choices":[{"index":0,"delta":{"content":"Let me look."}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":7,"id":"call_b","function":{"name":"ls","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":"th\":\"a\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ]);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            vec![
                "text_start",
                "text_delta",
                "text_end",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_end",
                "toolcall_end"
            ]
        );
        assert_eq!(
            events[3],
            json!({"type":"toolcall_start","contentIndex":1,"id":"call_a","toolName":"read"})
        );
        assert_eq!(
            events[6]["contentIndex"], 1,
            "the late fragment belongs to call_a"
        );
        assert_eq!(
            events[7],
            json!({"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_a","name":"read","arguments":{"path":"a"}}})
        );
        assert_eq!(events[8]["toolCall"]["arguments"], json!({}));
        assert_eq!(done.stop_reason, StopReason::ToolUse);
        assert_eq!(done.content.len(), 3);
    }

    #[test]
    fn reasoning_deltas_become_thinking_blocks() {
        let (events, done) = run(vec![
            json!({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning":"ing"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(events[0], json!({"type":"thinking_start","contentIndex":0}));
        assert_eq!(
            events[3],
            json!({"type":"thinking_end","contentIndex":0,"content":"thinking"})
        );
        assert!(
            matches!(&done.content[0], AssistantContent::Thinking { thinking, .. } if thinking == "thinking")
        );
    }

    #[test]
    fn invalid_tool_arguments_are_kept_raw_with_an_error() {
        let (_, done) = run(vec![
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{\"command\": \"ls"}}]},"finish_reason":"tool_calls"}]}),
        ]);
        let AssistantContent::ToolCall(call) = &done.content[0] else {
            panic!()
        };
        assert_eq!(call.arguments(), json!("{\"command\": \"ls"));
        assert!(
            call.arguments_error
                .as_deref()
                .unwrap()
                .starts_with("the arguments are not valid JSON")
        );
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        assert_eq!(map_finish(Some("length"), false).0, StopReason::Length);
        assert_eq!(
            map_finish(Some("content_filter"), false).0,
            StopReason::Error
        );
        assert_eq!(map_finish(Some("stop"), true).0, StopReason::ToolUse);
        assert_eq!(map_finish(Some("tool_calls"), false).0, StopReason::Stop);
        assert_eq!(map_finish(None, false).0, StopReason::Stop);
    }

    #[test]
    fn role_only_chunks_are_not_progress() {
        let mut asm = Assembler::new();
        let mut emit = |_: &AssistantMessageEvent<'_>| {};
        asm.push(
            chunk(json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})),
            &mut emit,
        );
        assert!(!asm.has_progress());
        asm.push(
            chunk(json!({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})),
            &mut emit,
        );
        assert!(asm.has_progress());
    }
}

mod props {
    use super::super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Piece {
        Text(String),
        Reasoning(String),
        /// A piece of tool call `index`'s arguments.
        Tool(u32, String),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            "\\PC{0,6}".prop_map(Piece::Text),
            "\\PC{0,6}".prop_map(Piece::Reasoning),
            (0u32..4, "\\PC{0,6}").prop_map(|(i, s)| Piece::Tool(i, s)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Interleaved tool-call indices, text and reasoning: every call keeps exactly its own
        /// argument pieces in order, prose keeps its order, and every block that starts ends.
        #[test]
        fn interleaved_pieces_assemble_faithfully(pieces in proptest::collection::vec(piece(), 0..40)) {
            let mut assembler = Assembler::new();
            let mut starts = 0;
            let mut ends = 0;
            let mut seen_ids = BTreeMap::new();
            for piece in &pieces {
                let delta = match piece {
                    Piece::Text(t) => json!({"content": t}),
                    Piece::Reasoning(t) => json!({"reasoning_content": t}),
                    Piece::Tool(index, args) => {
                        // Only a call's first chunk carries its id and name, as servers do.
                        let first = !seen_ids.contains_key(index);
                        seen_ids.insert(*index, ());
                        let mut call = json!({"index": index, "function": {"arguments": args}});
                        if first {
                            call["id"] = json!(format!("call_{index}"));
                            call["function"]["name"] = json!("read");
                        }
                        json!({"tool_calls": [call]})
                    }
                };
                let chunk = serde_json::from_value(json!({"choices": [{"index": 0, "delta": delta}]})).unwrap();
                assembler.push(chunk, &mut |event| match event {
                    AssistantMessageEvent::TextStart { .. }
                    | AssistantMessageEvent::ThinkingStart { .. }
                    | AssistantMessageEvent::ToolcallStart { .. } => starts += 1,
                    AssistantMessageEvent::TextEnd { .. }
                    | AssistantMessageEvent::ThinkingEnd { .. }
                    | AssistantMessageEvent::ToolcallEnd { .. } => ends += 1,
                    _ => {}
                });
            }
            let assembled = assembler.finish(None, &mut |event| match event {
                AssistantMessageEvent::TextEnd { .. }
                | AssistantMessageEvent::ThinkingEnd { .. }
                | AssistantMessageEvent::ToolcallEnd { .. } => ends += 1,
                _ => {}
            });
            prop_assert_eq!(starts, ends);
            prop_assert_eq!(starts, assembled.content.len());

            let mut expected_args: BTreeMap<u32, String> = BTreeMap::new();
            let (mut text, mut thinking) = (String::new(), String::new());
            for piece in &pieces {
                match piece {
                    Piece::Text(t) => text.push_str(t),
                    Piece::Reasoning(t) => thinking.push_str(t),
                    Piece::Tool(index, args) => expected_args.entry(*index).or_default().push_str(args),
                }
            }
            let mut got_args = BTreeMap::new();
            let (mut got_text, mut got_thinking) = (String::new(), String::new());
            for block in &assembled.content {
                match block {
                    AssistantContent::Text { text } => got_text.push_str(text),
                    AssistantContent::Thinking { thinking, .. } => got_thinking.push_str(thinking),
                    AssistantContent::ToolCall(call) => {
                        let index: u32 = call.id.as_str().trim_start_matches("call_").parse().unwrap();
                        prop_assert!(got_args.insert(index, call.raw_arguments.clone()).is_none());
                    }
                }
            }
            // A call that streamed no argument text (or only whitespace) is sent back as `{}`.
            for args in expected_args.values_mut() {
                if args.trim().is_empty() {
                    *args = "{}".to_string();
                }
            }
            prop_assert_eq!(got_text, text);
            prop_assert_eq!(got_thinking, thinking);
            prop_assert_eq!(got_args, expected_args);
        }
    }
}
