use super::*;
use crate::config::MapEnv;

fn sid() -> crate::ids::SessionId {
    crate::ids::SessionId::parse("s").unwrap()
}

fn status_of(configured: &Configured) -> Option<ExtensionStatus> {
    configured
        .extension
        .as_ref()
        .and_then(|e| match e.status().pop() {
            Some(StatusLine::Extension(status)) => Some(status),
            _ => None,
        })
}

#[test]
fn off_unless_asked_and_a_bare_endpoint_does_not_enable_it() {
    let env = MapEnv::from_pairs(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]);
    let configured = configure(
        &env,
        &Flags::default(),
        &sid(),
        "none",
        None,
        &Secrets::default(),
    )
    .unwrap();
    assert!(configured.extension.is_none());
    assert!(configured.warnings.is_empty());
}

#[test]
fn an_endpoint_that_is_not_http_is_refused_when_export_is_on() {
    let on = Flags {
        otel: true,
        ..Flags::default()
    };
    let refused = |env: &MapEnv, flags: &Flags| {
        configure(env, flags, &sid(), "none", None, &Secrets::default())
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default()
    };
    let env = MapEnv::from_pairs(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318")]);
    assert_eq!(
        refused(&env, &on),
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT 'collector:4318' has no scheme; expected an http:// or https:// URL"
    );
    // Off, the variable is not read, so not checked.
    assert!(
        configure(
            &env,
            &Flags::default(),
            &sid(),
            "none",
            None,
            &Secrets::default()
        )
        .is_ok()
    );
    let flags = Flags {
        endpoint: Some("grpc://collector:4317".into()),
        ..on
    };
    assert_eq!(
        refused(&MapEnv::default(), &flags),
        "--otel-endpoint 'grpc://collector:4317': unsupported scheme 'grpc'; expected an http:// or https:// URL"
    );
}

#[test]
fn no_otel_beats_otel_and_the_env_switch() {
    let env = MapEnv::from_pairs(&[("WORKER_OTEL_ENABLED", "yes")]);
    let flags = Flags {
        otel: true,
        no_otel: true,
        ..Flags::default()
    };
    let status =
        status_of(&configure(&env, &flags, &sid(), "none", None, &Secrets::default()).unwrap())
            .unwrap();
    assert_eq!(status.status, ExtensionState::Skipped);
    assert_eq!(status.reason.as_deref(), Some("disabled-by-flag"));
}

#[test]
fn content_is_clipped_with_a_count() {
    let long = "x".repeat(CONTENT_LIMIT + 10);
    assert_eq!(
        clip(&long),
        format!("{}…[truncated 10 chars]", "x".repeat(CONTENT_LIMIT))
    );
    assert_eq!(clip("short"), "short");
}

#[test]
fn collector_credentials_are_every_header_value_and_url_password() {
    let env = MapEnv::from_pairs(&[
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20otlp-token-1, x-team = team-key-22",
        ),
        (
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            "api-key=metrics-key-3",
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://u:env-pass-4@collector",
        ),
    ]);
    assert_eq!(
        credentials(&env, Some("http://u:flag-pass-5@collector")),
        [
            "otlp-token-1",
            "Bearer%20otlp-token-1",
            "Bearer otlp-token-1",
            "team-key-22",
            "team-key-22",
            "metrics-key-3",
            "metrics-key-3",
            "env-pass-4",
            "env-pass-4",
            "flag-pass-5",
            "flag-pass-5",
        ]
    );
}
