use super::*;
use crate::config::{Endpoint, MapEnv};
use crate::secrets::REDACTED;

fn model(api_key: Option<&str>, base_url: &str) -> ModelSource {
    ModelSource::Http {
        provider: &crate::llm::provider::COMPATIBLE,
        endpoint: Endpoint {
            base_url: base_url.to_string(),
            api_key: api_key.map(str::to_string),
            required_key: None,
            label: "acme".into(),
        },
        model: None,
    }
}

#[test]
fn every_source_is_registered_whichever_model_runs() {
    let overrides = model::parse_overrides(
        r#"{"acme": {"baseUrl": "http://gw/v1", "api": "openai-completions", "apiKey": "acme-inline-key"},
            "beta": {"baseUrl": "http://b:beta-url-pass@gw/v1", "api": "openai-completions", "apiKeyEnv": "BETA_TOKEN"},
            "gamma-x": {"baseUrl": "http://gw/v1", "api": "anthropic-messages"}}"#,
        "--providers",
    )
    .unwrap();
    let env = MapEnv::from_pairs(&[
        ("DYNAMO_API_KEY", "dynamo-key-1"),
        ("ANTHROPIC_API_KEY", "anthropic-key-1"),
        ("BETA_TOKEN", "beta-named-key"),
        ("GAMMA_X_API_KEY", "gamma-conventional-key"),
        ("GH_TOKEN", "gh-cli-token-1"),
        ("EXA_API_KEY", "exa-search-key"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "api-key=otel-trace-key",
        ),
        ("UNRELATED", "not-a-secret-at-all"),
    ]);
    let mut auth = AuthFile::default();
    auth.keys.insert("openai".into(), "auth-file-key-1".into());
    let secrets = Secrets::default();
    register(
        &secrets,
        &Known {
            env: &env,
            overrides: &overrides,
            model: &model(
                Some("resolved-endpoint-key"),
                "http://u:endpoint-pass@gw/v1",
            ),
            auth: &auth,
            otel_endpoint: Some("http://o:otel-flag-pass@collector"),
        },
    );
    for secret in [
        "dynamo-key-1",
        "anthropic-key-1",
        "acme-inline-key",
        "beta-named-key",
        "beta-url-pass",
        "gamma-conventional-key",
        "gh-cli-token-1",
        "exa-search-key",
        "otel-trace-key",
        "auth-file-key-1",
        "resolved-endpoint-key",
        "endpoint-pass",
        "otel-flag-pass",
    ] {
        assert_eq!(secrets.redact(secret), REDACTED, "{secret}");
    }
    assert_eq!(secrets.redact("not-a-secret-at-all"), "not-a-secret-at-all");
}
