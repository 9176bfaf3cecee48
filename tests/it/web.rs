//! web_search and web_fetch through the binary: mock Tavily, Exa and Brave APIs and a mock web
//! server over HTTP on 127.0.0.1, the rails, the budget, and the SSRF guard.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

/// What a mock provider saw: path, headers, body (JSON) or query.
type Seen = Arc<Mutex<Vec<(String, HeaderMap, Value)>>>;

fn provider_mock() -> (String, Seen) {
    let seen: Seen = Arc::default();
    async fn tavily_search(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> Response {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock()
            .unwrap()
            .push(("/search".into(), headers.clone(), body.clone()));
        if body["query"] == "rate me" {
            return (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
        }
        if body["query"] == "echo the credentials" {
            // A provider that reflects the request's credentials into a result: what reaches
            // stdout then depends on redaction alone.
            let authorization = headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default();
            let hit = json!({"title": "Echo", "url": "https://echo.example/", "content": format!("you sent {authorization}")});
            return axum::Json(json!({"results": [hit]})).into_response();
        }
        let results: Vec<Value> = (0..15)
            .map(|i| json!({"title": format!("Result {i}"), "url": format!("https://r{i}.example/"), "content": format!("snippet {i}"), "published_date": "2026-11-01"}))
            .collect();
        axum::Json(json!({"results": results})).into_response()
    }
    async fn tavily_extract(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> Response {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock()
            .unwrap()
            .push(("/extract".into(), headers, body.clone()));
        axum::Json(json!({"results": [{"url": body["urls"][0], "raw_content": "# Extracted\n\nBy the provider."}], "failed_results": []})).into_response()
    }
    async fn exa_search(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> Response {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock()
            .unwrap()
            .push(("/exa/search".into(), headers, body));
        axum::Json(json!({"results": [{"title": "Exa hit", "url": "https://exa.example/", "highlights": ["one", "two"], "publishedDate": "2026-10-10"}]})).into_response()
    }
    async fn brave(State(seen): State<Seen>, headers: HeaderMap, uri: axum::http::Uri) -> Response {
        let query = uri.query().unwrap_or_default().to_string();
        seen.lock()
            .unwrap()
            .push(("/res/v1/web/search".into(), headers, json!(query)));
        axum::Json(json!({"web": {"results": [{"title": "Brave hit", "url": "https://brave.example/", "description": "desc", "page_age": "2026-09-09"}]}})).into_response()
    }
    let app = Router::new()
        .route("/search", post(tavily_search))
        .route("/extract", post(tavily_extract))
        .route("/exa/search", post(exa_search))
        .route("/res/v1/web/search", get(brave))
        .with_state(seen.clone());
    (format!("http://{}", serve(app)), seen)
}

/// A web server with the pages the rails are about.
fn site() -> String {
    async fn page() -> Response {
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<html><head><title>Docs</title><script>evil()</script></head><body><h1>Install</h1><p>Run <code>make</code>.</p></body></html>",
        )
            .into_response()
    }
    async fn json_page() -> Response {
        ([(header::CONTENT_TYPE, "application/json")], r#"{"a":1}"#).into_response()
    }
    async fn binary() -> Response {
        (
            [(header::CONTENT_TYPE, "application/octet-stream")],
            vec![0u8, 1, 2],
        )
            .into_response()
    }
    async fn huge() -> Response {
        (
            [(header::CONTENT_TYPE, "text/plain")],
            "x".repeat(2 * 1024 * 1024),
        )
            .into_response()
    }
    async fn hop(axum::extract::Path(n): axum::extract::Path<u32>) -> Response {
        let location = if n == 0 {
            "/page".to_string()
        } else {
            format!("/hop/{}", n - 1)
        };
        (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
    }
    async fn to_file() -> Response {
        (
            StatusCode::FOUND,
            [(header::LOCATION, "file:///etc/passwd")],
        )
            .into_response()
    }
    async fn to_metadata() -> Response {
        (
            StatusCode::FOUND,
            [(header::LOCATION, "http://169.254.169.254/latest/meta-data/")],
        )
            .into_response()
    }
    let app = Router::new()
        .route("/page", get(page))
        .route("/json", get(json_page))
        .route("/binary", get(binary))
        .route("/huge", get(huge))
        .route("/hop/{n}", get(hop))
        .route("/to-metadata", get(to_metadata))
        .route("/to-file", get(to_file));
    format!("http://{}", serve(app))
}

/// A run whose model calls `tool` with `args` once, then answers.
fn call_once(tool: &str, args: Value, flags: &[&str], env: &[(&str, &str)]) -> (Run, Value) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![call("c1", tool, &args.to_string()), answer("done")]);
    let mut all_env = vec![("DYNAMO_BASE_URL", mock.url.as_str())];
    all_env.extend_from_slice(env);
    let mut args = vec!["--model", "dynamo/m"];
    args.extend_from_slice(flags);
    let run = run_worker(dir.path(), &args, "q", &all_env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let end = run.first("tool_execution_end").clone();
    (run, end)
}

fn text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_provider_is_chosen_by_flag_or_key_and_the_status_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let status = |flags: &[&str], env: &[(&str, &str)]| {
        let mock = MockLlm::start(vec![answer("ok")]);
        let mut all_env = vec![("DYNAMO_BASE_URL", mock.url.as_str())];
        all_env.extend_from_slice(env);
        let mut args = vec!["--model", "dynamo/m"];
        args.extend_from_slice(flags);
        let run = run_worker(dir.path(), &args, "q", &all_env);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let tools: Vec<String> = mock.requests()[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect();
        (run.extension("web-search").clone(), tools, run.stderr)
    };
    let (line, tools, _) = status(&[], &[]);
    assert_eq!(line["reason"], "no-credentials");
    assert!(!tools.contains(&"web_search".to_string()));

    let keys = [
        ("BRAVE_SEARCH_API_KEY", "b-key"),
        ("TAVILY_API_KEY", "t-key"),
    ];
    let (line, tools, _) = status(&[], &keys);
    assert_eq!(
        (
            line["status"].as_str(),
            line["provider"].as_str(),
            line["toolCount"].as_u64(),
            line["maxCalls"].as_u64()
        ),
        (Some("configured"), Some("tavily"), Some(2), Some(30))
    );
    assert!(tools.contains(&"web_search".to_string()) && tools.contains(&"web_fetch".to_string()));

    let (line, _, _) = status(
        &[
            "--web-search-provider",
            "brave",
            "--web-search-max-calls",
            "5",
        ],
        &keys,
    );
    assert_eq!(
        (line["provider"].as_str(), line["maxCalls"].as_u64()),
        (Some("brave"), Some(5))
    );

    let (line, _, stderr) = status(&["--web-search-provider", "exa"], &keys);
    assert_eq!(line["reason"], "no-credentials");
    assert!(
        stderr.contains("worker: web-search extension disabled (no-credentials): --web-search-provider=exa set but EXA_API_KEY is empty\n"),
        "{stderr}"
    );

    let (line, tools, _) = status(&["--no-web-search"], &keys);
    assert_eq!(line["reason"], "disabled-by-flag");
    assert!(!tools.contains(&"web_fetch".to_string()));
}

#[test]
fn web_search_works_against_each_provider() {
    let (api, seen) = provider_mock();
    // Tavily: at most 10 results whatever max_results says; key as a bearer token.
    let (_, end) = call_once(
        "web_search",
        json!({"query": "rust async", "max_results": 50, "include_domains": ["example"], "search_depth": "advanced"}),
        &[],
        &[("TAVILY_API_KEY", "t-key"), ("TAVILY_BASE_URL", &api)],
    );
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(
        end["result"]["details"]["results"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let out = text(&end);
    assert!(
        out.starts_with(
            "1. Result 0\n   https://r0.example/\n   Published: 2026-11-01\n   snippet 0"
        ),
        "{out}"
    );
    let (path, headers, body) = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(path, "/search");
    assert_eq!(headers["authorization"], "Bearer t-key");
    assert_eq!(body["max_results"], 10);
    assert_eq!(body["include_domains"], json!(["example"]));
    assert_eq!(body["search_depth"], "advanced");

    // Exa.
    let (_, end) = call_once(
        "web_search",
        json!({"query": "q"}),
        &[],
        &[
            ("EXA_API_KEY", "e-key"),
            ("EXA_BASE_URL", &format!("{api}/exa")),
        ],
    );
    assert!(
        text(&end).contains("Exa hit") && text(&end).contains("one … two"),
        "{end}"
    );
    let (_, headers, body) = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(headers["x-api-key"], "e-key");
    assert_eq!(body["numResults"], 5);

    // Brave.
    let (_, end) = call_once(
        "web_search",
        json!({"query": "q", "exclude_domains": ["spam.example"]}),
        &[],
        &[
            ("BRAVE_SEARCH_API_KEY", "b-key"),
            ("BRAVE_SEARCH_BASE_URL", &api),
        ],
    );
    assert!(text(&end).contains("Brave hit"), "{end}");
    let (_, headers, query) = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(headers["x-subscription-token"], "b-key");
    assert_eq!(query, json!("q=q+-site%3Aspam.example&count=5"));

    // A provider error is a result with its status and a hint, retried when transient.
    let (_, end) = call_once(
        "web_search",
        json!({"query": "rate me"}),
        &["--max-retries", "1", "--retry-base-delay", "10ms"],
        &[("TAVILY_API_KEY", "t-key"), ("TAVILY_BASE_URL", &api)],
    );
    assert_eq!(end["isError"], true);
    let details = &end["result"]["details"];
    assert_eq!(
        (details["status"].as_u64(), details["transient"].as_bool()),
        (Some(429), Some(true))
    );
    assert!(details["hint"].as_str().unwrap().contains("rate limiting"));
    let attempts = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, b)| b["query"] == "rate me")
        .count();
    assert_eq!(attempts, 2, "retried once");
}

#[test]
fn web_fetch_uses_the_provider_extractor_or_fetches_behind_the_rails() {
    let (api, _) = provider_mock();
    let site = site();
    // Tavily extracts.
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("{site}/page")}),
        &[],
        &[("TAVILY_API_KEY", "t-key"), ("TAVILY_BASE_URL", &api)],
    );
    assert!(text(&end).contains("By the provider."), "{end}");
    assert_eq!(end["result"]["details"]["via"], "tavily");

    // Brave has no extractor: a local fetch, which needs the loopback site allowed.
    let brave = [
        ("BRAVE_SEARCH_API_KEY", "b-key"),
        ("BRAVE_SEARCH_BASE_URL", api.as_str()),
    ];
    let allow = ["--web-allow-host", "127.0.0.1"];
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("{site}/hop/2")}),
        &allow,
        &brave,
    );
    let out = text(&end);
    assert_eq!(end["isError"], false, "{out}");
    assert!(
        out.starts_with(&format!("# Docs\n\nSource: {site}/page\n\n# Install")),
        "{out}"
    );
    assert!(out.contains("`make`") && !out.contains("evil"), "{out}");

    for (path, expected) in [
        ("/binary", "is application/octet-stream, not text"),
        ("/huge", "is larger than 1024 KiB; not read further"),
        ("/hop/5", "more than 3 redirects"),
        (
            "/to-file",
            "only http and https URLs can be fetched, not file:",
        ),
    ] {
        let (_, end) = call_once(
            "web_fetch",
            json!({"url": format!("{site}{path}")}),
            &allow,
            &brave,
        );
        assert_eq!(end["isError"], true, "{path}");
        assert!(text(&end).contains(expected), "{path}: {}", text(&end));
    }
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("{site}/json")}),
        &allow,
        &brave,
    );
    assert_eq!(
        text(&end),
        format!("Source: {site}/json\n\n{{\n  \"a\": 1\n}}")
    );
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": "file:///etc/passwd"}),
        &allow,
        &brave,
    );
    assert!(
        text(&end).contains("only http and https URLs can be fetched"),
        "{end}"
    );
}

