//! Write tools: the exact bodies they send, through the REST and git data APIs.

use super::*;

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
