use super::*;

#[test]
fn status_errors_use_the_servers_message() {
    let err = LlmError::from_status(
        401,
        r#"{"error":{"message":"bad key","type":"auth"}}"#,
        None,
    );
    assert_eq!(err.to_string(), "HTTP 401 Unauthorized: bad key");
    let err = LlmError::from_status(
        400,
        r#"{"message":"unknown field agent_context","code":400}"#,
        None,
    );
    assert_eq!(
        err.to_string(),
        "HTTP 400 Bad Request: unknown field agent_context"
    );
    let err = LlmError::from_status(502, "<html>bad gateway</html>", None);
    assert_eq!(
        err.to_string(),
        "HTTP 502 Bad Gateway: <html>bad gateway</html>"
    );
    assert_eq!(
        LlmError::from_status(599, "", None).to_string(),
        "HTTP 599: (empty response body)"
    );
}

#[test]
fn only_transient_failures_are_retryable() {
    for status in [408, 429, 500, 503] {
        assert!(
            LlmError::from_status(status, "", None).is_retryable(),
            "{status}"
        );
    }
    for status in [400, 401, 403, 404, 422] {
        assert!(
            !LlmError::from_status(status, "", None).is_retryable(),
            "{status}"
        );
    }
    assert!(LlmError::Truncated.is_retryable());
    assert!(!LlmError::Transport(TransportError::Replay("x".into())).is_retryable());
}