#[test]
fn the_ssrf_guard_blocks_internal_addresses_at_every_hop() {
    let (api, _) = provider_mock();
    let site = site();
    let port = site.rsplit(':').next().unwrap().to_string();
    let brave = [
        ("BRAVE_SEARCH_API_KEY", "b-key"),
        ("BRAVE_SEARCH_BASE_URL", api.as_str()),
    ];
    // Loopback, directly and through numeric tricks.
    for url in [
        format!("{site}/page"),
        format!("http://2130706433:{port}/page"),
        format!("http://0x7f.1:{port}/page"),
        format!("http://user@127.0.0.1:{port}/page"),
    ] {
        let (run, end) = call_once("web_fetch", json!({"url": url}), &[], &brave);
        assert_eq!(end["isError"], true, "{url}");
        assert_eq!(end["result"]["details"]["blocked"], true, "{url}");
        assert_eq!(
            run.last()["stats"]["webFetchesBlocked"],
            1,
            "counted in the run's stats"
        );
        assert!(
            text(&end).contains(
                "blocked by the SSRF guard: 127.0.0.1 is a loopback address (127.0.0.0/8)"
            ),
            "{}",
            text(&end)
        );
    }
    // A public-looking name that resolves to loopback.
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("http://docs.public.test:{port}/page")}),
        &[],
        &[
            brave[0],
            brave[1],
            ("WORKER_WEB_RESOLVE", "docs.public.test=127.0.0.1"),
        ],
    );
    assert!(
        text(&end).contains("blocked by the SSRF guard: docs.public.test is 127.0.0.1"),
        "{}",
        text(&end)
    );
    // An allowed site redirecting to the metadata service: refused at the hop.
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("{site}/to-metadata")}),
        &["--web-allow-host", "127.0.0.1"],
        &brave,
    );
    assert!(
        text(&end).contains("169.254.169.254 is a link-local (cloud metadata) address"),
        "{}",
        text(&end)
    );
    // --web-allow-private opens it.
    let (_, end) = call_once(
        "web_fetch",
        json!({"url": format!("{site}/page")}),
        &["--web-allow-private"],
        &brave,
    );
    assert_eq!(end["isError"], false);
}

