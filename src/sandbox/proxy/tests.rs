use super::*;

#[test]
fn hosts_match_exactly_or_under_a_wildcard() {
    let hosts = vec!["github.com".to_string(), "*.pypi.org".to_string()];
    assert!(allowed("github.com", &hosts));
    assert!(allowed("GitHub.com.", &hosts));
    assert!(allowed("files.pypi.org", &hosts));
    assert!(
        !allowed("pypi.org", &hosts),
        "the wildcard needs a subdomain"
    );
    assert!(!allowed("api.github.com", &hosts));
    assert!(!allowed("evilgithub.com", &hosts));
    assert!(!allowed("github.com.evil.io", &hosts));
}

#[test]
fn requests_name_their_destination() {
    assert_eq!(
        destination("CONNECT", "github.com:443"),
        Some(("github.com".into(), 443, true))
    );
    assert_eq!(
        destination("GET", "http://example.org/a?b=1"),
        Some(("example.org".into(), 80, false))
    );
    assert_eq!(destination("GET", "/relative"), None);
    assert_eq!(destination("GET", "ftp://example.org/"), None);
    assert_eq!(
        origin_form(
            "GET http://example.org/a?b=1 HTTP/1.1\r\nHost: example.org\r\n\r\n",
            "http://example.org/a?b=1"
        ),
        "GET /a?b=1 HTTP/1.1\r\nHost: example.org\r\n\r\n"
    );
}
