use super::*;
use serde_json::json;

#[test]
fn an_issue_keeps_what_matters() {
    let issue = json!({
        "url": "https://api.github.com/repos/o/r/issues/7", "repository_url": "x", "labels_url": "x",
        "html_url": "https://github.com/o/r/issues/7", "id": 1, "node_id": "I_kw", "number": 7,
        "title": "Crash", "state": "open", "locked": false, "milestone": null, "closed_at": null,
        "user": {"login": "octocat", "id": 1, "avatar_url": "a", "gravatar_id": "", "type": "User", "site_admin": false},
        "labels": [{"id": 9, "node_id": "L", "url": "https://api.github.com/...", "name": "bug", "color": "f00", "default": true, "description": null}],
        "reactions": {"+1": 3}, "body": "It crashes.", "created_at": "2026-01-01T00:00:00Z",
        "performed_via_github_app": null
    });
    assert_eq!(
        trim(issue),
        json!({
            "html_url": "https://github.com/o/r/issues/7", "id": 1, "number": 7, "title": "Crash",
            "state": "open", "locked": false, "closed_at": null, "user": {"login": "octocat"},
            "labels": [{"id": 9, "url": "https://api.github.com/...", "name": "bug", "color": "f00", "default": true}],
            "body": "It crashes.", "created_at": "2026-01-01T00:00:00Z"
        })
    );
}

#[test]
fn bots_keep_their_type_and_clone_urls_survive() {
    assert_eq!(
        trim(
            json!({"owner": {"login": "ci[bot]", "type": "Bot", "site_admin": false}, "clone_url": "https://github.com/o/r.git", "git_url": "git://x"})
        ),
        json!({"owner": {"login": "ci[bot]", "type": "Bot"}, "clone_url": "https://github.com/o/r.git"})
    );
}
