use serde_json::json;

use super::*;
use crate::events::{TextContent, ToolResultMessage, UserMessage};
use crate::llm::{Dialect, Request, Spliced, WireConversation, WireTools, build_body};

fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![TextContent::text(text)],
        timestamp: 0,
    })
}

fn result(id: &str, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![TextContent::text(text)],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

fn spec<'a>(messages: &'a [Message], tools: &'a WireTools, dialect: Dialect) -> RequestSpec<'a> {
    RequestSpec {
        model: "m",
        system_prompt: "be brief",
        messages,
        tools,
        max_tokens: Some(64),
        max_tokens_field: "max_tokens",
        reasoning_effort: Some("low"),
        dialect,
        response_schema: None,
    }
}

/// The body for `spec`, its tools as the run would serialize them.
fn cached(spec: &RequestSpec<'_>, cache: &mut WireMessages, secrets: &Secrets) -> Body {
    build_body_cached(spec, cache, secrets)
}

/// The bytes a request with `body` sends.
fn sent(body: Body) -> Value {
    let request = Request {
        body: body.json,
        spliced: body.spliced,
        headers: Vec::new(),
    };
    serde_json::from_slice(&request.to_json().unwrap()).unwrap()
}

/// What the whole body, built fresh and redacted, would send.
fn fresh(spec: &RequestSpec<'_>, secrets: &Secrets) -> Value {
    let mut body = build_body(spec);
    secrets.redact_value(&mut body);
    body
}

#[test]
fn a_growing_conversation_sends_what_a_fresh_build_would() {
    let tools = WireTools::from_value(json!([{"type": "function", "function": {"name": "bash"}}]));
    let secrets = Secrets::from_values(["sk-live-0123456789".to_string()]);
    let mut cache = WireMessages::default();
    let mut messages = vec![user("list the files, key sk-live-0123456789")];
    for turn in 0..4 {
        let spec = spec(&messages, &tools, Dialect::ChatCompletions);
        let body = sent(cached(&spec, &mut cache, &secrets));
        assert_eq!(body, fresh(&spec, &secrets), "turn {turn}");
        assert!(!body.to_string().contains("sk-live"), "turn {turn}");
        messages.push(result(&format!("c{turn}"), &format!("output \"{turn}\"\n")));
    }
    // The key order is the body's own: messages second, as built whole.
    let spec = spec(&messages, &tools, Dialect::ChatCompletions);
    let body = cached(&spec, &mut cache, &secrets);
    let request = Request {
        body: body.json,
        spliced: body.spliced,
        headers: Vec::new(),
    };
    let text = String::from_utf8(request.to_json().unwrap()).unwrap();
    assert!(
        text.starts_with(r#"{"model":"m","messages":[{"role":"system","content":"be brief"},"#),
        "{text}"
    );
}

#[test]
fn a_secret_added_later_is_redacted_from_messages_cached_before() {
    let tools = WireTools::from_value(json!([]));
    let secrets = Secrets::default();
    let mut cache = WireMessages::default();
    let messages = vec![user("the token is ghs_minted_later_42")];
    let spec = spec(&messages, &tools, Dialect::ChatCompletions);
    let before = sent(cached(&spec, &mut cache, &secrets));
    assert!(before.to_string().contains("ghs_minted_later_42"));
    secrets.add("ghs_minted_later_42");
    let after = sent(cached(&spec, &mut cache, &secrets));
    assert!(
        !after.to_string().contains("ghs_minted_later_42"),
        "{after}"
    );
    assert_eq!(after, fresh(&spec, &secrets));
}

#[test]
fn a_rewritten_conversation_is_converted_again() {
    let tools = WireTools::from_value(json!([]));
    let secrets = Secrets::default();
    let mut cache = WireMessages::default();
    let long = vec![user("one"), result("c1", "two"), user("three")];
    let _ = build_body_cached(
        &spec(&long, &tools, Dialect::ChatCompletions),
        &mut cache,
        &secrets,
    );
    // Shorter than the cache: noticed without being told.
    let summary = vec![user("summary"), user("three")];
    let spec_short = spec(&summary, &tools, Dialect::ChatCompletions);
    assert_eq!(
        sent(cached(&spec_short, &mut cache, &secrets)),
        fresh(&spec_short, &secrets)
    );
    // As long as the cache or longer: the owner says so.
    let rewritten = vec![user("new one"), result("c9", "new two"), user("three")];
    let spec_same = spec(&rewritten, &tools, Dialect::ChatCompletions);
    cache.clear();
    assert_eq!(
        sent(cached(&spec_same, &mut cache, &secrets)),
        fresh(&spec_same, &secrets)
    );
}

#[test]
fn anthropic_bodies_are_built_whole() {
    let tools = WireTools::from_value(json!([]));
    let secrets = Secrets::default();
    let mut cache = WireMessages::default();
    let messages = vec![user("hi")];
    let spec = spec(&messages, &tools, Dialect::AnthropicMessages);
    let body = cached(&spec, &mut cache, &secrets);
    assert!(body.spliced.is_empty());
    assert_eq!(body.json, build_body(&spec));
}

#[test]
fn decorated_fields_are_sent_in_order_around_the_spliced_messages() {
    let request = Request {
        body: json!({"model": "m", "messages": null, "tools": null, "nvext": {"agent_context": {"id": 1}}}),
        spliced: Spliced {
            messages: Some(WireConversation {
                system: Arc::from(r#"{"role":"system","content":"s"}"#),
                conversation: Arc::new(br#"{"role":"user","content":"a"}"#.to_vec()),
            }),
            tools: Some(Arc::from(r#"[{"type":"function"}]"#)),
        },
        headers: Vec::new(),
    };
    assert_eq!(
        String::from_utf8(request.to_json().unwrap()).unwrap(),
        r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"a"}],"tools":[{"type":"function"}],"nvext":{"agent_context":{"id":1}}}"#
    );
    assert_eq!(
        request.whole_body(),
        json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}], "tools": [{"type": "function"}], "nvext": {"agent_context": {"id": 1}}})
    );
}

#[test]
fn a_secret_in_a_tool_description_is_redacted() {
    let tools = WireTools::from_value(
        json!([{"type": "function", "function": {"name": "x", "description": "uses sk-live-0123456789"}}]),
    );
    let secrets = Secrets::from_values(["sk-live-0123456789".to_string()]);
    let mut cache = WireMessages::default();
    let messages = vec![user("hi")];
    let spec = spec(&messages, &tools, Dialect::ChatCompletions);
    let body = sent(cached(&spec, &mut cache, &secrets));
    assert_eq!(body, fresh(&spec, &secrets));
    assert!(!body.to_string().contains("sk-live"), "{body}");
}
