use super::*;

#[test]
fn each_provider_s_answer_normalizes_to_the_same_hits() {
    let tavily = json!({"results": [{"title": "T", "url": "https://t.example", "content": "snippet", "published_date": "2026-01-02"}]});
    let exa = json!({"results": [{"title": "E", "url": "https://e.example", "highlights": ["one", "two"], "publishedDate": "2026-02-03"}]});
    let brave = json!({"web": {"results": [{"title": "B", "url": "https://b.example", "description": "desc", "page_age": "2026-03-04"}, {"title": "no url"}]}});
    assert_eq!(
        parse_hits(Provider::Tavily, &tavily),
        [Hit {
            title: "T".into(),
            url: "https://t.example".into(),
            text: "snippet".into(),
            published: Some("2026-01-02".into())
        }]
    );
    assert_eq!(parse_hits(Provider::Exa, &exa)[0].text, "one … two");
    let brave = parse_hits(Provider::Brave, &brave);
    assert_eq!(brave.len(), 1);
    assert_eq!(brave[0].published.as_deref(), Some("2026-03-04"));
}
