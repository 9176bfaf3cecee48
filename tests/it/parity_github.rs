//! agentic-pi 0.3.0's GitHub tests (`test/extensions/github/client.test.ts`,
//! `credentials.test.ts`, `profiles.test.ts`), each replayed through the binary: a scripted
//! model calls the tool, a fake GitHub on 127.0.0.1 (REST and GraphQL) answers, and the test
//! reads what the tool returned and what reached the server.

use std::path::Path;
use std::sync::Mutex;

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const TOKEN: &str = "ghp_PARITYtoken0123456789";

/// One worker run under `profile` whose model calls `tool` with `args` once.
async fn run_tool(profile: &str, tool: &str, args: Value, github: &MockServer) -> Run {
    let dir = tempfile::tempdir().unwrap();
    run_tools_in(dir.path(), profile, &[(tool, args)], &github.uri(), &[]).await
}

/// One worker run in `dir` whose model makes `calls`, one a turn.
async fn run_tools_in(
    dir: &Path,
    profile: &str,
    calls: &[(&str, Value)],
    api: &str,
    env: &[(&str, &str)],
) -> Run {
    let mut replies: Vec<Reply> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| call(&format!("c{i}"), tool, &args.to_string()))
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let dir = dir.to_path_buf();
    let profile = profile.to_string();
    let mut env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend([
        ("DYNAMO_BASE_URL".to_string(), mock.url.clone()),
        ("GITHUB_API_URL".to_string(), api.to_string()),
    ]);
    if !env.iter().any(|(k, _)| k == "GITHUB_TOKEN") {
        env.push(("GITHUB_TOKEN".to_string(), TOKEN.to_string()));
    }
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        run_worker(
            &dir,
            &["--model", "dynamo/m", "--profile", &profile],
            "work on the repo",
            &env,
        )
    })
    .await
    .unwrap()
}

/// The tool's result, parsed, and whether it was an error.
fn result(run: &Run) -> (Value, bool) {
    run.assert_code(0);
    let end = run.first("tool_execution_end");
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    (
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())),
        end["isError"] == true,
    )
}

/// `METHOD /path` of every request GitHub received, and that each carried the token.
async fn log(github: &MockServer) -> Vec<String> {
    let requests = github.received_requests().await.unwrap();
    for request in &requests {
        assert_eq!(
            request.headers["authorization"],
            format!("Bearer {TOKEN}").as_str()
        );
    }
    requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

/// A repository's labels, as GitHub keeps them: listing returns them; creating one adds it,
/// or answers 422 `already_exists` when the name is taken.
struct Labels(Mutex<Vec<String>>);

impl Respond for Labels {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut labels = self.0.lock().unwrap();
        if request.method.as_str() == "GET" {
            let listed: Vec<Value> = labels
                .iter()
                .map(|name| json!({"name": name, "color": "ededed"}))
                .collect();
            return ResponseTemplate::new(200).set_body_json(listed);
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let name = body["name"].as_str().unwrap().to_string();
        if labels.contains(&name) {
            return ResponseTemplate::new(422).set_body_json(json!({
                "message": "Validation Failed",
                "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}],
            }));
        }
        labels.push(name);
        ResponseTemplate::new(201).set_body_json(body)
    }
}

async fn label_server(initial: &[&str]) -> MockServer {
    let github = MockServer::start().await;
    let labels = initial
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    Mock::given(path("/repos/octo/widget/labels"))
        .respond_with(Labels(Mutex::new(labels)))
        .mount(&github)
        .await;
    github
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_test_ensure_labels_lists_once_creates_only_missing_partitions_created_vs_existed() {
    let github = label_server(&["bug", "question"]).await;
    let run = run_tool(
        "issues-write",
        "github_ensure_labels",
        json!({"owner": "octo", "repo": "widget", "labels": [
            {"name": "bug"},
            {"name": "needs-triage", "color": "ff0000"},
            {"name": "question"},
            {"name": "ready-for-agent"},
        ]}),
        &github,
    )
    .await;
    assert_eq!(
        result(&run),
        (
            json!({"created": ["needs-triage", "ready-for-agent"], "existed": ["bug", "question"]}),
            false
        )
    );
    assert_eq!(
        log(&github).await,
        [
            "GET /repos/octo/widget/labels",
            "POST /repos/octo/widget/labels",
            "POST /repos/octo/widget/labels",
        ],
        "one list, then creates for the two missing labels only"
    );
    let bodies: Vec<Value> = github
        .received_requests()
        .await
        .unwrap()
        .iter()
        .skip(1)
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            json!({"name": "needs-triage", "color": "ff0000"}),
            json!({"name": "ready-for-agent", "color": "ededed"}),
        ],
        "the given color, else GitHub's default grey"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_test_ensure_labels_is_case_insensitive_on_existing_names() {
    let github = label_server(&["Bug"]).await;
    let run = run_tool(
        "issues-write",
        "github_ensure_labels",
        json!({"owner": "octo", "repo": "widget", "labels": [{"name": "bug"}]}),
        &github,
    )
    .await;
    assert_eq!(
        result(&run),
        (json!({"created": [], "existed": ["bug"]}), false)
    );
    assert_eq!(log(&github).await, ["GET /repos/octo/widget/labels"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_test_create_label_treats_a_422_already_exists_as_success() {
    let github = label_server(&["bug"]).await;
    let run = run_tool(
        "issues-write",
        "github_create_label",
        json!({"owner": "octo", "repo": "widget", "name": "bug", "color": "ededed"}),
        &github,
    )
    .await;
    assert_eq!(result(&run), (json!({"ok": true, "existed": true}), false));
    assert_eq!(log(&github).await, ["POST /repos/octo/widget/labels"]);

    // Only already_exists is success: another validation failure stays an error.
    let github = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/widget/labels"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [{"resource": "Label", "code": "invalid", "field": "color"}],
        })))
        .mount(&github)
        .await;
    let run = run_tool(
        "issues-write",
        "github_create_label",
        json!({"owner": "octo", "repo": "widget", "name": "bug", "color": "nope"}),
        &github,
    )
    .await;
    let (error, is_error) = result(&run);
    assert!(is_error);
    assert_eq!(
        (&error["error"], &error["status"]),
        (&json!("Validation Failed (color: invalid)"), &json!(422))
    );
}

/// The two calls auto-merge makes: the pull request (for its node id), then the mutation.
async fn auto_merge_server(graphql: Value) -> MockServer {
    let github = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/widget/pulls/5"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"number": 5, "node_id": "PR_node_123"})),
        )
        .mount(&github)
        .await;
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .respond_with(ResponseTemplate::new(200).set_body_json(graphql))
        .mount(&github)
        .await;
    github
}

