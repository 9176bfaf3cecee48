use super::*;

#[test]
fn http_and_https_urls_with_a_host_are_taken() {
    for raw in [
        "http://127.0.0.1:8000/v1",
        "https://gw.example/v1",
        " https://api.github.com ",
        "http://[::1]:4318",
    ] {
        assert!(http_url("X", raw).is_ok(), "{raw}");
    }
}

#[test]
fn every_other_scheme_is_refused_naming_the_source_and_the_scheme() {
    assert_eq!(
        http_url("--providers.acme.baseUrl", "ftp://gw.example/v1")
            .unwrap_err()
            .to_string(),
        "--providers.acme.baseUrl 'ftp://gw.example/v1': unsupported scheme 'ftp'; expected an http:// or https:// URL"
    );
    assert_eq!(
        http_url("DYNAMO_BASE_URL", "file:///etc/passwd")
            .unwrap_err()
            .to_string(),
        "DYNAMO_BASE_URL 'file:///etc/passwd': unsupported scheme 'file'; expected an http:// or https:// URL"
    );
    for raw in ["gw.example/v1", "localhost:8000", "mailto:a@b"] {
        assert_eq!(
            http_url("X", raw).unwrap_err().to_string(),
            format!("X '{raw}' has no scheme; expected an http:// or https:// URL")
        );
    }
    assert!(
        http_url("X", "http://")
            .unwrap_err()
            .to_string()
            .starts_with("X 'http://' is not a URL")
    );
}

#[test]
fn a_password_in_a_refused_url_is_not_repeated() {
    let refused = http_url("X", "ftp://user:hunter2@gw.example/")
        .unwrap_err()
        .to_string();
    assert!(refused.contains("ftp://user:***@gw.example/"), "{refused}");
    let refused = http_url("X", "http://user:hunter2@bad host/")
        .unwrap_err()
        .to_string();
    assert!(!refused.contains("hunter2"), "{refused}");
}

#[test]
fn a_url_may_be_allowed_other_schemes() {
    let git = ["https", "http", "file"];
    assert!(url_with_scheme("X", "file:///srv/mirror", &git).is_ok());
    assert!(url_with_scheme("X", "https://ghe.example", &git).is_ok());
    assert_eq!(
        url_with_scheme("X", "ssh://git@ghe.example", &git)
            .unwrap_err()
            .to_string(),
        "X 'ssh://git@ghe.example': unsupported scheme 'ssh'; expected a URL starting with https://, http://, file://"
    );
    assert_eq!(
        http_url("X", "file:///srv/mirror").unwrap_err().to_string(),
        "X 'file:///srv/mirror': unsupported scheme 'file'; expected an http:// or https:// URL"
    );
}
