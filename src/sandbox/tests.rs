use super::*;

#[test]
fn none_and_linux_are_accepted_and_the_error_names_them() {
    assert_eq!(Backend::parse("none").ok(), Some(Backend::None));
    assert_eq!(Backend::parse("linux").ok(), Some(Backend::Linux));
    assert_eq!(
        Backend::parse("gondolin").unwrap_err().to_string(),
        "the gondolin backend is not available in worker; supported: none, linux"
    );
    assert_eq!(
        Backend::parse("docker").unwrap_err().to_string(),
        "unknown sandbox backend 'docker'; supported: none, linux"
    );
}

/// The parsers' results with the errors as the user reads them.
fn env_pair(value: &str) -> Result<(String, String), String> {
    parse_env_pair(value).map_err(|err| err.to_string())
}

fn host(value: &str) -> Result<String, String> {
    parse_host(value).map_err(|err| err.to_string())
}

#[test]
fn env_pairs_and_hosts_are_validated() {
    assert_eq!(
        env_pair("A_1=x=y"),
        Ok(("A_1".to_string(), "x=y".to_string()))
    );
    assert_eq!(env_pair("K="), Ok(("K".to_string(), String::new())));
    let not_a_name = |key: &str| {
        Err(format!(
            "KEY must be a POSIX variable name (letters, digits, _), got '{key}'"
        ))
    };
    assert_eq!(env_pair("1A=x"), not_a_name("1A"));
    assert_eq!(
        env_pair("noequals"),
        Err("expected KEY=VAL, got 'noequals'".to_string())
    );
    assert_eq!(env_pair("=x"), not_a_name(""));
    assert_eq!(host(" *.github.com "), Ok("*.github.com".to_string()));
    assert_eq!(host("GitHub.com:22"), Ok("github.com:22".to_string()));
    assert_eq!(host("[::1]:8443"), Ok("[::1]:8443".to_string()));
    let not_a_host = |host: &str| {
        Err(format!(
            "expected HOST, *.DOMAIN or an IP address, optionally with :PORT (1-65535), got '{host}'"
        ))
    };
    assert_eq!(host("http://x"), not_a_host("http://x"));
    assert_eq!(host(""), not_a_host(""));
}

#[test]
fn restrictions_that_cannot_be_enforced_are_warned_about() {
    assert!(Settings::default().warnings().is_empty());
    let asked = Settings {
        no_network: true,
        allow_hosts: Some(vec!["github.com".into()]),
        ..Settings::default()
    };
    let warnings = asked.warnings();
    assert_eq!(warnings.len(), 2);
    assert!(warnings[0].starts_with("--no-network has no effect"));
}
