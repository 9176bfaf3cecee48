//! Attacks on the egress proxy of `--sandbox linux --allow-host`, from a sandboxed command:
//! an allowed name that resolves to loopback, a tunnel to a port the host was not allowed, a
//! plain-HTTP request whose `Host` header names another host, a second request pipelined or
//! smuggled behind the first. Each is refused with a `403` whose body is the reason, and the
//! origin server, a real one on 127.0.0.1, shows that nothing reached it. The requests are
//! written byte for byte with bash's `/dev/tcp` to the proxy's port inside the sandbox, so the
//! test sees the proxy's exact answer.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

/// A web server on 127.0.0.1 that answers `hello` and records every connection and every
/// byte it was sent.
struct Origin {
    port: u16,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let received: Arc<Mutex<Vec<String>>> = Arc::default();
        let (count, log) = (connections.clone(), received.clone());
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let log = log.clone();
                std::thread::spawn(move || {
                    stream
                        .set_read_timeout(Some(Duration::from_secs(3)))
                        .unwrap();
                    let index = {
                        let mut log = log.lock().unwrap();
                        log.push(String::new());
                        log.len() - 1
                    };
                    let mut answered = false;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let mut log = log.lock().unwrap();
                        log[index].push_str(&String::from_utf8_lossy(&buf[..n]));
                        if !answered && log[index].contains("\r\n\r\n") {
                            answered = true;
                            let _ = stream.write_all(
                                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                            );
                            // Done answering; keep reading whatever else comes.
                            let _ = stream.shutdown(std::net::Shutdown::Write);
                        }
                    }
                });
            }
        });
        Origin {
            port,
            connections,
            received,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

fn bash(id: &str, command: &str) -> Reply {
    call(id, "bash", &json!({ "command": command }).to_string())
}

/// A bash command that sends `request` to the proxy as is, in one write, and prints the
/// answer. (bash's own `printf` writes line by line; `cat` of a file writes it whole.)
fn raw(request: &str) -> String {
    let escaped = request
        .replace('%', "%%")
        .replace('\r', "\\r")
        .replace('\n', "\\n");
    format!(
        "printf '{escaped}' > \"$TMPDIR/request\" && exec 3<>/dev/tcp/127.0.0.1/3128 && cat \"$TMPDIR/request\" >&3 && timeout 5 cat <&3"
    )
}

/// Runs the commands under `--sandbox linux` with `flags`; the result text of each, in order.
fn sandboxed(flags: &[&str], commands: &[String]) -> (Run, Vec<String>) {
    let repo = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = commands
        .iter()
        .enumerate()
        .map(|(i, command)| bash(&format!("b{i}"), command))
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let mut args = vec!["--model", "dynamo/m", "--sandbox", "linux"];
    args.extend_from_slice(flags);
    let run = run_worker(
        repo.path(),
        &args,
        "reach what you should not",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    let texts = run
        .all("tool_execution_end")
        .iter()
        .map(|end| {
            end["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .replace('\r', "")
        })
        .collect();
    (run, texts)
}

/// The status line and the body of an HTTP answer.
fn answer_of(text: &str) -> (&str, &str) {
    let status = text.lines().next().unwrap_or_default();
    let body = text.split_once("\n\n").map(|(_, body)| body.trim_end());
    (status, body.unwrap_or_default())
}

fn forbidden(text: &str, reason: &str) {
    assert_eq!(
        answer_of(text),
        ("HTTP/1.1 403 Forbidden", reason),
        "the whole answer: {text}"
    );
}

#[test]
fn an_allowed_name_that_resolves_to_loopback_is_refused_unless_the_address_is_allowed() {
    let origin = Origin::start();
    let port = origin.port;
    let allow_name = format!("localhost:{port}");
    let commands = [
        raw(&format!(
            "GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"
        )),
        raw(&format!(
            "CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"
        )),
        // Another spelling of loopback is still loopback, and still not an allowed host.
        raw(&format!(
            "CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\r\n\r\n"
        )),
    ];
    let (run, texts) = sandboxed(&["--allow-host", &allow_name], &commands);
    // localhost has two loopback addresses; whichever the resolver lists first is named.
    let refusals = [
        "worker sandbox: localhost resolves to 127.0.0.1, a loopback address (127.0.0.0/8); to allow it, name the address itself: --allow-host 127.0.0.1",
        "worker sandbox: localhost resolves to ::1, a loopback address (::1/128); to allow it, name the address itself: --allow-host [::1]",
    ];
    for text in &texts[..2] {
        let (status, body) = answer_of(text);
        assert_eq!(status, "HTTP/1.1 403 Forbidden", "{text}");
        assert!(refusals.contains(&body), "{text}");
    }
    forbidden(
        &texts[2],
        "worker sandbox: [::ffff:7f00:1] is not an --allow-host host",
    );
    assert_eq!(origin.connections(), 0, "{:?}", origin.received());
    assert_eq!(
        run.first("sandbox_status")["status"]["allowedHttpHosts"],
        json!([allow_name])
    );

    // Naming the address itself is the deliberate way to reach it.
    let commands = [format!("curl -sS -m 5 http://localhost:{port}/")];
    let (_, texts) = sandboxed(
        &["--allow-host", &allow_name, "--allow-host", "127.0.0.1"],
        &commands,
    );
    assert_eq!(texts[0], "hello");
    let received = origin.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(
        received[0].starts_with("GET / HTTP/1.1\r\nHost: localhost:")
            && received[0].ends_with("Connection: close\r\n\r\n"),
        "{received:?}"
    );
}

#[test]
fn a_tunnel_or_request_to_a_port_the_host_was_not_allowed_is_refused() {
    let allowed = Origin::start();
    let other = Origin::start();
    let (a, b) = (allowed.port, other.port);
    let commands = [
        raw(&format!(
            "CONNECT 127.0.0.1:{b} HTTP/1.1\r\nHost: 127.0.0.1:{b}\r\n\r\n"
        )),
        raw(&format!(
            "GET http://127.0.0.1:{b}/ HTTP/1.1\r\nHost: 127.0.0.1:{b}\r\n\r\n"
        )),
        // An entry with a port admits that port only: not 443.
        raw("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n"),
        format!("curl -sS -m 5 https://127.0.0.1:{b}/ 2>&1; echo code=$?"),
        // The allowed port: a tunnel, through which a request gets its answer.
        raw(&format!(
            "CONNECT 127.0.0.1:{a} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )),
    ];
    let (_, texts) = sandboxed(&["--allow-host", &format!("127.0.0.1:{a}")], &commands);
    let refusal = format!(
        "worker sandbox: port {b} is not allowed for 127.0.0.1 (allowed: {a}; add --allow-host 127.0.0.1:{b} to allow it)"
    );
    forbidden(&texts[0], &refusal);
    forbidden(&texts[1], &refusal);
    forbidden(
        &texts[2],
        &format!(
            "worker sandbox: port 443 is not allowed for 127.0.0.1 (allowed: {a}; add --allow-host 127.0.0.1:443 to allow it)"
        ),
    );
    assert!(
        texts[3].contains("CONNECT tunnel failed, response 403") && texts[3].contains("code=56"),
        "{}",
        texts[3]
    );
    assert!(
        texts[4].starts_with("HTTP/1.1 200 Connection established\n\nHTTP/1.1 200 OK")
            && texts[4].ends_with("hello"),
        "{}",
        texts[4]
    );
    assert_eq!(other.connections(), 0, "{:?}", other.received());
    assert_eq!(allowed.connections(), 1);
}

#[test]
fn a_host_header_that_names_another_host_is_refused() {
    let origin = Origin::start();
    let port = origin.port;
    let commands = [
        raw(&format!(
            "GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"
        )),
        format!("curl -sS -m 5 -H 'Host: evil.example' http://127.0.0.1:{port}/"),
        raw(&format!(
            "GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n\r\n"
        )),
    ];
    let (_, texts) = sandboxed(&["--allow-host", &format!("127.0.0.1:{port}")], &commands);
    let refusal = format!(
        "worker sandbox: the Host header names 'evil.example', not the request's host 127.0.0.1:{port}"
    );
    forbidden(&texts[0], &refusal);
    assert_eq!(texts[1].trim_end(), refusal, "curl shows the body");
    forbidden(&texts[2], "worker sandbox: more than one Host header");
    assert_eq!(origin.connections(), 0, "{:?}", origin.received());
}

#[test]
fn a_second_request_on_the_same_connection_never_reaches_the_server() {
    let origin = Origin::start();
    let port = origin.port;
    let first =
        format!("GET http://127.0.0.1:{port}/first HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let second =
        format!("GET http://127.0.0.1:{port}/second HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let smuggled = format!(
        "POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"
    );
    let escaped = |text: &str| text.replace('\r', "\\r").replace('\n', "\\n");
    let commands = [
        // Pipelined in one write: refused before anything is sent.
        raw(&format!("{first}{second}")),
        raw(&smuggled),
        // The second request a moment after the first (written line by line): the first is
        // answered, the second goes nowhere.
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/3128 && {{ printf '{}'; sleep 0.5; printf '{}'; }} >&3; timeout 5 cat <&3",
            escaped(&first),
            escaped(&second)
        ),
    ];
    let (_, texts) = sandboxed(&["--allow-host", &format!("127.0.0.1:{port}")], &commands);
    forbidden(
        &texts[0],
        &format!(
            "worker sandbox: one request per connection: {} more bytes follow the request",
            second.len()
        ),
    );
    forbidden(
        &texts[1],
        "worker sandbox: a request body needs a Content-Length; Transfer-Encoding (chunked) is not forwarded",
    );
    assert_eq!(
        answer_of(&texts[2]),
        ("HTTP/1.1 200 OK", "hello"),
        "{}",
        texts[2]
    );
    let received = origin.received();
    assert_eq!(
        received,
        [format!(
            "GET /first HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        )],
        "exactly the first request, and nothing after it"
    );
}
