//! Every GitHub tool against a mock GitHub REST server (wiremock, real HTTP on 127.0.0.1):
//! the request it makes (method, path, query, body) and the result it returns; failures and
//! retries; GitHub App auth with a freshly generated RSA key; cloning a local bare repository.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};
use worker::config::MapEnv;
use worker::tools::{BashSettings, FileLocks, ProcessGroups, Tool, ToolContext};

const TOKEN: &str = "ghp_testtoken123";

struct Gh {
    server: MockServer,
    tools: Vec<Arc<dyn Tool>>,
    dir: tempfile::TempDir,
}

async fn setup_with(profile: &str, env: &[(&str, &str)]) -> Gh {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("git/credentials");
    let uri = server.uri();
    let mut pairs: Vec<(&str, &str)> = vec![
        ("GITHUB_API_URL", &uri),
        ("WORKER_GIT_CREDENTIALS", creds.to_str().unwrap()),
    ];
    pairs.extend_from_slice(env);
    let configured = worker::github::configure(
        &MapEnv::from_pairs(&pairs),
        Some(profile),
        None,
        Duration::from_millis(5),
        &worker::secrets::Secrets::default(),
    )
    .unwrap();
    let extension = configured.extension.expect("the github extension");
    let tools = worker::agent::Extension::tools(&extension);
    Gh { server, tools, dir }
}

async fn setup() -> Gh {
    setup_with("repo-write", &[("GITHUB_TOKEN", TOKEN)]).await
}

impl Gh {
    async fn call(&self, name: &str, args: Value) -> Result<String, (String, Value)> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"));
        let ctx = ToolContext {
            cwd: Arc::new(self.dir.path().to_path_buf()),
            cancel: CancellationToken::new(),
            progress: Arc::new(|_| {}),
            files: FileLocks::default(),
            processes: ProcessGroups::default(),
            bash: BashSettings::default(),
        };
        tool.execute(args, ctx)
            .await
            .map(|r| r.text())
            .map_err(|e| (e.message, e.details.unwrap_or(Value::Null)))
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let text = self
            .call(name, args)
            .await
            .unwrap_or_else(|(m, _)| panic!("{name} failed: {m}"));
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    async fn mock(&self, verb: &str, route: &str, status: u16, body: Value) {
        Mock::given(method(verb))
            .and(path(route))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .expect(1)
            .mount(&self.server)
            .await;
    }

    async fn bodies(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
            .collect()
    }
}

fn issue(number: u64) -> Value {
    json!({
        "url": format!("https://api.github.com/repos/o/r/issues/{number}"), "html_url": format!("https://github.com/o/r/issues/{number}"),
        "id": 100 + number, "node_id": "I_x", "number": number, "title": "Crash on start", "state": "open",
        "user": {"login": "octocat", "id": 1, "avatar_url": "x", "site_admin": false},
        "labels": [{"id": 1, "node_id": "L", "name": "bug", "color": "f00"}], "body": "It crashes.", "comments_url": "x"
    })
}

