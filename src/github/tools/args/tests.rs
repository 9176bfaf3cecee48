use super::*;

#[test]
fn paths_and_queries_are_encoded() {
    assert_eq!(segment("needs review"), "needs%20review");
    assert_eq!(file_path("/docs/a b/ü.md"), "docs/a%20b/%C3%BC.md");
    assert_eq!(
        query(&[
            ("state", Some("open".into())),
            ("labels", None),
            ("q", Some("is:pr author:me".into()))
        ]),
        "?state=open&q=is%3Apr%20author%3Ame"
    );
    assert_eq!(query(&[("a", None)]), "");
}
