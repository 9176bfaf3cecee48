use super::*;

fn hints(settings: HintSettings) -> Hints {
    Hints::new(HintSettings {
        agent_hints: true,
        ..settings
    })
}

fn decorated(hints: &Hints, body: Value) -> (Value, Vec<(String, String)>) {
    let mut body = body;
    let mut headers = Vec::new();
    hints.decorate(&mut body, &mut headers);
    (body, headers)
}

#[test]
fn a_first_turn_with_tools_asks_for_prefill_and_the_serving_report() {
    let h = hints(HintSettings {
        priority: Some(3),
        strict_priority: Some(1),
        tenant: Some("team-a".into()),
        ..HintSettings::default()
    });
    let (body, headers) = decorated(
        &h,
        json!({"model": "m", "tools": [{"type": "function"}], "nvext": {"agent_context": {}}}),
    );
    assert_eq!(
        body["nvext"],
        json!({"agent_context": {}, "agent_hints": {"priority": 3, "strict_priority": 1, "speculative_prefill": true},
                   "extra_fields": ["worker_id", "timing"]})
    );
    assert_eq!(
        headers,
        vec![("x-tenant-id".to_string(), "team-a".to_string())]
    );
}

#[test]
fn osl_follows_recent_completions_capped_by_max_tokens() {
    let h = hints(HintSettings {
        max_tokens: Some(300),
        ..HintSettings::default()
    });
    let (body, _) = decorated(&h, json!({"tools": []}));
    assert_eq!(
        body["nvext"],
        json!({"extra_fields": ["worker_id", "timing"]}),
        "nothing to predict from yet"
    );
    for tokens in [40, 900, 12, 20, 30] {
        h.completed(tokens);
    }
    let (body, _) = decorated(&h, json!({}));
    assert_eq!(
        body["nvext"]["agent_hints"],
        json!({"osl": 300}),
        "900 capped"
    );
    h.completed(25);
    let (body, _) = decorated(&h, json!({}));
    assert_eq!(
        body["nvext"]["agent_hints"],
        json!({"osl": 30}),
        "900 left the window"
    );
}

#[test]
fn the_priority_rises_as_the_deadline_nears() {
    assert_eq!(
        [0.0, 0.49, 0.5, 0.74, 0.75, 0.89, 0.9, 1.5].map(escalation),
        [0, 0, 1, 1, 2, 2, 4, 4]
    );
    let budget = Duration::from_secs(100);
    let at = |used: u64, priority: Option<i32>| {
        let start = Instant::now()
            .checked_sub(Duration::from_secs(used))
            .unwrap();
        let h = hints(HintSettings {
            priority,
            deadline: Some((start, budget)),
            ..HintSettings::default()
        });
        decorated(&h, json!({})).0["nvext"]["agent_hints"]["priority"].clone()
    };
    assert_eq!(at(10, None), json!(0), "a deadline alone sends priority 0");
    assert_eq!(at(60, Some(5)), json!(6));
    assert_eq!(at(80, Some(5)), json!(7));
    assert_eq!(at(95, Some(-2)), json!(2));
}

#[test]
fn no_serving_hints_keeps_the_serving_report_and_the_tenant() {
    let h = Hints::new(HintSettings {
        agent_hints: false,
        priority: Some(9),
        tenant: Some("t".into()),
        ..HintSettings::default()
    });
    h.completed(10);
    let (body, headers) = decorated(&h, json!({"tools": [{}]}));
    assert_eq!(
        body["nvext"],
        json!({"extra_fields": ["worker_id", "timing"]})
    );
    assert_eq!(headers.len(), 1);
}

/// Dynamo 1.6.1's wording, captured from a real frontend.
const REFUSED_BOGUS_HINT: &str = r#"{"message":"Failed to deserialize the JSON body into the target type: unknown field `bogus`, expected one of `priority`, `strict_priority`, `osl`, `speculative_prefill`, `latency_sensitivity` at line 1 column 159","type":"Bad Request","code":400}"#;

#[test]
fn each_refused_field_is_dropped_once_and_only_that_field() {
    let h = hints(HintSettings {
        priority: Some(1),
        strict_priority: Some(2),
        ..HintSettings::default()
    });
    h.completed(50);
    let body = json!({"tools": [{}]});
    decorated(&h, body.clone());
    // A field that is not ours, though the message lists ours as known: nothing dropped.
    assert_eq!(h.rejected(400, REFUSED_BOGUS_HINT), None);
    assert_eq!(h.rejected(500, "unknown field `osl`"), None);
    for (field, message) in [
        (
            Field::Osl,
            "unknown field `osl`, expected one of `priority`",
        ),
        (
            Field::SpeculativePrefill,
            "unknown field `speculative_prefill`",
        ),
        (
            Field::StrictPriority,
            "{\"error\": \"strict_priority is not supported\"}",
        ),
        (
            Field::ExtraFields,
            "unknown field `extra_fields`, expected `agent_hints`",
        ),
        (Field::Priority, "unknown field `priority`"),
    ] {
        assert_eq!(h.rejected(400, message), Some(field), "{message}");
        let (sent, _) = decorated(&h, body.clone());
        assert!(
            !sent.to_string().contains(&format!("\"{}\"", field.key())),
            "{} still sent: {sent}",
            field.key()
        );
        assert_eq!(
            h.rejected(400, message),
            None,
            "{} is already off",
            field.key()
        );
    }
    assert_eq!(
        decorated(&h, body).0,
        json!({"tools": [{}]}),
        "everything off"
    );
    assert_eq!(
        h.refused(),
        [
            "nvext.agent_hints.speculative_prefill",
            "nvext.agent_hints.strict_priority",
            "nvext.agent_hints.osl",
            "nvext.agent_hints.priority",
            "nvext.extra_fields"
        ]
    );
}

#[test]
fn a_server_refusing_agent_hints_loses_them_all() {
    let h = hints(HintSettings {
        priority: Some(1),
        ..HintSettings::default()
    });
    decorated(&h, json!({}));
    assert_eq!(
        h.rejected(
            400,
            "unknown field `agent_hints`, expected one of `greed_sampling`"
        ),
        Some(Field::AgentHints)
    );
    assert_eq!(
        decorated(&h, json!({})).0["nvext"],
        json!({"extra_fields": ["worker_id", "timing"]})
    );
}

#[test]
fn words_are_matched_whole() {
    assert!(names_word("bad strict_priority", "strict_priority"));
    assert!(!names_word("bad strict_priority", "priority"));
    assert!(names_word("priority: must be >= 0", "priority"));
    assert!(!names_word("oslo", "osl"));
}
