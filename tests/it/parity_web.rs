//! agentic-pi 0.3.0's web-search tests (selection.test.ts, extension.test.ts,
//! providers.test.ts, extract.test.ts) through the binary, against provider APIs and a web
//! site served on 127.0.0.1: each test is named after the case it mirrors.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{Uri, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

/// What a provider API was sent: Tavily's and Exa's JSON bodies, Brave's query string.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A search API (Tavily and Exa at `/search`, Brave at `/res/v1/web/search`) that always
/// answers `answer`, whatever it was asked.
fn provider(answer: Value) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let (posted, queried) = (seen.clone(), seen.clone());
    let (post_answer, get_answer) = (answer.clone(), answer);
    let app = Router::new()
        .route(
            "/search",
            post(move |body: Bytes| async move {
                posted
                    .lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                axum::Json(post_answer)
            }),
        )
        .route(
            "/res/v1/web/search",
            get(move |uri: Uri| async move {
                queried
                    .lock()
                    .unwrap()
                    .push(json!(uri.query().unwrap_or_default()));
                axum::Json(get_answer)
            }),
        );
    (format!("http://{}", serve(app)), seen)
}

/// A site serving `html` at `/page`.
fn site(html: &'static str) -> String {
    let app = Router::new().route(
        "/page",
        get(move || async move { ([(header::CONTENT_TYPE, "text/html")], html).into_response() }),
    );
    format!("http://{}/page", serve(app))
}

/// A run with `env`, whose model makes each of `calls` (tool, arguments) and then answers.
fn run(flags: &[&str], env: &[(&str, &str)], calls: &[(&str, Value)]) -> (Run, MockLlm) {
    let dir = tempfile::tempdir().unwrap();
    let mut script: Vec<Reply> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| call(&format!("c{i}"), tool, &args.to_string()))
        .collect();
    script.push(answer("done"));
    let mock = MockLlm::start(script);
    let mut all_env = vec![("DYNAMO_BASE_URL", mock.url.as_str())];
    all_env.extend_from_slice(env);
    let mut args = vec!["--model", "dynamo/m"];
    args.extend_from_slice(flags);
    let run = run_worker(dir.path(), &args, "q", &all_env);
    (run, mock)
}

/// The web-search status line and stderr of a run that makes no call.
fn status(flags: &[&str], env: &[(&str, &str)]) -> (Value, String) {
    let (run, _) = run(flags, env, &[]);
    run.assert_code(0);
    let mut line = run.extension("web-search").clone();
    for stamp in ["sessionId", "timestamp"] {
        line.as_object_mut().unwrap().remove(stamp);
    }
    (line, run.stderr)
}

fn usage_error(flags: &[&str], env: &[(&str, &str)]) -> String {
    let (run, _) = run(flags, env, &[]);
    assert_eq!(run.code, 2, "{flags:?} {env:?}: {}", run.stderr);
    assert_eq!(run.stdout, "", "nothing on stdout");
    run.stderr
}

