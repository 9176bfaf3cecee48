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
    let md = page.text;
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

/// agentic-pi's extract.test.ts, case by case, against the plain-text rendering.
#[test]
fn plain_text_is_agentic_pi_s() {
    let page = to_text(
        "<!-- secret -->\n<html><head><title>T</title><style>body{color:red}</style>\
         <script>alert(1)</script></head><body><p>Hello <b>world</b>.</p>\
         <noscript>fallback</noscript><iframe src=\"bad\">payload</iframe><p>Bye.</p></body></html>",
    );
    assert_eq!(page.title.as_deref(), Some("T"));
    assert_eq!(page.text, "Hello world.\n\nBye.");
    let entities = to_text("<p>A &amp; B &#9786; &#x2603; &nbsp; &mdash;</p>").text;
    assert_eq!(entities, "A & B ☺ ☃ —");
    let blocks = to_text("<div><p>One</p><p>Two</p></div><p>Three</p>").text;
    let lines: Vec<&str> = blocks.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines, ["One", "Two", "Three"]);
    assert_eq!(to_text("<p>foo<b>bar</b>baz</p>").text, "foobarbaz");
    assert_eq!(
        to_text("<title>Hello &amp; World</title>").title.as_deref(),
        Some("Hello & World")
    );
    assert_eq!(to_text("<html></html>").title, None);
    assert_eq!(to_text("<title>   </title>").title, None);
}

#[test]
fn plain_text_survives_nesting_deeper_than_the_stack() {
    let depth = 200_000;
    let html = format!("{}deep{}", "<span>".repeat(depth), "</span>".repeat(depth));
    assert!(to_text(&html).text.contains("deep"));
}
