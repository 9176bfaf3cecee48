use super::*;

#[test]
fn readable_parts_stay_and_the_rest_goes() {
    let page = to_markdown(
        r#"<!doctype html><html><head><title> Release
            notes </title><style>body{color:red}</style><script>var secret = 1;</script></head>
            <body><!-- a comment --><h1>Version 2</h1><p>See the <a href="https://example.com/docs">docs</a>.</p>
            <ul><li>fast</li><li>safe</li></ul><pre><code>cargo install worker</code></pre>
            <noscript>enable js</noscript><iframe src="https://ads.example"></iframe>
            <script>track()</script></body></html>"#,
    );
    assert_eq!(page.title.as_deref(), Some("Release notes"));
    let md = page.markdown;
    assert!(md.contains("# Version 2"), "{md}");
    assert!(md.contains("[docs](https://example.com/docs)"), "{md}");
    assert!(md.contains("fast") && md.contains("safe"), "{md}");
    assert!(md.contains("cargo install worker"), "{md}");
    for gone in [
        "color:red",
        "secret",
        "track()",
        "a comment",
        "enable js",
        "ads.example",
    ] {
        assert!(!md.contains(gone), "{gone} in {md}");
    }
}
