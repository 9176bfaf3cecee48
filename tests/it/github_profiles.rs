//! GitHub tools through the real binary: registration-time gating by profile, the status line,
//! usage errors, and a secret scan of every output of a run made with recognizable secrets.

/// Tools every run has: the built-in ones and multi_grep.
const BUILTIN: usize = 8;

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const TOKEN: &str = "ghp_RECOGNIZABLEtoken0123456789";

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

async fn worker(args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = args.iter().map(std::string::ToString::to_string).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        run_worker(dir.path(), &args, "work on the repo", &env)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_registers_only_its_tools_and_says_so() {
    let github = MockServer::start().await;
    let mock = MockLlm::start(vec![
        call(
            "c1",
            "github_create_issue",
            "{\"owner\":\"o\",\"repo\":\"r\",\"title\":\"x\"}",
        ),
        answer("ok"),
    ]);
    let run = worker(
        &["--model", "dynamo/m", "--profile", "read"],
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", &github.uri()),
        ],
    )
    .await;
    run.assert_code(0);
    let status = run.extension("github");
    assert_eq!(
        status,
        &json!({"type": "extension_status", "extension": "github", "status": "configured", "profile": "read", "toolCount": 18, "auth": "token", "sessionId": status["sessionId"], "timestamp": status["timestamp"]})
    );
    assert_eq!(
        run.types()[1..3],
        ["sandbox_status", "extension_status"],
        "status lines follow the header, github's first"
    );
    let names = tool_names(&mock.requests()[0].body);
    assert_eq!(names.len(), BUILTIN + 18);
    assert!(names.contains(&"github_get_issue".to_string()));
    assert!(
        !names.contains(&"github_create_issue".to_string()),
        "write tools are not registered under read"
    );
    let end = run.first("tool_execution_end");
    assert_eq!(
        end["result"]["content"][0]["text"],
        "Tool github_create_issue not found"
    );
    assert_eq!(end["isError"], true);
    assert!(
        github.received_requests().await.unwrap().is_empty(),
        "nothing reached GitHub"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_profile_has_its_size_and_tools_still_filters() {
    let github = MockServer::start().await;
    for (profile, count) in [
        ("read", 18),
        ("issues-write", 25),
        ("review-write", 27),
        ("repo-write", 33),
    ] {
        let mock = MockLlm::start(vec![answer("ok")]);
        let run = worker(
            &["--model", "dynamo/m", "--profile", profile],
            &[
                ("DYNAMO_BASE_URL", &mock.url),
                ("GITHUB_TOKEN", TOKEN),
                ("GITHUB_API_URL", &github.uri()),
            ],
        )
        .await;
        run.assert_code(0);
        assert_eq!(run.extension("github")["toolCount"], count, "{profile}");
        assert_eq!(
            tool_names(&mock.requests()[0].body).len(),
            BUILTIN + count,
            "{profile}"
        );
    }
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = worker(
        &[
            "--model",
            "dynamo/m",
            "--profile",
            "repo-write",
            "--tools",
            "read,github_get_issue",
        ],
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", &github.uri()),
        ],
    )
    .await;
    run.assert_code(0);
    assert_eq!(
        tool_names(&mock.requests()[0].body),
        ["read", "github_get_issue"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_profiles_are_usage_errors_and_missing_credentials_skip_with_a_warning() {
    let run = worker(
        &["--model", "dynamo/m", "--profile", "admin"],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    run.assert_code(2);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "worker: unknown GitHub profile 'admin'. Expected one of: issues-write, read, repo-write, review-write\n"
    );

    let mock = MockLlm::start(vec![answer("ok")]);
    let run = worker(
        &["--model", "dynamo/m", "--profile", "read"],
        &[("DYNAMO_BASE_URL", &mock.url)],
    )
    .await;
    run.assert_code(0);
    let status = run.extension("github");
    assert_eq!(
        (
            status["status"].as_str(),
            status["reason"].as_str(),
            status["toolCount"].as_u64()
        ),
        (Some("skipped"), Some("no-credentials"), Some(0))
    );
    assert!(run.stderr.starts_with("worker: --profile read: GitHub tools skipped (no-credentials): no GitHub credentials: set GITHUB_TOKEN"), "{}", run.stderr);
    assert_eq!(tool_names(&mock.requests()[0].body).len(), BUILTIN);

    let mock = MockLlm::start(vec![answer("ok")]);
    let run = worker(
        &["--model", "dynamo/m"],
        &[("DYNAMO_BASE_URL", &mock.url), ("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    run.assert_code(0);
    let github = run.extension("github");
    assert_eq!(
        (github["status"].as_str(), github["reason"].as_str()),
        (Some("skipped"), Some("no-profile")),
        "no --profile: a skipped GitHub line, as agentic-pi prints"
    );
    assert_eq!(run.stderr, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profiles_dir_adds_profiles_and_broken_ones_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("triage.json"),
        r#"{"description": "labels only", "extends": "read", "tools": ["github_add_labels"]}"#,
    )
    .unwrap();
    let github = MockServer::start().await;
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = worker(
        &[
            "--model",
            "dynamo/m",
            "--profile",
            "triage",
            "--profiles-dir",
            dir.path().to_str().unwrap(),
        ],
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", &github.uri()),
        ],
    )
    .await;
    run.assert_code(0);
    assert_eq!(run.extension("github")["toolCount"], 19);
    std::fs::write(
        dir.path().join("loop.json"),
        r#"{"extends": "loop", "tools": []}"#,
    )
    .unwrap();
    let run = worker(
        &[
            "--model",
            "dynamo/m",
            "--profile",
            "triage",
            "--profiles-dir",
            dir.path().to_str().unwrap(),
        ],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("loop.json: extends chain has a cycle: loop -> loop"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_any_output() {
    let key = "dyn-key-RECOGNIZABLE-42";
    let github = MockServer::start().await;
    // A hostile server that echoes the credentials it receives.
    Mock::given(method("GET"))
        .and(path("/repos/o/r/issues/1"))
        .respond_with(|request: &Request| {
            let auth = request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            ResponseTemplate::new(200)
                .set_body_json(json!({"number": 1, "title": format!("seen: {auth}")}))
        })
        .mount(&github)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"message": format!("Bad credentials: {TOKEN}")})),
        )
        .mount(&github)
        .await;
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(
                0,
                "c1",
                "github_get_issue",
                "{\"owner\":\"o\",\"repo\":\"r\",\"issue_number\":1}",
            ),
            tool_call(
                1,
                "c2",
                "github_get_repository",
                "{\"owner\":\"o\",\"repo\":\"r\"}",
            ),
            finish("tool_calls"),
            done(),
        ]),
        call(
            "c3",
            "bash",
            "{\"command\":\"echo $GITHUB_TOKEN; env | grep DYNAMO_API_KEY; exit 3\"}",
        ),
        answer("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("run.fixture.jsonl");
    let trace = dir.path().join("run.trace.jsonl");
    let run = worker(
        &[
            "--model",
            "dynamo/m",
            "--profile",
            "read",
            "--tools",
            "bash,github_get_issue,github_get_repository",
            "--record",
            fixture.to_str().unwrap(),
            "--trace-file",
            trace.to_str().unwrap(),
            "--retry-base-delay",
            "1ms",
        ],
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("DYNAMO_API_KEY", key),
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_API_URL", &github.uri()),
        ],
    )
    .await;
    run.assert_code(0);
    // The paths that could leak were taken. The two GitHub calls run concurrently, so their
    // ends come in either order: take the results in call order.
    let ends = run.all("tool_execution_end");
    let results: Vec<&str> = ["c1", "c2", "c3"]
        .iter()
        .map(|id| {
            let end = ends
                .iter()
                .find(|e| e["toolCallId"] == *id)
                .unwrap_or_else(|| panic!("no tool_execution_end for {id}"));
            end["result"]["content"][0]["text"].as_str().unwrap()
        })
        .collect();
    assert!(
        results[0].contains("seen: Bearer [REDACTED]"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("Bad credentials: [REDACTED]"),
        "{}",
        results[1]
    );
    assert!(
        results[2].starts_with("[REDACTED]\nDYNAMO_API_KEY=[REDACTED]"),
        "{}",
        results[2]
    );
    let requests_to_model = serde_json::to_string(
        &mock
            .requests()
            .iter()
            .map(|r| r.body.clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let outputs = [
        ("stdout", run.stdout.clone()),
        ("stderr", run.stderr.clone()),
        (
            "--record fixture",
            std::fs::read_to_string(&fixture).unwrap(),
        ),
        ("--trace-file", std::fs::read_to_string(&trace).unwrap()),
        ("what the model was sent", requests_to_model),
    ];
    for (name, text) in outputs {
        for secret in [TOKEN, key] {
            assert!(!text.contains(secret), "{secret} leaked into {name}");
        }
    }
    // The mock LLM did receive the real authorization header: only outputs are redacted.
    assert_eq!(
        mock.requests()[0]
            .headers
            .get("authorization")
            .map(String::as_str),
        Some(&*format!("Bearer {key}"))
    );
}
