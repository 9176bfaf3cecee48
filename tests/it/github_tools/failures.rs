//! Failures as error results, and retries of transient ones.

use super::*;

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
