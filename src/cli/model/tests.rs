use super::*;
use crate::config::MapEnv;

fn env(pairs: &[(&str, &str)]) -> MapEnv {
    MapEnv::from_pairs(pairs)
}

fn model(raw: &str, env: &MapEnv) -> Result<ModelSource, String> {
    parse_model(raw, env, &BTreeMap::new()).map_err(|err| err.to_string())
}

fn endpoint(source: &ModelSource) -> (&str, String, Option<String>, Option<String>) {
    match source {
        ModelSource::Http {
            endpoint, model, ..
        } => (
            endpoint.label.as_str(),
            endpoint.base_url.clone(),
            endpoint.api_key.clone(),
            model.clone(),
        ),
        ModelSource::Replay { .. } => panic!("not http"),
    }
}

#[test]
fn the_model_splits_on_the_first_slash() {
    let e = env(&[]);
    assert_eq!(
        endpoint(&model("dynamo/accounts/fw/models/glm", &e).unwrap()),
        (
            "dynamo",
            "http://127.0.0.1:8000/v1".into(),
            None,
            Some("accounts/fw/models/glm".into())
        )
    );
    assert_eq!(endpoint(&model("dynamo", &e).unwrap()).3, None);
    assert_eq!(endpoint(&model("dynamo/default", &e).unwrap()).3, None);
}

#[test]
fn endpoints_follow_the_env_precedence() {
    let e = env(&[
        ("OPENAI_BASE_URL", "http://o:1/"),
        ("DYNAMO_API_KEY", "dk"),
        ("OPENAI_API_KEY", "ok"),
    ]);
    assert_eq!(
        endpoint(&model("dynamo/m", &e).unwrap()),
        (
            "dynamo",
            "http://o:1/v1".into(),
            Some("dk".into()),
            Some("m".into())
        )
    );
    let e = env(&[
        ("OPENAI_BASE_URL", "http://o:1/v1"),
        ("DYNAMO_BASE_URL", "http://d:2"),
        ("OPENAI_API_KEY", "ok"),
    ]);
    assert_eq!(endpoint(&model("dynamo/m", &e).unwrap()).1, "http://d:2/v1");
    assert_eq!(
        endpoint(&model("openai/gpt", &e).unwrap()),
        (
            "openai",
            "http://o:1/v1".into(),
            Some("ok".into()),
            Some("gpt".into())
        )
    );
    let blank = env(&[("DYNAMO_BASE_URL", "  ")]);
    assert_eq!(
        endpoint(&model("dynamo/m", &blank).unwrap()).1,
        "http://127.0.0.1:8000/v1"
    );
}

#[test]
fn bad_models_are_explained() {
    let e = env(&[]);
    assert_eq!(
        model("gpt4", &e).err().unwrap(),
        "--model must be 'provider/id', got 'gpt4'"
    );
    assert_eq!(
        model("gemini/pro", &e).err().unwrap(),
        "unknown provider 'gemini' in --model 'gemini/pro'; expected dynamo, openai, anthropic, openrouter, replay, or a name from --providers"
    );
    let err = model("replay/does/not/exist.jsonl", &e).err().unwrap();
    assert!(
        err.starts_with("--model: cannot read fixture does/not/exist.jsonl: "),
        "{err}"
    );
}

#[test]
fn openrouter_is_a_preset_that_needs_its_key() {
    let e = env(&[("OPENROUTER_API_KEY", "or-key")]);
    let source = model("openrouter/anthropic/claude-sonnet-4.6", &e).unwrap();
    assert_eq!(
        endpoint(&source),
        (
            "openrouter",
            "https://openrouter.ai/api/v1".into(),
            Some("or-key".into()),
            Some("anthropic/claude-sonnet-4.6".into())
        )
    );
    let ModelSource::Http {
        provider, endpoint, ..
    } = model("openrouter/x", &env(&[])).unwrap()
    else {
        panic!("not http")
    };
    assert_eq!(provider, &crate::llm::provider::OPENROUTER);
    assert_eq!(endpoint.required_key.as_deref(), Some("OPENROUTER_API_KEY"));
}

