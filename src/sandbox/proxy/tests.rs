use super::*;

fn host(text: &str) -> Host<String> {
    Host::parse(text).unwrap()
}

fn ports(list: &Allowlist, name: &str) -> Vec<u16> {
    list.ports(&host(name)).into_iter().collect()
}

#[test]
fn entries_parse_to_one_spelling_or_say_what_is_expected() {
    for (given, canonical) in [
        ("github.com", "github.com"),
        (" GitHub.com. ", "github.com"),
        ("*.pypi.org", "*.pypi.org"),
        ("github.com:22", "github.com:22"),
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("127.0.0.1:8080", "127.0.0.1:8080"),
        ("::1", "[::1]"),
        ("[::1]", "[::1]"),
        ("[::1]:443", "[::1]:443"),
    ] {
        assert_eq!(
            AllowedHost::parse(given).map(|h| h.to_string()),
            Ok(canonical.to_string()),
            "{given}"
        );
    }
    for bad in [
        "",
        "*",
        "*.",
        "a.*.com",
        "*.127.0.0.1",
        "http://x",
        "x:0",
        "x:65536",
        "x:+80",
        "x:",
        "[::1",
        "[::1]x",
        "a..b",
        "exa mple.com",
        // Full-width digits that IDNA would map to 127.0.0.1: an entry is written in ASCII.
        "\u{ff11}\u{ff12}\u{ff17}.0.0.1",
        "b\u{fc}cher.de",
    ] {
        let err = AllowedHost::parse(bad).unwrap_err().to_string();
        assert!(
            err.starts_with("expected HOST, *.DOMAIN or an IP address"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn hosts_match_exactly_or_under_a_wildcard_on_their_ports() {
    let list = Allowlist::parse(&[
        "github.com",
        "*.pypi.org",
        "github.com:22",
        "127.0.0.1:9000",
    ])
    .unwrap();
    assert_eq!(ports(&list, "github.com"), [22, 80, 443]);
    assert_eq!(ports(&list, "GitHub.com."), [22, 80, 443]);
    assert_eq!(ports(&list, "files.pypi.org"), [80, 443]);
    assert_eq!(ports(&list, "127.0.0.1"), [9000]);
    assert_eq!(
        ports(&list, "0x7f.0.0.1"),
        [9000],
        "one address, however spelled"
    );
    for other in [
        "pypi.org",
        "api.github.com",
        "evilgithub.com",
        "github.com.evil.io",
        "xpypi.org",
        "evilpypi.org",
        "localhost",
        "[::ffff:127.0.0.1]",
    ] {
        assert!(ports(&list, other).is_empty(), "{other}");
    }
    // A name that is all suffix and dot names no subdomain.
    assert!(list.ports(&Host::Domain(".pypi.org".into())).is_empty());
    let v6 = Allowlist::parse(&["[::1]:8443"]).unwrap();
    assert_eq!(ports(&v6, "[::1]"), [8443]);
    assert_eq!(ports(&v6, "[0:0:0:0:0:0:0:1]"), [8443]);
    assert!(ports(&v6, "[::2]").is_empty());
    assert!(ports(&v6, "127.0.0.1").is_empty());
    assert!(list.names_address("127.0.0.1".parse().unwrap()));
    assert!(!list.names_address("10.0.0.1".parse().unwrap()));
}

fn http(request: &str) -> Result<Option<Request>, String> {
    request::parse(request.as_bytes()).map_err(|err| err.to_string())
}

#[test]
fn requests_name_their_destination() {
    assert_eq!(
        http("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\nhello"),
        Ok(Some(Request::Connect {
            target: Target {
                host: host("github.com"),
                port: 443
            },
            early: b"hello".to_vec(),
        }))
    );
    assert_eq!(
        http("GET http://example.org/a HTTP/1.1\r\nHost: exam"),
        Ok(None)
    );
    let Ok(Some(Request::Http {
        target,
        head,
        body_length,
        early,
    })) = http(
        "POST http://Example.org/a?b=1#frag HTTP/1.1\r\nHost: example.org\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive, X-Trace\r\nX-Trace: 1\r\nContent-Length: 5\r\nAccept: */*\r\n\r\nhel",
    )
    else {
        panic!("not forwarded");
    };
    assert_eq!(target.to_string(), "example.org:80");
    assert_eq!(
        String::from_utf8(head).unwrap(),
        "POST /a?b=1 HTTP/1.1\r\nHost: example.org\r\nContent-Length: 5\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    assert_eq!((body_length, early), (5, b"hel".to_vec()));
    // An HTTP/1.0 request without Host gets one.
    let Ok(Some(Request::Http { head, .. })) =
        http("GET http://example.org:8080/ HTTP/1.0\r\n\r\n")
    else {
        panic!("not forwarded");
    };
    assert_eq!(
        String::from_utf8(head).unwrap(),
        "GET / HTTP/1.0\r\nHost: example.org:8080\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn requests_that_could_hide_another_are_refused() {
    for (request, reason) in [
        (
            "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n",
            "the Host header names 'b.example', not the request's host a.example:80",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nHost: a.example:8080\r\n\r\n",
            "the Host header names 'a.example:8080', not the request's host a.example:80",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nHost: a.example@b.example\r\n\r\n",
            "the Host header names 'a.example@b.example', not the request's host a.example:80",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
            "more than one Host header",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\nGET http://a.example/2 HTTP/1.1\r\n\r\n",
            "one request per connection: 35 more bytes follow the request",
        ),
        (
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\n\r\nxGET / HTTP/1.1\r\n\r\n",
            "one request per connection: 18 more bytes follow the request",
        ),
        (
            "POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
            "a request body needs a Content-Length; Transfer-Encoding (chunked) is not forwarded",
        ),
        (
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\n",
            "more than one Content-Length header",
        ),
        (
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
            "Content-Length '-4' is not a length",
        ),
        (
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
            "Content-Length '0x10' is not a length",
        ),
        (
            "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n",
            "a proxy request names its host: CONNECT HOST:PORT or an http:// URL, not '/'",
        ),
        (
            "GET https://a.example/ HTTP/1.1\r\n\r\n",
            "only http:// URLs are forwarded (https:// goes through a CONNECT tunnel)",
        ),
        (
            "CONNECT a.example HTTP/1.1\r\n\r\n",
            "CONNECT needs HOST:PORT, not 'a.example'",
        ),
        (
            "CONNECT a.example:0 HTTP/1.1\r\n\r\n",
            "CONNECT needs HOST:PORT, not 'a.example:0'",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
            "not an HTTP/1.x request (invalid header name)",
        ),
        (
            "GET http://a.example/ HTTP/1.1\r\nHost : a.example\r\n\r\n",
            "not an HTTP/1.x request (invalid header name)",
        ),
    ] {
        assert_eq!(http(request), Err(reason.to_string()), "{request:?}");
    }
    let huge = format!(
        "GET http://a.example/ HTTP/1.1\r\nX: {}",
        "x".repeat(request::MAX_HEAD)
    );
    assert_eq!(http(&huge), Err("a request head over 64 KiB".to_string()));
}

#[test]
fn a_connection_header_cannot_strip_what_frames_the_request() {
    let Ok(Some(Request::Http { head, .. })) = http(
        "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nConnection: content-length, host\r\nContent-Length: 0\r\n\r\n",
    ) else {
        panic!("not forwarded");
    };
    assert_eq!(
        String::from_utf8(head).unwrap(),
        "POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn any_bytes_are_a_request_an_incomplete_head_or_a_refusal(
            pieces in proptest::collection::vec(prop_oneof![
                proptest::collection::vec(any::<u8>(), 1..8),
                Just(b"CONNECT example.com:443 HTTP/1.1\r\n".to_vec()),
                Just(b"GET http://example.com/ HTTP/1.1\r\n".to_vec()),
                Just(b"Host: example.com\r\n".to_vec()),
                Just(b"Content-Length: 3\r\n".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"abc".to_vec()),
            ], 0..12),
        ) {
            let bytes = pieces.concat();
            match request::parse(&bytes) {
                // An incomplete head stays incomplete however much of it is cut off.
                Ok(None) => {
                    prop_assert!(bytes.len() <= request::MAX_HEAD);
                    for cut in 0..bytes.len() {
                        prop_assert_eq!(request::parse(&bytes[..cut]), Ok(None));
                    }
                }
                // What follows the head is the client's, passed on as read, and a plain request
                // never carries more than its declared body.
                Ok(Some(request::Request::Connect { early, .. })) => prop_assert!(bytes.ends_with(&early)),
                Ok(Some(request::Request::Http { head, body_length, early, .. })) => {
                    prop_assert!(bytes.ends_with(&early));
                    prop_assert!(early.len() as u64 <= body_length);
                    prop_assert!(head.ends_with(b"\r\n\r\n"));
                }
                Err(reason) => prop_assert!(!reason.to_string().is_empty()),
            }
        }

        #[test]
        fn any_entry_parses_or_is_refused_and_parses_back(text in "[a-z0-9.*:\\[\\]-]{0,30}") {
            if let Ok(entry) = AllowedHost::parse(&text) {
                prop_assert_eq!(AllowedHost::parse(&entry.to_string()), Ok(entry));
            }
        }

        /// A forwarded head is exactly one request: parsed again, it is complete, with no
        /// bytes past it, and says `Connection: close`.
        #[test]
        fn a_forwarded_head_is_one_request(path in "/[a-z0-9/?=&%]{0,20}", extra in "[A-Za-z-]{1,12}", value in "[ -~]{0,20}") {
            let text = format!("GET http://a.example{path} HTTP/1.1\r\nHost: a.example\r\n{extra}: {value}\r\n\r\n");
            if let Ok(Some(Request::Http { head, .. })) = request::parse(text.as_bytes()) {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut again = httparse::Request::new(&mut headers);
                prop_assert_eq!(again.parse(&head), Ok(httparse::Status::Complete(head.len())));
                let closes = again.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("connection")).count();
                prop_assert_eq!(closes, 1);
            }
        }
    }
}
