use super::*;

#[test]
fn errors_carry_githubs_message_details_and_a_hint() {
    let err = status_error(
        422,
        r#"{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing_field"}]}"#,
        &HeaderMap::new(),
    );
    assert_eq!(err.message, "Validation Failed (title: missing_field)");
    assert!(!err.transient);
    assert_eq!(
        err.payload(),
        json!({"error": "Validation Failed (title: missing_field)", "status": 422, "transient": false, "hint": "Validation failed: check the parameters against the message above."})
    );
    let err = status_error(503, "<html>down</html>", &HeaderMap::new());
    assert_eq!(err.message, "<html>down</html>");
    assert!(err.transient);
    assert_eq!(
        err.payload()["hint"],
        "This is a transient error. The request was retried automatically but still failed. Wait and try again."
    );
}

#[test]
fn a_spent_rate_limit_is_transient_and_waits_for_the_reset() {
    let mut headers = HeaderMap::new();
    headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    headers.insert(
        "x-ratelimit-reset",
        HeaderValue::from_str(&(now + 7).to_string()).unwrap(),
    );
    assert!(status_error(403, r#"{"message":"API rate limit exceeded"}"#, &headers).transient);
    let wait = server_wait(&headers).unwrap();
    assert!(
        wait <= Duration::from_secs(7) && wait >= Duration::from_secs(5),
        "{wait:?}"
    );
    headers.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(server_wait(&headers), Some(Duration::from_secs(2)));
}