/// The text of each tool result, in call order.
fn results(run: &Run) -> Vec<(bool, String, Value)> {
    run.all("tool_execution_end")
        .iter()
        .map(|end| {
            (
                end["isError"].as_bool().unwrap(),
                end["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                end["result"]["details"].clone(),
            )
        })
        .collect()
}

const ALL_KEYS: [(&str, &str); 3] = [
    ("TAVILY_API_KEY", "tvly-x"),
    ("EXA_API_KEY", "exa-x"),
    ("BRAVE_SEARCH_API_KEY", "brv-x"),
];

#[test]
fn selection_test_disabled_by_flag_short_circuits_even_when_keys_are_set() {
    let (line, stderr) = status(&["--no-web-search"], &ALL_KEYS);
    assert_eq!(
        line,
        json!({"type": "extension_status", "extension": "web-search", "status": "skipped", "reason": "disabled-by-flag", "toolCount": 0})
    );
    assert_eq!(stderr, "");
}

#[test]
fn selection_test_no_keys_present_silent_no_credentials_skip() {
    let (line, stderr) = status(&[], &[]);
    // No provider, no message, no warning.
    assert_eq!(
        line,
        json!({"type": "extension_status", "extension": "web-search", "status": "skipped", "reason": "no-credentials", "toolCount": 0})
    );
    assert_eq!(stderr, "");
}

#[test]
fn selection_test_single_tavily_key_auto_selects_tavily() {
    let (line, stderr) = status(&[], &[("TAVILY_API_KEY", "tvly-abc")]);
    assert_eq!(
        line,
        json!({"type": "extension_status", "extension": "web-search", "status": "configured", "provider": "tavily", "toolCount": 2, "maxCalls": 30})
    );
    assert_eq!(stderr, "");
}

#[test]
fn selection_test_priority_is_tavily_exa_brave_when_multiple_keys_are_set() {
    let message = "multiple provider keys present (tavily, exa, brave); using tavily — set WEB_SEARCH_PROVIDER to override";
    let (line, stderr) = status(&[], &ALL_KEYS);
    assert_eq!(
        (&line["provider"], &line["message"]),
        (&json!("tavily"), &json!(message))
    );
    assert_eq!(stderr, format!("worker: web-search: {message}\n"));

    let (line, _) = status(&[], &ALL_KEYS[1..]);
    assert_eq!(
        (&line["provider"], &line["message"]),
        (
            &json!("exa"),
            &json!(
                "multiple provider keys present (exa, brave); using exa — set WEB_SEARCH_PROVIDER to override"
            )
        )
    );
}

#[test]
fn selection_test_explicit_provider_via_config_wins_over_env_priority() {
    let (api, seen) = provider(json!({"web": {"results": []}}));
    let env = [
        ("TAVILY_API_KEY", "tvly-x"),
        ("BRAVE_SEARCH_API_KEY", "brv-x"),
        ("BRAVE_SEARCH_BASE_URL", &api),
        // The flag wins over the variable too.
        ("WEB_SEARCH_PROVIDER", "tavily"),
    ];
    let (run, _) = run(
        &["--web-search-provider", "brave"],
        &env,
        &[("web_search", json!({"query": "q"}))],
    );
    run.assert_code(0);
    let line = run.extension("web-search");
    assert_eq!(
        (&line["status"], &line["provider"], line.get("message")),
        (&json!("configured"), &json!("brave"), None)
    );
    // Brave's API was the one asked.
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn selection_test_explicit_provider_via_web_search_provider_env_wins_over_auto() {
    let (line, stderr) = status(
        &[],
        &[
            ("WEB_SEARCH_PROVIDER", "exa"),
            ("TAVILY_API_KEY", "tvly-x"),
            ("EXA_API_KEY", "exa-x"),
        ],
    );
    assert_eq!(line["provider"], "exa");
    assert_eq!(line.get("message"), None);
    assert_eq!(stderr, "");
}

#[test]
fn selection_test_explicit_provider_with_missing_key_surfaces_a_warning_skip() {
    let (line, stderr) = status(
        &["--web-search-provider", "brave"],
        &[("TAVILY_API_KEY", "tvly-x")],
    );
    assert_eq!(
        line,
        json!({"type": "extension_status", "extension": "web-search", "status": "skipped", "reason": "no-credentials",
               "message": "--web-search-provider=brave set but BRAVE_SEARCH_API_KEY is empty", "provider": "brave", "toolCount": 0})
    );
    assert_eq!(
        stderr,
        "worker: web-search extension disabled (no-credentials): --web-search-provider=brave set but BRAVE_SEARCH_API_KEY is empty\n"
    );
}

#[test]
fn extension_test_explicit_provider_with_missing_key_misconfig_skip() {
    // Named by the variable rather than the flag: the same skip, the same warning.
    let (line, stderr) = status(
        &[],
        &[
            ("WEB_SEARCH_PROVIDER", "brave"),
            ("TAVILY_API_KEY", "tvly-x"),
        ],
    );
    assert_eq!(
        (&line["reason"], &line["provider"]),
        (&json!("no-credentials"), &json!("brave"))
    );
    assert!(
        stderr.starts_with("worker: web-search extension disabled (no-credentials): "),
        "{stderr}"
    );
}

#[test]
fn selection_test_unknown_explicit_provider_name_throws_config_error() {
    let stderr = usage_error(&["--web-search-provider", "google"], &[]);
    assert_eq!(
        stderr,
        "worker: Unknown web-search provider 'google'. Expected one of: tavily, brave, exa\n"
    );
    let stderr = usage_error(&[], &[("WEB_SEARCH_PROVIDER", "google")]);
    assert!(
        stderr.contains("Unknown web-search provider 'google'"),
        "{stderr}"
    );
}

#[test]
fn is_provider_name_rejects_anything_else() {
    for bad in ["TAVILY", "google", "perplexity"] {
        let stderr = usage_error(&["--web-search-provider", bad], &ALL_KEYS);
        assert!(
            stderr.contains(&format!("Unknown web-search provider '{bad}'")),
            "{stderr}"
        );
    }
    // An empty flag value is refused as such (agentic-pi's parser)...
    for empty in ["", "  "] {
        let stderr = usage_error(&["--web-search-provider", empty], &ALL_KEYS);
        assert_eq!(stderr, "worker: --web-search-provider requires a value\n");
    }
    // ...while an empty or blank variable leaves the choice to the keys.
    for empty in ["", "  "] {
        let (line, _) = status(
            &[],
            &[("WEB_SEARCH_PROVIDER", empty), ("EXA_API_KEY", "exa-x")],
        );
        assert_eq!(line["provider"], "exa", "{empty:?}");
    }
    // --no-web-search wins over a bad name: nothing is chosen, nothing is checked.
    let (line, _) = status(&["--no-web-search", "--web-search-provider", "google"], &[]);
    assert_eq!(line["reason"], "disabled-by-flag");
}

#[test]
fn selection_test_blank_whitespace_keys_are_not_considered_present() {
    let (line, stderr) = status(&[], &[("TAVILY_API_KEY", "   ")]);
    assert_eq!(line["reason"], "no-credentials");
    assert_eq!(stderr, "");
    // And a blank key does not win the auto-detection from a real one.
    let (line, _) = status(
        &[],
        &[("TAVILY_API_KEY", " "), ("BRAVE_SEARCH_API_KEY", "brv-x")],
    );
    assert_eq!(
        (&line["provider"], line.get("message")),
        (&json!("brave"), None)
    );
}

#[test]
fn providers_test_tavily_search_maps_results_and_answer() {
    let (api, seen) = provider(json!({
        "query": "q",
        "answer": "the answer",
        "results": [{"title": "One", "url": "https://one.example", "content": "snippet1",
                     "raw_content": "full body 1", "score": 0.9, "published_date": "2025-01-01"}]
    }));
    let (run, _) = run(
        &[],
        &[("TAVILY_API_KEY", "tvly-x"), ("TAVILY_BASE_URL", &api)],
        &[(
            "web_search",
            json!({"query": "q", "max_results": 3, "include_content": true}),
        )],
    );
    run.assert_code(0);
    let (is_error, text, details) = results(&run).remove(0);
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Answer: the answer\n\n1. One\n   https://one.example\n   Published: 2025-01-01\n   snippet1\n   Content:\n   full body 1"
    );
    assert_eq!(
        details,
        json!({"provider": "tavily", "answer": "the answer", "results": [{"title": "One", "url": "https://one.example",
               "snippet": "snippet1", "score": 0.9, "publishedDate": "2025-01-01", "hasContent": true}]})
    );
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (
            &sent["include_answer"],
            &sent["include_raw_content"],
            &sent["max_results"]
        ),
        (&json!(true), &json!(true), &json!(3))
    );
}

