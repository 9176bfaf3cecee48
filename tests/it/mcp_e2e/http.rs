//! Streamable HTTP (the fault server and server-everything, started by the test) and
//! server-everything over stdio.

use std::io::BufReader;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::*;

/// A server the test started, its process group killed on drop.
struct Started {
    child: Child,
    url: String,
}

impl Drop for Started {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id().cast_signed());
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The fault server on streamable HTTP, on a port the OS picks (read from its ready line).
fn fault_http() -> Started {
    let mut child = Command::new(python())
        .args([fault_script().as_str(), "--http", "0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            let _ = sender.send(line);
        }
    });
    let mut started = Started {
        child,
        url: String::new(),
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the fault server's ready line");
        if let Some(url) = line.strip_prefix("fault_server: listening on ") {
            started.url = url.trim().to_string();
            return started;
        }
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// server-everything on streamable HTTP, once its port takes connections.
fn everything_http() -> Started {
    let port = free_port();
    let child = Command::new(everything())
        .arg("streamableHttp")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Started {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    poll("server-everything to listen", WAIT, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    started
}

/// What the recording proxy saw: the `Authorization` header of every request.
#[derive(Default)]
struct Seen {
    authorization: Mutex<Vec<Option<String>>>,
}

struct Proxy {
    upstream: String,
    seen: Arc<Seen>,
    client: reqwest::Client,
}

/// Passes each request to the upstream server and its answer back, streamed, noting the
/// `Authorization` header worker sent.
async fn forward(State(proxy): State<Arc<Proxy>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    proxy.seen.authorization.lock().unwrap().push(
        parts
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default().to_string()),
    );
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut outgoing = proxy
        .client
        .request(parts.method.clone(), format!("{}{path}", proxy.upstream))
        .body(body.to_vec());
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            outgoing = outgoing.header(name, value);
        }
    }
    match outgoing.send().await {
        Ok(answer) => {
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != "content-length" && name != "transfer-encoding" {
                    response = response.header(name, value);
                }
            }
            response
                .body(Body::from_stream(answer.bytes_stream()))
                .unwrap()
        }
        Err(err) => (
            axum::http::StatusCode::BAD_GATEWAY,
            format!("upstream: {err}"),
        )
            .into_response(),
    }
}

