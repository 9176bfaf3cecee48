//! One conformance test over the provider table: every built-in provider, re-pointed at a
//! mock server with `--providers`, gets a request in its wire format (path, key header,
//! length field, Dynamo's fields only for Dynamo) and its answer read back as an assistant
//! message of that provider. A new row in `llm/provider.rs` is covered without a new test.

use serde_json::{Value, json};
use worker::llm::Dialect;
use worker::llm::provider::BUILT_IN;

use crate::support::mock_llm::*;
use crate::support::run_worker;

fn reply_in(dialect: Dialect) -> Reply {
    match dialect {
        Dialect::ChatCompletions => answer("fine"),
        Dialect::AnthropicMessages => anthropic_stream(
            vec![json!({"type": "text", "text": "fine"})],
            "end_turn",
            json!({"input_tokens": 10, "output_tokens": 5}),
        ),
    }
}

#[test]
fn every_built_in_provider_speaks_its_wire_format() {
    for provider in BUILT_IN {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![reply_in(provider.dialect)]);
        let key = format!("key-of-{}", provider.name);
        // The mock's URL is its API root (`…/v1`).
        let providers = json!({ provider.name: {"baseUrl": mock.url} }).to_string();
        let model = format!("{}/some-model", provider.name);
        let run = run_worker(
            dir.path(),
            &[
                "--model",
                &model,
                "--providers",
                &providers,
                "--max-tokens",
                "321",
                "--no-session",
            ],
            "hello",
            &[(provider.key_var, &key)],
        );
        assert_eq!(
            run.code, 0,
            "{}: {}\n{}",
            provider.name, run.stderr, run.stdout
        );

        let requests = mock.requests();
        assert_eq!(requests.len(), 1, "{}", provider.name);
        let request = &requests[0];
        match provider.dialect {
            Dialect::ChatCompletions => {
                assert_eq!(
                    request.headers.get("authorization"),
                    Some(&format!("Bearer {key}")),
                    "{}",
                    provider.name
                );
                assert_eq!(request.body["messages"][0]["role"], "system");
                assert_eq!(request.body["stream_options"]["include_usage"], true);
            }
            Dialect::AnthropicMessages => {
                assert_eq!(request.headers.get("x-api-key"), Some(&key));
                assert!(request.headers.contains_key("anthropic-version"));
                assert!(request.body["system"].is_array() || request.body["system"].is_string());
            }
        }
        assert_eq!(request.body["model"], "some-model", "{}", provider.name);
        assert_eq!(request.body["stream"], true);
        // The length cap travels in the field this provider takes, and only there.
        assert_eq!(
            request.body[provider.max_tokens_field], 321,
            "{}",
            provider.name
        );
        for other in ["max_tokens", "max_completion_tokens"] {
            if other != provider.max_tokens_field {
                assert_eq!(
                    request.body[other],
                    Value::Null,
                    "{}: {other}",
                    provider.name
                );
            }
        }
        // Dynamo's agent identity goes to Dynamo and nowhere else.
        assert_eq!(
            request.body.get("nvext").is_some(),
            provider.dynamo,
            "{}: {}",
            provider.name,
            request.body
        );

        let message = run
            .all("message_end")
            .into_iter()
            .map(|end| &end["message"])
            .find(|message| message["role"] == "assistant")
            .unwrap_or_else(|| panic!("{}: no assistant message", provider.name));
        assert_eq!(message["provider"], provider.name);
        assert_eq!(message["api"], provider.dialect.api_name());
        assert_eq!(message["content"][0]["text"], "fine");
        // The usage the mock's reply reports: 5 output tokens in the chat chunk, 25 in
        // Anthropic's `message_delta`.
        let output = match provider.dialect {
            Dialect::ChatCompletions => 5,
            Dialect::AnthropicMessages => 25,
        };
        assert_eq!(run.stats()["tokens"]["output"], output, "{}", provider.name);
    }
}