/// Long enough (over `secrets::MIN_LEN`) to count as a secret.
const BUDGET_TEST_KEY: &str = "tvly-budget-test-key-0123456789";

#[test]
fn the_call_budget_ends_in_a_structured_error_and_the_run_goes_on() {
    let (api, seen) = provider_mock();
    let dir = tempfile::tempdir().unwrap();
    let search = json!({"query": "echo the credentials"}).to_string();
    let mock = MockLlm::start(vec![
        call("c1", "web_search", &search),
        call("c2", "web_search", &search),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--web-search-max-calls", "1"],
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("TAVILY_API_KEY", BUDGET_TEST_KEY),
            ("TAVILY_BASE_URL", &api),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ends = run.all("tool_execution_end");
    assert_eq!(ends[0]["isError"], false);
    // The provider was sent the key and echoed it; the event shows it redacted.
    let sent = &seen.lock().unwrap()[0].1;
    assert_eq!(
        sent[header::AUTHORIZATION],
        format!("Bearer {BUDGET_TEST_KEY}").as_str()
    );
    assert!(
        text(ends[0]).contains("you sent Bearer [REDACTED]"),
        "{}",
        ends[0]
    );
    assert_eq!(ends[1]["isError"], true);
    assert_eq!(ends[1]["result"]["details"]["error"], "rate_limited");
    let stats = &run.last()["stats"];
    assert_eq!(
        (
            stats["webCalls"].as_u64(),
            stats["webFetchesBlocked"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert!(text(ends[1]).starts_with("Web tool budget exhausted"));
    assert!(!run.stdout.contains(BUDGET_TEST_KEY), "the key is a secret");
}