#[test]
fn providers_re_point_built_ins_and_add_new_names() {
    let overrides = parse_overrides(
            r#"{"anthropic": {"baseUrl": "https://gw.example/anthropic/"},
                "acme": {"baseUrl": "https://llm.acme.test/v1", "api": "openai-completions", "apiKeyEnv": "ACME_TOKEN"},
                "claude-gw": {"baseUrl": "https://gw.example", "api": "anthropic-messages"}}"#,
            "--providers",
        )
        .unwrap();
    let e = env(&[("ANTHROPIC_API_KEY", "a"), ("ACME_TOKEN", "t")]);
    let source = parse_model("anthropic/claude", &e, &overrides).unwrap();
    assert_eq!(endpoint(&source).1, "https://gw.example/anthropic");
    let source = parse_model("acme/llama-70b", &e, &overrides).unwrap();
    assert_eq!(
        endpoint(&source),
        (
            "acme",
            "https://llm.acme.test/v1".into(),
            Some("t".into()),
            Some("llama-70b".into())
        )
    );
    let ModelSource::Http { provider, .. } =
        parse_model("claude-gw/claude-x", &e, &overrides).unwrap()
    else {
        panic!("not http")
    };
    assert_eq!(provider.dialect, crate::llm::Dialect::AnthropicMessages);

    let no_api = parse_overrides(r#"{"acme": {"baseUrl": "https://x"}}"#, "--providers").unwrap();
    assert!(
        parse_model("acme/m", &e, &no_api)
            .err()
            .unwrap()
            .to_string()
            .starts_with("--providers.acme needs \"api\"")
    );
    for (raw, message) in [
        (
            "[1]",
            "--providers must be a JSON object of provider -> {baseUrl, ...}",
        ),
        (r#"{"a": {}}"#, "--providers.a.baseUrl is required"),
        (
            r#"{"a": {"baseUrl": "ftp://gw/v1", "api": "openai-completions"}}"#,
            "--providers.a.baseUrl 'ftp://gw/v1': unsupported scheme 'ftp'; expected an http:// or https:// URL",
        ),
        (
            r#"{"a": {"baseUrl": "gw.example/v1"}}"#,
            "--providers.a.baseUrl 'gw.example/v1' has no scheme; expected an http:// or https:// URL",
        ),
        (
            r#"{"a": {"baseUrl": "http://x", "api": "gemini"}}"#,
            "--providers.a.api 'gemini' is not one worker speaks: openai-completions or anthropic-messages",
        ),
    ] {
        assert_eq!(
            parse_overrides(raw, "--providers").unwrap_err().to_string(),
            message
        );
    }
    assert!(
        parse_overrides("{", "X")
            .unwrap_err()
            .to_string()
            .starts_with("X must be JSON: ")
    );
}

#[test]
fn an_inline_api_key_is_the_key_and_satisfies_a_required_one() {
    let overrides = parse_overrides(
        r#"{"openai": {"baseUrl": "https://gw/v1", "apiKey": "sk-inline-1"},
            "acme": {"baseUrl": "https://gw/v1", "api": "openai-completions", "apiKey": "acme-inline"}}"#,
        "--providers",
    )
    .unwrap();
    // The variable is set too: the entry's own key wins.
    let e = env(&[
        ("OPENAI_API_KEY", "sk-from-env"),
        ("ACME_API_KEY", "from-env"),
    ]);
    for (raw, key) in [("openai/m", "sk-inline-1"), ("acme/m", "acme-inline")] {
        let ModelSource::Http { endpoint, .. } = parse_model(raw, &e, &overrides).unwrap() else {
            panic!("not http");
        };
        assert_eq!(endpoint.api_key.as_deref(), Some(key));
        assert_eq!(endpoint.required_key, None);
    }
}

#[test]
fn a_key_field_that_is_not_one_string_is_refused_without_echoing_it() {
    for (entry, expected) in [
        (
            r#"{"apiKey": "sk-one", "apiKeyEnv": "ACME_TOKEN"}"#,
            "--providers.acme: give apiKey (the key) or apiKeyEnv (a variable holding it), not both",
        ),
        (
            r#"{"apiKey": ["sk-in-a-list"]}"#,
            "--providers.acme.apiKey must be a non-empty string",
        ),
        (
            r#"{"apiKey": "  "}"#,
            "--providers.acme.apiKey must be a non-empty string",
        ),
        (
            r#"{"apiKeyEnv": 7}"#,
            "--providers.acme.apiKeyEnv must be a non-empty string",
        ),
    ] {
        let mut entry: serde_json::Value = serde_json::from_str(entry).unwrap();
        entry["baseUrl"] = "https://gw/v1".into();
        entry["api"] = "openai-completions".into();
        let raw = serde_json::json!({ "acme": entry }).to_string();
        assert_eq!(
            parse_overrides(&raw, "--providers")
                .unwrap_err()
                .to_string(),
            expected
        );
    }
}

#[test]
fn known_keys_cover_every_provider_and_entry() {
    let overrides = parse_overrides(
        r#"{"acme": {"baseUrl": "https://gw/v1", "api": "openai-completions", "apiKey": "acme-inline"},
            "beta": {"baseUrl": "https://gw/v1", "api": "openai-completions", "apiKeyEnv": "BETA_TOKEN"},
            "my-gw": {"baseUrl": "https://gw/v1", "api": "openai-completions"}}"#,
        "--providers",
    )
    .unwrap();
    let e = env(&[
        ("OPENROUTER_API_KEY", "or-key-1"),
        ("BETA_TOKEN", "beta-key"),
        ("BETA_API_KEY", "beta-conventional"),
        ("MY_GW_API_KEY", "gw-key"),
        ("OTHER", "x"),
    ]);
    let mut keys = known_keys(&e, &overrides);
    keys.sort();
    assert_eq!(
        keys,
        [
            "acme-inline",
            "beta-conventional",
            "beta-key",
            "gw-key",
            "or-key-1"
        ]
    );
}

#[test]
fn a_base_url_variable_must_be_http_or_https() {
    for (var, model) in [
        ("DYNAMO_BASE_URL", "dynamo/m"),
        ("OPENAI_BASE_URL", "openai/gpt"),
        ("ANTHROPIC_BASE_URL", "anthropic/claude"),
    ] {
        let e = env(&[(var, "ftp://models.example/v1")]);
        assert_eq!(
            parse_model(model, &e, &BTreeMap::new())
                .err()
                .unwrap()
                .to_string(),
            format!(
                "{var} 'ftp://models.example/v1': unsupported scheme 'ftp'; expected an http:// or https:// URL"
            )
        );
    }
    // OPENAI_BASE_URL is dynamo's fallback: checked when it is the one used.
    let e = env(&[("OPENAI_BASE_URL", "models.example")]);
    assert!(
        parse_model("dynamo/m", &e, &BTreeMap::new())
            .err()
            .unwrap()
            .to_string()
            .starts_with("OPENAI_BASE_URL 'models.example' has no scheme")
    );
}
