//! Read tools: the requests they make and the trimmed JSON they return.

use super::*;

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
