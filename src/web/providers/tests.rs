use super::*;

#[test]
fn each_provider_s_answer_normalizes_to_the_same_hits() {
    let tavily = json!({"results": [{"title": "T", "url": "https://t.example", "content": "snippet", "raw_content": "full body", "score": 0.9, "published_date": "2026-01-02"}]});
    let exa = json!({"results": [{"title": "E", "url": "https://e.example", "highlights": ["one", "two"], "text": "page text", "publishedDate": "2026-02-03"}]});
    let brave = json!({"web": {"results": [{"title": "B", "url": "https://b.example", "description": "desc", "page_age": "2026-03-04"}, {"title": "no url"}]}});
    assert_eq!(
        parse_hits(Provider::Tavily, &tavily),
        [Hit {
            title: "T".into(),
            url: "https://t.example".into(),
            snippet: "snippet".into(),
            content: Some("full body".into()),
            score: Some(0.9),
            published: Some("2026-01-02".into())
        }]
    );
    let exa = &parse_hits(Provider::Exa, &exa)[0];
    assert_eq!(
        (exa.snippet.as_str(), exa.content.as_deref()),
        ("one … two", Some("page text"))
    );
    let brave = parse_hits(Provider::Brave, &brave);
    assert_eq!(brave.len(), 1);
    assert_eq!(brave[0].published.as_deref(), Some("2026-03-04"));
    assert_eq!(brave[0].content, None);
}

#[test]
fn a_domain_matches_its_own_host_and_every_subdomain_only() {
    for (url, domain, expected) in [
        ("https://foo.com/x", "foo.com", true),
        ("https://docs.foo.com/x", "foo.com", true),
        ("https://DOCS.Foo.com./x", "FOO.com", true),
        ("https://notfoo.com/x", "foo.com", false),
        ("https://foo.com.evil.example/", "foo.com", false),
        ("https://foo.com/", "", false),
        ("not a url", "foo.com", false),
    ] {
        assert_eq!(host_matches(url, domain), expected, "{url} {domain}");
    }
}
