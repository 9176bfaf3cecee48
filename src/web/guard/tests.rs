use super::*;

fn url(text: &str) -> reqwest::Url {
    reqwest::Url::parse(text).unwrap()
}

#[test]
fn every_internal_range_is_refused_and_public_ones_pass() {
    for (ip, rule) in [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private (RFC 1918)"),
        ("172.16.0.1", "private (RFC 1918)"),
        ("192.168.1.1", "private (RFC 1918)"),
        ("169.254.169.254", "link-local (cloud metadata)"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("255.255.255.255", "broadcast"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fd00::1", "private (unique local)"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
        ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata)"),
    ] {
        assert_eq!(blocked_rule(ip.parse().unwrap()), Some(rule), "{ip}");
    }
    for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "100.128.0.1"] {
        assert_eq!(blocked_rule(ip.parse().unwrap()), None, "{ip}");
    }
}

#[test]
fn numeric_tricks_are_normalized_before_the_check() {
    let policy = Policy::default();
    for trick in [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://a@127.0.0.1/",
        "http://user:pass@[::1]:8080/x",
        "https://169.254.169.254/latest/meta-data/",
    ] {
        let err = policy.check_url(&url(trick)).unwrap_err();
        assert!(
            err.starts_with("blocked by the SSRF guard: "),
            "{trick}: {err}"
        );
    }
    assert!(policy.check_url(&url("http://example.com/")).is_ok());
    assert_eq!(
        policy.check_url(&url("file:///etc/passwd")).unwrap_err(),
        "only http and https URLs can be fetched, not file:"
    );
    assert!(policy.check_url(&url("ftp://example.com/")).is_err());
}

#[test]
fn allowed_hosts_and_allow_private_open_the_guard_deliberately() {
    let policy = Policy {
        allow_hosts: vec!["127.0.0.1".into()],
        ..Policy::default()
    };
    assert!(policy.check_url(&url("http://127.0.0.1:8080/")).is_ok());
    assert!(policy.check_url(&url("http://10.0.0.1/")).is_err());
    let open = Policy {
        allow_private: true,
        ..Policy::default()
    };
    assert!(open.check_url(&url("http://10.0.0.1/")).is_ok());
}

#[tokio::test]
async fn a_name_that_resolves_to_a_private_address_is_refused_by_the_resolver() {
    let policy = Arc::new(Policy {
        pinned: vec![
            ("internal.example.com".into(), "10.0.0.7".parse().unwrap()),
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
        err.starts_with("blocked by the SSRF guard: internal.example.com is 10.0.0.7"),
        "{err}"
    );
    let name: Name = "public.example.com".parse().unwrap();
    let addrs: Vec<SocketAddr> = resolver.resolve(name).await.unwrap().collect();
    assert_eq!(addrs, ["93.184.216.34:0".parse().unwrap()]);
}