async fn graphql_request(github: &MockServer) -> Value {
    let requests = github.received_requests().await.unwrap();
    serde_json::from_slice(&requests.last().unwrap().body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_test_enable_auto_merge_resolves_the_node_id_then_enables_auto_merge() {
    let github = auto_merge_server(json!({"data": {"enablePullRequestAutoMerge": {
        "pullRequest": {"number": 5, "autoMergeRequest": {"enabledAt": "2026-07-17T00:00:00Z"}}
    }}}))
    .await;
    let run = run_tool(
        "repo-write",
        "github_enable_auto_merge",
        json!({"owner": "octo", "repo": "widget", "pull_number": 5}),
        &github,
    )
    .await;
    assert_eq!(
        result(&run),
        (
            json!({"ok": true, "pull_number": 5, "merge_method": "squash",
                   "auto_merge": {"enabledAt": "2026-07-17T00:00:00Z"}}),
            false
        )
    );
    assert_eq!(
        log(&github).await,
        ["GET /repos/octo/widget/pulls/5", "POST /graphql"]
    );
    let request = graphql_request(&github).await;
    assert_eq!(
        request["variables"],
        json!({"id": "PR_node_123", "mergeMethod": "SQUASH"})
    );
    assert!(
        request["query"].as_str().unwrap().contains(
            "enablePullRequestAutoMerge(input: { pullRequestId: $id, mergeMethod: $mergeMethod })"
        ),
        "{request}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_test_enable_auto_merge_returns_ok_false_reason_when_the_repo_disallows_it() {
    let github = auto_merge_server(json!({"data": null, "errors": [
        {"message": "Auto merge is not allowed for this repository"}
    ]}))
    .await;
    let run = run_tool(
        "repo-write",
        "github_enable_auto_merge",
        json!({"owner": "octo", "repo": "widget", "pull_number": 5, "merge_method": "merge"}),
        &github,
    )
    .await;
    assert_eq!(
        result(&run),
        (
            json!({"ok": false, "pull_number": 5,
                   "reason": "Auto merge is not allowed for this repository"}),
            false
        ),
        "an answer for the model, not a failed tool"
    );
    assert_eq!(
        graphql_request(&github).await["variables"]["mergeMethod"],
        "MERGE"
    );
}

/// The tools a run under `profile` offers the model.
async fn offered(profile: &str) -> Vec<String> {
    let github = MockServer::start().await;
    let mock = MockLlm::start(vec![answer("ok")]);
    let dir = tempfile::tempdir().unwrap();
    let (url, api, profile) = (mock.url.clone(), github.uri(), profile.to_string());
    let run = tokio::task::spawn_blocking(move || {
        run_worker(
            dir.path(),
            &["--model", "dynamo/m", "--profile", &profile],
            "hi",
            &[
                ("DYNAMO_BASE_URL", &url),
                ("GITHUB_TOKEN", TOKEN),
                ("GITHUB_API_URL", &api),
            ],
        )
    })
    .await
    .unwrap();
    run.assert_code(0);
    mock.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|name| name.starts_with("github_"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_test_expected_tool_counts_supersets_and_write_only_tools_in_the_right_tier() {
    let read = offered("read").await;
    let issues = offered("issues-write").await;
    let review = offered("review-write").await;
    let repo = offered("repo-write").await;
    assert_eq!(
        [read.len(), issues.len(), review.len(), repo.len()],
        [18, 25, 27, 33]
    );
    for (lower, upper) in [(&read, &issues), (&issues, &review), (&review, &repo)] {
        assert!(lower.iter().all(|t| upper.contains(t)), "{upper:?}");
    }
    let tiers: [(&[&str], &Vec<String>, &Vec<String>); 3] = [
        (
            &[
                "github_clone_repo",
                "github_create_or_update_file",
                "github_push_files",
                "github_create_branch",
                "github_merge_pull_request",
                "github_enable_auto_merge",
            ],
            &repo,
            &review,
        ),
        (
            &[
                "github_create_pull_request",
                "github_create_pull_request_review",
            ],
            &review,
            &issues,
        ),
        (
            &[
                "github_create_issue",
                "github_update_issue",
                "github_add_issue_comment",
                "github_add_labels",
                "github_remove_label",
                "github_create_label",
                "github_ensure_labels",
            ],
            &issues,
            &read,
        ),
    ];
    for (tools, tier, below) in tiers {
        for tool in tools {
            assert!(tier.iter().any(|t| t == tool), "{tool} missing");
            assert!(!below.iter().any(|t| t == tool), "{tool} leaked below");
        }
    }
}

fn git(args: &[&str], cwd: &Path) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap()
}

/// What git's credential helper, as the clone is configured, answers for `url`.
fn credential_fill(clone: &Path, url: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .args(["credential", "fill"])
        .current_dir(clone)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "url={url}\n").unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_test_a_token_with_a_weird_charset_works_for_git_and_only_for_its_host() {
    // agentic-pi's "ghs_weird.tok/en+v=", which a URL-embedding guard would refuse, plus
    // bytes that would end the credential line or the URL's userinfo if written raw.
    let token = "ghs_weird.tok/en+v=@evil.example:x";
    let server = tempfile::tempdir().unwrap();
    let seed = server.path().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "init"],
    ] {
        assert!(git(args, &seed).status.success());
    }
    let bare = server.path().join("octo/widget.git");
    let out = git(
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
        server.path(),
    );
    assert!(out.status.success());
    let work = tempfile::tempdir().unwrap();
    let creds = work.path().join("git/credentials");
    let server_url = format!("file://{}", server.path().display());
    let run = run_tools_in(
        work.path(),
        "repo-write",
        &[
            (
                "github_clone_repo",
                json!({"owner": "octo", "repo": "widget"}),
            ),
            ("bash", json!({"command": "cat git/credentials"})),
        ],
        "http://127.0.0.1:9",
        &[
            ("GITHUB_TOKEN", token),
            ("GITHUB_SERVER_URL", &server_url),
            ("WORKER_GIT_CREDENTIALS", creds.to_str().unwrap()),
        ],
    )
    .await;
    let (cloned, is_error) = result(&run);
    assert!(!is_error, "{cloned}");
    assert_eq!(cloned["cloned"], true);
    let stored = std::fs::read_to_string(&creds).unwrap();
    assert_eq!(
        stored,
        "https://x-access-token:ghs_weird.tok%2Fen%2Bv%3D%40evil.example%3Ax@localhost\n"
    );
    // git itself decodes the stored form back to the token, for the clone's host...
    let clone = work.path().join("widget");
    let filled = credential_fill(&clone, "https://localhost/octo/widget.git");
    assert!(filled.status.success());
    let filled = String::from_utf8(filled.stdout).unwrap();
    assert!(filled.contains("username=x-access-token\n"), "{filled}");
    assert!(filled.contains(&format!("password={token}\n")), "{filled}");
    // ...and for no other host.
    let other = credential_fill(&clone, "https://registry.npmjs.org/x");
    assert!(!other.status.success());
    assert!(!String::from_utf8_lossy(&other.stdout).contains("password="));
    // Neither form of the token reaches the output, even when a command prints the store.
    let printed = &run.all("tool_execution_end")[1]["result"]["content"][0]["text"];
    assert_eq!(
        printed, "https://x-access-token:[REDACTED]@localhost",
        "{}",
        run.stdout
    );
    let encoded = stored
        .trim_end()
        .trim_start_matches("https://x-access-token:")
        .trim_end_matches("@localhost");
    for form in [token, encoded] {
        assert!(!run.stdout.contains(form), "{form} leaked to stdout");
        assert!(!run.stderr.contains(form), "{form} leaked to stderr");
    }
}