#[tokio::test]
async fn read_tools_make_the_documented_requests_and_return_trimmed_json() {
    let gh = setup().await;
    gh.mock("GET", "/repos/o/r", 200, json!({"id": 1, "node_id": "R", "full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r", "forks_url": "x", "owner": {"login": "o", "avatar_url": "x", "site_admin": false}})).await;
    assert_eq!(
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await,
        json!({"id": 1, "full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r", "owner": {"login": "o"}})
    );

    gh.mock("GET", "/repos/o/r/issues/7", 200, issue(7)).await;
    let got = gh
        .ok(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": "7"}),
        )
        .await;
    assert_eq!(got["number"], 7);
    assert_eq!(got["user"], json!({"login": "octocat"}));
    assert!(
        got.get("node_id").is_none()
            && got.get("url").is_none()
            && got.get("comments_url").is_none()
    );

    Mock::given(method("GET"))
        .and(path("/repos/o/r/issues"))
        .and(query_param("state", "closed"))
        .and(query_param("labels", "bug,ui"))
        .and(query_param("sort", "updated"))
        .and(query_param("per_page", "30"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([issue(1), issue(2)])))
        .expect(1)
        .mount(&gh.server)
        .await;
    let got = gh.ok("github_list_issues", json!({"owner": "o", "repo": "r", "state": "closed", "labels": "bug, ui", "sort": "updated"})).await;
    assert_eq!(got.as_array().unwrap().len(), 2);

    for (tool, route, extra) in [
        (
            "github_list_issue_comments",
            "/repos/o/r/issues/7/comments",
            json!({"issue_number": 7}),
        ),
        (
            "github_get_pull_request",
            "/repos/o/r/pulls/3",
            json!({"pull_number": 3}),
        ),
        (
            "github_list_pull_request_files",
            "/repos/o/r/pulls/3/files",
            json!({"pull_number": 3}),
        ),
        (
            "github_list_pull_request_reviews",
            "/repos/o/r/pulls/3/reviews",
            json!({"pull_number": 3}),
        ),
        (
            "github_list_pull_request_review_comments",
            "/repos/o/r/pulls/3/comments",
            json!({"pull_number": 3}),
        ),
        ("github_list_labels", "/repos/o/r/labels", json!({})),
        (
            "github_list_pull_requests",
            "/repos/o/r/pulls",
            json!({"head": "o:feature", "base": "main"}),
        ),
        (
            "github_list_branches",
            "/repos/o/r/branches",
            json!({"page": 2, "per_page": 500}),
        ),
    ] {
        gh.mock("GET", route, 200, json!([{"id": 1, "name": tool}]))
            .await;
        let mut args = json!({"owner": "o", "repo": "r"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        assert_eq!(
            gh.ok(tool, args).await,
            json!([{"id": 1, "name": tool}]),
            "{tool}"
        );
    }
    let requests = gh.server.received_requests().await.unwrap();
    let query_of = |p: &str| {
        requests
            .iter()
            .find(|r| r.url.path() == p)
            .unwrap()
            .url
            .query()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(query_of("/repos/o/r/labels"), "per_page=100");
    assert_eq!(query_of("/repos/o/r/pulls/3/files"), "per_page=100");
    assert_eq!(
        query_of("/repos/o/r/pulls"),
        "state=open&head=o%3Afeature&base=main&per_page=30"
    );
    assert_eq!(
        query_of("/repos/o/r/branches"),
        "page=2&per_page=100",
        "per_page is capped at 100"
    );
}

#[tokio::test]
async fn file_contents_are_decoded_and_directories_listed() {
    let gh = setup().await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r/contents/docs/read%20me.md"))
        .and(query_param("ref", "dev"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"type": "file", "name": "read me.md", "path": "docs/read me.md", "sha": "abc", "encoding": "base64", "content": "aGVsbG8g\nd29ybGQ=\n", "git_url": "x", "html_url": "h"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    let got = gh
        .ok(
            "github_get_file_contents",
            json!({"owner": "o", "repo": "r", "path": "docs/read me.md", "branch": "dev"}),
        )
        .await;
    assert_eq!(
        got,
        json!({"type": "file", "name": "read me.md", "path": "docs/read me.md", "sha": "abc", "html_url": "h", "decoded_content": "hello world"})
    );
    gh.mock(
        "GET",
        "/repos/o/r/contents/",
        200,
        json!([{"name": "src", "path": "src", "type": "dir", "size": 0, "sha": "x", "url": "u"}]),
    )
    .await;
    assert_eq!(
        gh.ok(
            "github_get_file_contents",
            json!({"owner": "o", "repo": "r", "path": "/"})
        )
        .await,
        json!([{"name": "src", "path": "src", "type": "dir", "size": 0}])
    );
}

#[tokio::test]
async fn commits_diff_and_search() {
    let gh = setup().await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r/commits"))
        .and(query_param("sha", "main"))
        .and(query_param("path", "src/lib.rs"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"sha": "c1", "html_url": "h", "commit": {"message": "Fix", "author": {"name": "A", "date": "2026-01-01T00:00:00Z"}, "committer": {"name": "A"}, "tree": {"sha": "t"}}, "author": {"login": "a"}, "files": []}])))
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok(
            "github_list_commits",
            json!({"owner": "o", "repo": "r", "sha": "main", "path": "src/lib.rs"})
        )
        .await,
        json!([{"sha": "c1", "html_url": "h", "message": "Fix", "author": {"name": "A", "date": "2026-01-01T00:00:00Z"}, "committer": {"name": "A"}, "login": "a"}])
    );
    Mock::given(method("GET"))
        .and(path("/repos/o/r/pulls/3"))
        .and(header("accept", "application/vnd.github.diff"))
        .respond_with(ResponseTemplate::new(200).set_body_string("diff --git a/x b/x\n+new\n"))
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok(
            "github_get_pull_request_diff",
            json!({"owner": "o", "repo": "r", "pull_number": 3})
        )
        .await,
        json!("diff --git a/x b/x\n+new\n")
    );
    for (tool, kind) in [
        ("github_search_repositories", "repositories"),
        ("github_search_issues", "issues"),
        ("github_search_code", "code"),
    ] {
        Mock::given(method("GET"))
            .and(path(format!("/search/{kind}")))
            .and(query_param("q", "repo:o/r is:open"))
            .and(query_param("per_page", "5"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"total_count": 1, "items": [{"name": kind}]})),
            )
            .expect(1)
            .mount(&gh.server)
            .await;
        let got = gh
            .ok(tool, json!({"query": "repo:o/r is:open", "per_page": 5}))
            .await;
        assert_eq!(got["items"][0]["name"], kind);
    }
}