#[test]
fn providers_test_brave_include_domains_post_filters_by_host() {
    let (api, _) = provider(json!({"web": {"results": [
        {"title": "A", "url": "https://docs.foo.com/x", "description": "a"},
        {"title": "B", "url": "https://other.com/y", "description": "b"},
        {"title": "C", "url": "https://blog.foo.com/z", "description": "c"},
        {"title": "D", "url": "https://notfoo.com/z", "description": "d"}
    ]}}));
    let (run, _) = run(
        &[],
        &[
            ("BRAVE_SEARCH_API_KEY", "brv"),
            ("BRAVE_SEARCH_BASE_URL", &api),
        ],
        &[(
            "web_search",
            json!({"query": "q", "max_results": 5, "include_domains": ["foo.com"]}),
        )],
    );
    run.assert_code(0);
    let (_, _, details) = results(&run).remove(0);
    let titles: Vec<&Value> = details["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["title"])
        .collect();
    assert_eq!(titles, [&json!("A"), &json!("C")]);
}

#[test]
fn providers_test_brave_exclude_domains_post_filters_by_host() {
    let (api, _) = provider(json!({"web": {"results": [
        {"title": "A", "url": "https://a.example/"},
        {"title": "A2", "url": "https://sub.a.example/"},
        {"title": "B", "url": "https://b.example/"}
    ]}}));
    let (run, _) = run(
        &[],
        &[
            ("BRAVE_SEARCH_API_KEY", "brv"),
            ("BRAVE_SEARCH_BASE_URL", &api),
        ],
        &[(
            "web_search",
            json!({"query": "q", "max_results": 5, "exclude_domains": ["a.example"]}),
        )],
    );
    run.assert_code(0);
    let (_, text, details) = results(&run).remove(0);
    assert_eq!(details["results"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(details["results"][0]["title"], "B");
    assert!(!text.contains("a.example"), "{text}");
}

/// Not one of agentic-pi's cases, but its promise: the filters hold whatever the provider
/// returned, for Tavily as for Brave.
#[test]
fn providers_test_domain_filters_hold_whatever_tavily_returned() {
    let (api, seen) = provider(json!({"results": [
        {"title": "In", "url": "https://docs.rs/tokio", "content": "in"},
        {"title": "Out", "url": "https://evil.example/docs.rs", "content": "out"},
        {"title": "Excluded", "url": "https://spam.docs.rs/", "content": "spam"}
    ]}));
    let (run, _) = run(
        &[],
        &[("TAVILY_API_KEY", "tvly-x"), ("TAVILY_BASE_URL", &api)],
        &[(
            "web_search",
            json!({"query": "q", "include_domains": ["docs.rs"], "exclude_domains": ["spam.docs.rs"]}),
        )],
    );
    run.assert_code(0);
    let (_, text, details) = results(&run).remove(0);
    assert_eq!(details["results"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(details["results"][0]["title"], "In");
    // Sent to the provider as well.
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (&sent["include_domains"], &sent["exclude_domains"]),
        (&json!(["docs.rs"]), &json!(["spam.docs.rs"]))
    );
}

#[test]
fn providers_test_exa_search_maps_num_results_to_max_results() {
    let (api, seen) = provider(json!({"results": [
        {"title": "T", "url": "https://t.example", "text": "page text", "highlights": ["hl"], "score": 0.5, "publishedDate": "2024-12-31"}
    ]}));
    let (run, _) = run(
        &[],
        &[("EXA_API_KEY", "exa"), ("EXA_BASE_URL", &api)],
        &[(
            "web_search",
            json!({"query": "q", "max_results": 4, "include_content": true}),
        )],
    );
    run.assert_code(0);
    let (_, text, details) = results(&run).remove(0);
    assert_eq!(
        text,
        "1. T\n   https://t.example\n   Published: 2024-12-31\n   hl\n   Content:\n   page text"
    );
    assert_eq!(details["results"][0]["score"], 0.5);
    assert_eq!(seen.lock().unwrap()[0]["numResults"], 4);
}

/// A web_fetch of `html` (served locally, fetched through Brave's local path) with `flags`
/// and the call's own arguments.
fn fetch(html: &'static str, flags: &[&str], format: Option<&str>) -> (bool, String, Value) {
    let (api, _) = provider(json!({}));
    let page = site(html);
    let mut args = json!({"url": page});
    if let Some(format) = format {
        args["format"] = json!(format);
    }
    let mut all_flags = vec!["--web-allow-host", "127.0.0.1"];
    all_flags.extend_from_slice(flags);
    let (run, _) = run(
        &all_flags,
        &[
            ("BRAVE_SEARCH_API_KEY", "brv"),
            ("BRAVE_SEARCH_BASE_URL", &api),
        ],
        &[("web_fetch", args)],
    );
    run.assert_code(0);
    results(&run).remove(0)
}

/// The page body after the `Source:` line.
fn body(text: &str) -> &str {
    text.split_once("\n\n").map_or(text, |(_, body)| body)
}

const NOISY: &str = "<!-- secret -->\n<html><head><title>T</title>\n<style>body{color:red}</style>\n\
    <script>alert(1)</script>\n</head><body>\n<p>Hello <b>world</b>.</p>\n<noscript>fallback</noscript>\n\
    <iframe src=\"bad\">payload</iframe>\n<p>Bye.</p>\n</body></html>";

#[test]
fn extract_test_strips_script_style_noscript_iframe_and_comments() {
    let (is_error, text, details) = fetch(NOISY, &["--web-fetch-format", "text"], None);
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("Title: T\nSource: http://127.0.0.1:"),
        "{text}"
    );
    assert_eq!(body(&text), "Hello world.\n\nBye.");
    assert_eq!(details["format"], "text");
    for gone in ["alert(1)", "color:red", "fallback", "payload", "secret"] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
}

#[test]
fn extract_test_decodes_named_decimal_and_hex_entities() {
    let (_, text, _) = fetch(
        "<p>A &amp; B &#9786; &#x2603; &nbsp; &mdash;</p>",
        &[],
        Some("text"),
    );
    assert_eq!(body(&text), "A & B ☺ ☃ —");
}

#[test]
fn extract_test_collapses_whitespace_and_inserts_newlines_at_block_boundaries() {
    let (_, text, _) = fetch(
        "<div><p>One</p><p>Two</p></div><p>Three</p>",
        &[],
        Some("text"),
    );
    let lines: Vec<&str> = body(&text).lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines, ["One", "Two", "Three"]);
}

#[test]
fn extract_test_inline_tags_are_dropped_without_inserting_whitespace() {
    let (_, text, _) = fetch("<p>foo<b>bar</b>baz</p>", &[], Some("text"));
    assert_eq!(body(&text), "foobarbaz");
}

/// worker's default stays markdown; the call's argument wins over the flag; a format that
/// is neither is the call's error, and spends nothing.
#[test]
fn web_fetch_format_markdown_by_default_text_on_request() {
    const PAGE: &str =
        "<title>Docs</title><h1>Install</h1><p>Run <a href=\"https://x.example/\">it</a>.</p>";
    let (_, text, details) = fetch(PAGE, &[], None);
    assert_eq!(details["format"], "markdown");
    assert!(text.starts_with("# Docs\n\nSource: "), "{text}");
    assert!(
        body(&text).contains("# Install") && body(&text).contains("[it](https://x.example/)"),
        "{text}"
    );
    let (_, text, details) = fetch(PAGE, &["--web-fetch-format", "text"], Some("markdown"));
    assert_eq!(details["format"], "markdown", "{text}");
    let (_, text, _) = fetch(PAGE, &[], Some("text"));
    assert_eq!(body(&text), "Install\n\nRun it.");

    let (is_error, text, _) = fetch(PAGE, &[], Some("html"));
    assert!(is_error);
    assert_eq!(text, "format: expected markdown or text, got \"html\"");

    let stderr = usage_error(&["--web-fetch-format", "html"], &[]);
    assert!(stderr.contains("--web-fetch-format"), "{stderr}");
}
