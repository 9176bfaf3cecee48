use super::*;

#[test]
fn the_marker_is_a_one_token_request() {
    let request = request("m", Some("acme"), "s:r0:t2:a1");
    assert_eq!(request.body["max_tokens"], 1);
    assert_eq!(request.body["stream"], false);
    assert_eq!(request.header("x-request-id"), Some("s:r0:t2:a1:final"));
    assert_eq!(request.header("x-dynamo-session-final"), Some("true"));
    assert_eq!(request.header("x-tenant-id"), Some("acme"));
}