/// A proxy on 127.0.0.1 in front of `upstream` (`http://host:port`): its base URL.
fn proxy(upstream: &str, seen: Arc<Seen>) -> String {
    let state = Arc::new(Proxy {
        upstream: upstream.to_string(),
        seen,
        client: worker::http::client(Duration::from_secs(5), false).unwrap(),
    });
    let app = axum::Router::new().fallback(forward).with_state(state);
    format!("http://{}", serve(app))
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn the_fault_server_over_http_with_a_bearer_header() {
    let scene = Scene::new();
    let server = fault_http();
    let (origin, path) = server
        .url
        .rsplit_once("/mcp")
        .map(|(o, _)| (o, "/mcp"))
        .unwrap();
    let seen = Arc::new(Seen::default());
    let url = format!("{}{path}", proxy(origin, seen.clone()));
    let token = format!("tok-{}", unique("bearer"));
    let cfg = scene.config(json!({"remote": {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer ${TOKEN}"},
        "required": true,
    }}));
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "mcp__remote__echo",
            &args(json!({"text": "over http"})),
        ),
        call("c2", "mcp__remote__add", &args(json!({"a": 20, "b": 22}))),
        // The model repeats the token: the server echoes it, and it is redacted.
        call(
            "c3",
            "mcp__remote__echo",
            &args(json!({"text": format!("the token is {token}")})),
        ),
        answer("done"),
    ]);
    let run = worker_run(&scene, &mock, &["--mcp-config", &cfg], &[("TOKEN", &token)]);
    run.assert_code(0);
    assert_eq!(
        first_status(&run),
        json!({"name": "remote", "status": "ready", "required": true, "tools": 16,
               "ms": first_status(&run)["ms"]})
    );
    assert_eq!(offered_mcp(&mock.requests()[0]), fault_tools("remote"));
    let results = results(&run);
    assert_eq!(results[0], ("over http".to_string(), false));
    assert_eq!(results[1], ("20+22=42".to_string(), false));
    assert_eq!(results[2], ("the token is [REDACTED]".to_string(), false));
    assert_eq!(
        run.all("tool_execution_end")[1]["result"]["details"]["structuredContent"],
        json!({"sum": 42})
    );
    // Every request carried the header; the token is nowhere in the output.
    let authorization = seen.authorization.lock().unwrap().clone();
    assert!(!authorization.is_empty());
    let expected = Some(format!("Bearer {token}"));
    assert!(
        authorization.iter().all(|value| *value == expected),
        "{authorization:?}"
    );
    assert!(!run.stdout.contains(&token), "the token is on stdout");
    assert!(!run.stderr.contains(&token), "the token is on stderr");
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn server_everything_over_http() {
    let scene = Scene::new();
    let server = everything_http();
    let cfg =
        scene.config(json!({"everything": {"type": "http", "url": server.url, "required": true}}));
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "mcp__everything__echo",
            &args(json!({"message": "hi over http"})),
        ),
        call(
            "c2",
            "mcp__everything__get-sum",
            &args(json!({"a": 2, "b": 3})),
        ),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    assert_eq!(first_status(&run)["status"], "ready");
    let results = results(&run);
    assert_eq!(results[0], ("Echo: hi over http".to_string(), false));
    assert!(
        !results[1].1 && results[1].0.contains('5'),
        "{:?}",
        results[1]
    );
}

#[test]
#[ignore = "needs the MCP servers: scripts/mcp-e2e.sh"]
fn server_everything_over_stdio() {
    let scene = Scene::new();
    let cfg = scene.config(
        json!({"everything": {"command": everything(), "args": ["stdio"], "required": true}}),
    );
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "mcp__everything__echo",
            &args(json!({"message": "hi"})),
        ),
        call("c2", "mcp__everything__get-tiny-image", "{}"),
        call(
            "c3",
            "mcp__everything__get-structured-content",
            &args(json!({"location": "New York"})),
        ),
        call("c4", "mcp__everything__get-resource-reference", "{}"),
        answer("done"),
    ]);
    let run = run_with(&scene, &mock, &cfg);
    run.assert_code(0);
    let server = first_status(&run);
    assert_eq!(server["status"], "ready", "{server}");
    let tools = offered_mcp(&mock.requests()[0]);
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
        "mcp__everything__get-structured-content",
    ] {
        assert!(tools.contains(&name.to_string()), "{name}: {tools:?}");
    }
    assert_eq!(server["tools"].as_u64(), Some(tools.len() as u64));
    let ends = run.all("tool_execution_end");
    assert_eq!(ends.len(), 4, "{}", run.stdout);
    assert_eq!(
        (result_text(ends[0]), &ends[0]["isError"]),
        ("Echo: hi".to_string(), &json!(false))
    );
    // The image is a line for the model, its data kept in details.
    let image = &ends[1];
    assert_eq!(image["isError"], false);
    assert!(
        result_text(image).contains("[image: image/png, "),
        "{}",
        result_text(image)
    );
    assert!(
        image["result"]["details"]["content"]
            .as_array()
            .is_some_and(|kept| kept.iter().any(|block| block["type"] == "image")),
        "{image}"
    );
    let structured = &ends[2];
    assert_eq!(structured["isError"], false, "{structured}");
    assert!(
        structured["result"]["details"]["structuredContent"].is_object(),
        "{structured}"
    );
    let resource = &ends[3];
    assert_eq!(resource["isError"], false, "{resource}");
    assert!(
        resource["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("[resource ")),
        "{resource}"
    );
}
