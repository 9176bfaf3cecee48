use super::*;

fn url(text: &str) -> reqwest::Url {
    reqwest::Url::parse(text).unwrap()
}

#[test]
fn numeric_tricks_are_normalized_before_the_check() {
    let policy = Policy::default();
    for (trick, ip) in [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://a@127.0.0.1/", "127.0.0.1"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
        ("http://user:pass@[::1]:8080/x", "::1"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
        ),
        ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"),
    ] {
        let err = policy.check_url(&url(trick)).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("blocked by the SSRF guard: {ip} is ")),
            "{trick}: {err}"
        );
    }
    assert_eq!(
        policy
            .check_url(&url("http://127.0.0.1/"))
            .unwrap_err()
            .to_string(),
        "blocked by the SSRF guard: 127.0.0.1 is a loopback address (127.0.0.0/8); allow it with --web-allow-host 127.0.0.1 or --web-allow-private"
    );
    assert!(policy.check_url(&url("http://example.com/")).is_ok());
    assert!(policy.check_url(&url("http://93.184.216.34/")).is_ok());
    assert_eq!(
        policy
            .check_url(&url("file:///etc/passwd"))
            .unwrap_err()
            .to_string(),
        "only http and https URLs can be fetched, not file:"
    );
    assert_eq!(
        policy
            .check_url(&url("ftp://example.com/"))
            .unwrap_err()
            .to_string(),
        "only http and https URLs can be fetched, not ftp:"
    );
    // A refusal of the address rules is told apart from a URL the guard cannot check (the
    // fetch tool reports the first as blocked, the second as failed).
    assert!(
        policy
            .check_url(&url("http://127.0.0.1/"))
            .unwrap_err()
            .is_blocked()
    );
    assert!(
        !policy
            .check_url(&url("ftp://example.com/"))
            .unwrap_err()
            .is_blocked()
    );
    assert!(!GuardError::NoHost.is_blocked());
}

#[test]
fn allowed_hosts_and_allow_private_open_the_guard_deliberately() {
    let policy = Policy {
        allow_hosts: vec![
            "127.0.0.1".into(),
            "[fd00::5]".into(),
            "intranet.corp".into(),
        ],
        ..Policy::default()
    };
    assert!(policy.check_url(&url("http://127.0.0.1:8080/")).is_ok());
    assert!(policy.check_url(&url("http://[fd00::5]/")).is_ok());
    assert!(
        policy
            .check_url(&url("http://10.0.0.1/"))
            .unwrap_err()
            .to_string()
            .starts_with("blocked by the SSRF guard: 10.0.0.1 is a private (RFC 1918) address")
    );
    // Another spelling of an allowed address is that address; another address is not.
    assert!(policy.check_url(&url("http://2130706433/")).is_ok());
    assert!(
        policy
            .check_url(&url("http://[::ffff:127.0.0.1]/"))
            .unwrap_err()
            .to_string()
            .starts_with("blocked by the SSRF guard: ::ffff:127.0.0.1 is an IPv4-mapped address")
    );
    let classifier = Classifier::now();
    let ten = "10.0.0.9".parse().unwrap();
    assert!(
        policy
            .check_resolved("intranet.corp", ten, &classifier)
            .is_ok()
    );
    assert!(
        policy
            .check_resolved("docs.example", ten, &classifier)
            .unwrap_err()
            .to_string()
            .starts_with(
                "blocked by the SSRF guard: docs.example is 10.0.0.9, a private (RFC 1918)"
            )
    );
    // A name that resolves to an address allowed literally.
    let loopback = "127.0.0.1".parse().unwrap();
    assert!(
        policy
            .check_resolved("docs.example", loopback, &classifier)
            .is_ok()
    );
    let open = Policy {
        allow_private: true,
        ..Policy::default()
    };
    assert!(open.check_url(&url("http://10.0.0.1/")).is_ok());
    // An address allowed without brackets is allowed however the URL writes it.
    let bare = Policy {
        allow_hosts: vec!["fd00::7".into()],
        ..Policy::default()
    };
    assert!(bare.check_url(&url("http://[fd00::7]/")).is_ok());
    let peer = "fd00::7".parse().unwrap();
    assert!(bare.check_peer(&url("http://[fd00::7]/"), peer).is_ok());
}

#[test]
fn the_address_a_response_came_from_is_checked_against_its_url() {
    let policy = Policy::default();
    let err = policy
        .check_peer(&url("http://docs.example/"), "10.0.0.7".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "blocked by the SSRF guard: docs.example is 10.0.0.7, a private (RFC 1918) address (10.0.0.0/8); allow it with --web-allow-host docs.example or --web-allow-private"
    );
    assert!(
        policy
            .check_peer(
                &url("http://docs.example/"),
                "93.184.216.34".parse().unwrap()
            )
            .is_ok()
    );
}

#[tokio::test]
async fn a_name_that_resolves_to_a_forbidden_address_is_refused_by_the_resolver() {
    let policy = Arc::new(Policy {
        pinned: vec![
            ("internal.example.com".into(), "10.0.0.7".parse().unwrap()),
            (
                "mapped.example.com".into(),
                "::ffff:169.254.169.254".parse().unwrap(),
            ),
            (
                "public.example.com".into(),
                "93.184.216.34".parse().unwrap(),
            ),
        ],
        ..Policy::default()
    });
    let resolver = GuardedResolver::new(policy);
    let name: Name = "internal.example.com".parse().unwrap();
    let err = resolver.resolve(name).await.err().unwrap().to_string();
    assert!(
        err.starts_with("blocked by the SSRF guard: internal.example.com is 10.0.0.7, a private"),
        "{err}"
    );
    let name: Name = "mapped.example.com".parse().unwrap();
    let err = resolver.resolve(name).await.err().unwrap().to_string();
    assert!(
        err.contains("carrying 169.254.169.254, a link-local"),
        "{err}"
    );
    let name: Name = "public.example.com".parse().unwrap();
    let addrs: Vec<SocketAddr> = resolver.resolve(name).await.unwrap().collect();
    assert_eq!(addrs, ["93.184.216.34:0".parse().unwrap()]);
}