#[tokio::test]
async fn issue_and_label_writes_send_exact_bodies() {
    let gh = setup().await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/issues"))
        .and(body_json(
            json!({"title": "T", "body": "B", "labels": ["bug"]}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(issue(9)))
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok(
            "github_create_issue",
            json!({"owner": "o", "repo": "r", "title": "T", "body": "B", "labels": ["bug"]})
        )
        .await["number"],
        9
    );

    Mock::given(method("PATCH"))
        .and(path("/repos/o/r/issues/9"))
        .and(body_json(json!({"state": "closed", "labels": []})))
        .respond_with(ResponseTemplate::new(200).set_body_json(issue(9)))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok(
        "github_update_issue",
        json!({"owner": "o", "repo": "r", "issue_number": 9, "state": "closed", "labels": []}),
    )
    .await;

    Mock::given(method("POST"))
        .and(path("/repos/o/r/issues/9/comments"))
        .and(body_json(json!({"body": "Thanks!"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 5, "body": "Thanks!"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok(
        "github_add_issue_comment",
        json!({"owner": "o", "repo": "r", "issue_number": 9, "body": "Thanks!"}),
    )
    .await;

    Mock::given(method("POST"))
        .and(path("/repos/o/r/issues/9/labels"))
        .and(body_json(json!({"labels": ["a", "b"]})))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!([{"name": "a"}, {"name": "b"}])),
        )
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok(
        "github_add_labels",
        json!({"owner": "o", "repo": "r", "issue_number": 9, "labels": ["a", "b"]}),
    )
    .await;

    gh.mock(
        "DELETE",
        "/repos/o/r/issues/9/labels/needs%20review",
        200,
        json!([]),
    )
    .await;
    gh.ok(
        "github_remove_label",
        json!({"owner": "o", "repo": "r", "issue_number": 9, "name": "needs review"}),
    )
    .await;

    Mock::given(method("POST"))
        .and(path("/repos/o/r/labels"))
        .and(body_json(
            json!({"name": "p1", "color": "ff0000", "description": "urgent"}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"name": "p1"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok("github_create_label", json!({"owner": "o", "repo": "r", "name": "p1", "color": "#ff0000", "description": "urgent"})).await;

    let err = gh
        .call(
            "github_update_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 9}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.0,
        "Validation failed for tool \"github_update_issue\":\n  - give at least one of title, body, state, labels, assignees"
    );
}

#[tokio::test]
async fn pull_request_writes_send_exact_bodies() {
    let gh = setup().await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/pulls"))
        .and(body_json(
            json!({"title": "T", "head": "feat", "base": "main", "body": "B"}),
        ))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(json!({"number": 12, "html_url": "h"})),
        )
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(gh.ok("github_create_pull_request", json!({"owner": "o", "repo": "r", "title": "T", "body": "B", "head": "feat", "base": "main"})).await["number"], 12);

    let comments = json!([{"path": "src/a.rs", "line": 3, "body": "nit"}]);
    Mock::given(method("POST"))
        .and(path("/repos/o/r/pulls/12/reviews"))
        .and(body_json(
            json!({"body": "LGTM", "event": "APPROVE", "comments": comments}),
        ))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": 1, "state": "APPROVED"})),
        )
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok("github_create_pull_request_review", json!({"owner": "o", "repo": "r", "pull_number": 12, "body": "LGTM", "event": "APPROVE", "comments": comments})).await;

    Mock::given(method("PUT"))
        .and(path("/repos/o/r/pulls/12/merge"))
        .and(body_json(
            json!({"commit_title": "Merge it", "merge_method": "squash"}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"merged": true, "sha": "m"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(gh.ok("github_merge_pull_request", json!({"owner": "o", "repo": "r", "pull_number": 12, "commit_title": "Merge it", "merge_method": "squash"})).await["merged"], true);

    let err = gh
        .call(
            "github_create_pull_request_review",
            json!({"owner": "o", "repo": "r", "pull_number": 12, "body": "x", "event": "LOVE"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.0
            .contains("  - event: expected one of APPROVE, REQUEST_CHANGES, COMMENT"),
        "{}",
        err.0
    );
}

#[tokio::test]
async fn contents_branches_and_multi_file_commits_use_the_git_data_api() {
    let gh = setup().await;
    Mock::given(method("PUT"))
        .and(path("/repos/o/r/contents/docs/a.md"))
        .and(body_json(
            json!({"message": "Add", "content": "aGk=", "branch": "dev"}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"commit": {"sha": "c"}})))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok("github_create_or_update_file", json!({"owner": "o", "repo": "r", "path": "docs/a.md", "content": "hi", "message": "Add", "branch": "dev"})).await;

    gh.mock(
        "GET",
        "/repos/o/r/git/ref/heads/main",
        200,
        json!({"ref": "refs/heads/main", "object": {"sha": "base1"}}),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/git/refs"))
        .and(body_json(json!({"ref": "refs/heads/feat", "sha": "base1"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"ref": "refs/heads/feat"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.ok(
        "github_create_branch",
        json!({"owner": "o", "repo": "r", "branch": "feat", "from_branch": "main"}),
    )
    .await;

    // push_files onto a branch that does not exist yet: created from the default branch.
    let gh = setup().await;
    gh.mock(
        "GET",
        "/repos/o/r/git/ref/heads/topic",
        404,
        json!({"message": "Not Found"}),
    )
    .await;
    gh.mock("GET", "/repos/o/r", 200, json!({"default_branch": "trunk"}))
        .await;
    gh.mock(
        "GET",
        "/repos/o/r/git/ref/heads/trunk",
        200,
        json!({"object": {"sha": "p1"}}),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/git/refs"))
        .and(body_json(json!({"ref": "refs/heads/topic", "sha": "p1"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .expect(1)
        .mount(&gh.server)
        .await;
    gh.mock(
        "GET",
        "/repos/o/r/git/commits/p1",
        200,
        json!({"sha": "p1", "tree": {"sha": "tree0"}}),
    )
    .await;
    let blob_count = Arc::new(AtomicUsize::new(0));
    let counter = blob_count.clone();
    Mock::given(method("POST"))
        .and(path("/repos/o/r/git/blobs"))
        .respond_with(move |_: &Request| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            ResponseTemplate::new(201).set_body_json(json!({"sha": format!("blob{n}")}))
        })
        .expect(2)
        .mount(&gh.server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/git/trees"))
        .and(body_json(json!({"base_tree": "tree0", "tree": [
            {"path": "a.txt", "mode": "100644", "type": "blob", "sha": "blob0"},
            {"path": "dir/b.txt", "mode": "100644", "type": "blob", "sha": "blob1"}
        ]})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"sha": "tree1"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/o/r/git/commits"))
        .and(body_json(
            json!({"message": "Two files", "tree": "tree1", "parents": ["p1"]}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"sha": "commit1"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/o/r/git/refs/heads/topic"))
        .and(body_json(json!({"sha": "commit1"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ref": "refs/heads/topic"})))
        .expect(1)
        .mount(&gh.server)
        .await;
    let got = gh
        .ok("github_push_files", json!({"owner": "o", "repo": "r", "branch": "topic", "message": "Two files", "files": [{"path": "a.txt", "content": "A"}, {"path": "/dir/b.txt", "content": "B"}]}))
        .await;
    assert_eq!(
        got,
        json!({"commit": "commit1", "branch": "topic", "ref": "refs/heads/topic", "created_branch": true, "files": ["a.txt", "dir/b.txt"]})
    );
    let blobs: Vec<Value> = gh
        .bodies()
        .await
        .into_iter()
        .filter(|b| b.get("encoding").is_some())
        .collect();
    assert_eq!(
        blobs,
        vec![
            json!({"content": "A", "encoding": "utf-8"}),
            json!({"content": "B", "encoding": "utf-8"})
        ]
    );
}

#[tokio::test]
async fn failures_are_error_results_with_status_and_hint() {
    let gh = setup().await;
    gh.mock(
        "GET",
        "/repos/o/r/issues/1",
        404,
        json!({"message": "Not Found", "documentation_url": "x"}),
    )
    .await;
    let (text, details) = gh
        .call(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 1}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        details,
        json!({"error": "Not Found", "status": 404, "transient": false, "hint": "Not found: check owner, repo, number and path; private repositories need a token with access."})
    );
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), details);

    gh.mock("POST", "/repos/o/r/issues", 422, json!({"message": "Validation Failed", "errors": [{"resource": "Issue", "field": "title", "code": "missing_field"}]})).await;
    let (_, details) = gh
        .call(
            "github_create_issue",
            json!({"owner": "o", "repo": "r", "title": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(details["error"], "Validation Failed (title: missing_field)");
    assert_eq!(details["status"], 422);

    gh.mock(
        "GET",
        "/repos/o/r/issues/2",
        401,
        json!({"message": "Bad credentials"}),
    )
    .await;
    let (_, details) = gh
        .call(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 2}),
        )
        .await
        .unwrap_err();
    assert_eq!(details["status"], 401);
    assert_eq!(details["transient"], false);

    let err = gh
        .call("github_get_issue", json!({"owner": "o", "issue_number": 2}))
        .await
        .unwrap_err();
    assert!(
        err.0
            .starts_with("Validation failed for tool \"github_get_issue\":\n  - repo: required"),
        "{}",
        err.0
    );
}

#[tokio::test]
async fn transient_failures_are_retried_honouring_retry_after_then_reported() {
    let gh = setup().await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r/issues/3"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"message": "slow down"})),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&gh.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r/issues/3"))
        .respond_with(ResponseTemplate::new(200).set_body_json(issue(3)))
        .expect(1)
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 3})
        )
        .await["number"],
        3
    );

    Mock::given(method("GET"))
        .and(path("/repos/o/r/issues/4"))
        .respond_with(ResponseTemplate::new(502).set_body_string("bad gateway"))
        .expect(4)
        .mount(&gh.server)
        .await;
    let (_, details) = gh
        .call(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 4}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        details,
        json!({"error": "bad gateway", "status": 502, "transient": true, "hint": "This is a transient error. The request was retried automatically but still failed. Wait and try again."})
    );
}

/// Mints installation tokens after checking the JWT against the App's public key.
struct TokenEndpoint {
    public_pem: String,
    app_id: u64,
    minted: Arc<AtomicUsize>,
    lifetime: Duration,
}

impl Respond for TokenEndpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let jwt = bearer.trim_start_matches("Bearer ");
        let key =
            octocrab::jsonwebtoken::DecodingKey::from_rsa_pem(self.public_pem.as_bytes()).unwrap();
        let mut validation =
            octocrab::jsonwebtoken::Validation::new(octocrab::jsonwebtoken::Algorithm::RS256);
        // GitHub takes the App id as a number, which jsonwebtoken's `iss` check cannot read.
        validation.set_required_spec_claims(&["exp"]);
        match octocrab::jsonwebtoken::decode::<Value>(jwt, &key, &validation) {
            Ok(data) if data.claims["iss"] == json!(self.app_id) => {
                let iat = data.claims["iat"].as_u64().unwrap();
                let exp = data.claims["exp"].as_u64().unwrap();
                assert!(
                    exp - iat <= 600,
                    "GitHub refuses JWTs living over 10 minutes"
                );
                let n = self.minted.fetch_add(1, Ordering::SeqCst);
                let expires = std::time::SystemTime::now() + self.lifetime;
                ResponseTemplate::new(201).set_body_json(json!({
                    "token": format!("ghs_installation{n}"),
                    "expires_at": humantime::format_rfc3339_seconds(expires).to_string()
                }))
            }
            other => ResponseTemplate::new(401)
                .set_body_json(json!({"message": format!("bad JWT: {other:?}")})),
        }
    }
}

#[tokio::test]
async fn github_app_tokens_are_minted_at_the_api_base_cached_and_refreshed_before_expiry() {
    use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let private_pem = key
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let public_pem = key
        .to_public_key()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("app.pem");
    std::fs::write(&pem_path, &private_pem).unwrap();

    for (lifetime, expected_mints) in [
        (Duration::from_secs(3600), 1),
        (Duration::from_secs(240), 2),
    ] {
        let gh = setup_with(
            "read",
            &[
                ("GITHUB_APP_ID", "4242"),
                ("GITHUB_APP_PRIVATE_KEY_PATH", pem_path.to_str().unwrap()),
                ("GITHUB_APP_INSTALLATION_ID", "77"),
            ],
        )
        .await;
        let minted = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/app/installations/77/access_tokens"))
            .respond_with(TokenEndpoint {
                public_pem: public_pem.clone(),
                app_id: 4242,
                minted: minted.clone(),
                lifetime,
            })
            .mount(&gh.server)
            .await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r"))
            .and(header("authorization", "Bearer ghs_installation0"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"full_name": "o/r"})))
            .mount(&gh.server)
            .await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r"))
            .and(header("authorization", "Bearer ghs_installation1"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"full_name": "o/r (second token)"})),
            )
            .mount(&gh.server)
            .await;
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await;
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await;
        // A token within five minutes of expiry is replaced before use; a fresh one is reused.
        assert_eq!(
            minted.load(Ordering::SeqCst),
            expected_mints,
            "lifetime {lifetime:?}"
        );
    }
}

#[tokio::test]
async fn a_revoked_app_token_is_re_minted_once_on_401() {
    use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("app.pem");
    std::fs::write(
        &pem_path,
        key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    let public_pem = key
        .to_public_key()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let gh = setup_with(
        "read",
        &[
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_APP_PRIVATE_KEY_PATH", pem_path.to_str().unwrap()),
            ("GITHUB_APP_INSTALLATION_ID", "2"),
        ],
    )
    .await;
    let minted = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(path("/app/installations/2/access_tokens"))
        .respond_with(TokenEndpoint {
            public_pem,
            app_id: 1,
            minted: minted.clone(),
            lifetime: Duration::from_secs(3600),
        })
        .mount(&gh.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r"))
        .and(header("authorization", "Bearer ghs_installation0"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(&gh.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r"))
        .and(header("authorization", "Bearer ghs_installation1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"full_name": "o/r"})))
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await["full_name"],
        "o/r"
    );
    assert_eq!(minted.load(Ordering::SeqCst), 2);
}

fn git(args: &[&str], cwd: &std::path::Path) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn clone_uses_a_private_credential_store_and_refresh_rewrites_it() {
    use std::os::unix::fs::PermissionsExt;
    // A bare repository at <server>/o/r.git, served over a file URL.
    let server_dir = tempfile::tempdir().unwrap();
    let seed = server_dir.path().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&["init", "-q", "-b", "main"], &seed);
    std::fs::write(seed.join("README.md"), "hello\n").unwrap();
    git(&["add", "."], &seed);
    git(&["commit", "-q", "-m", "init"], &seed);
    std::fs::create_dir_all(server_dir.path().join("o")).unwrap();
    git(
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            server_dir.path().join("o/r.git").to_str().unwrap(),
        ],
        server_dir.path(),
    );
    let server_url = format!("file://{}", server_dir.path().display());

    let gh = setup_with(
        "repo-write",
        &[("GITHUB_TOKEN", TOKEN), ("GITHUB_SERVER_URL", &server_url)],
    )
    .await;
    let got = gh
        .ok(
            "github_clone_repo",
            json!({"owner": "o", "repo": "r", "path": "work/r"}),
        )
        .await;
    let dest = gh.dir.path().join("work/r");
    let creds = gh.dir.path().join("git/credentials");
    // A static token has no known expiry (the null is trimmed, like every null).
    assert_eq!(
        got,
        json!({"cloned": true, "path": dest, "credentials_file": creds})
    );
    assert_eq!(
        std::fs::read_to_string(dest.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(&creds).unwrap(),
        format!("https://x-access-token:{TOKEN}@{}\n", "localhost")
    );
    assert_eq!(
        std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(creds.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let helper = std::process::Command::new("git")
        .args(["config", "credential.helper"])
        .current_dir(&dest)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&helper.stdout).trim(),
        format!("store --file={}", creds.display())
    );

    std::fs::write(&creds, "stale").unwrap();
    let got = gh
        .ok("github_refresh_git_auth", json!({"path": "work/r"}))
        .await;
    assert_eq!(got["refreshed"], true);
    assert!(std::fs::read_to_string(&creds).unwrap().contains(TOKEN));

    let (text, _) = gh
        .call(
            "github_clone_repo",
            json!({"owner": "o", "repo": "r", "path": "work/r"}),
        )
        .await
        .unwrap_err();
    assert!(text.contains("already exists and is not empty"), "{text}");
    let (text, _) = gh
        .call(
            "github_clone_repo",
            json!({"owner": "o", "repo": "missing"}),
        )
        .await
        .unwrap_err();
    assert!(text.contains("git exited with 128"), "{text}");
    assert!(!text.contains(TOKEN));
}
