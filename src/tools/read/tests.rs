use super::super::hashline::line_tag;
use super::super::testing::Harness;
use super::*;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn reads_text_without_line_numbers() {
    let h = Harness::new();
    h.write("a.txt", "one\ntwo\n");
    assert_eq!(h.ok(&ReadTool, json!({"path": "a.txt"})).await, "one\ntwo");
}

#[tokio::test]
async fn offset_and_limit_select_lines_and_hint_at_the_rest() {
    let h = Harness::new();
    h.write("a.txt", numbered(10));
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "a.txt", "offset": 3, "limit": 2}))
            .await,
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "a.txt", "offset": "9"}))
            .await,
        "line 9\nline 10"
    );
}

#[tokio::test]
async fn long_files_stop_at_2000_lines_with_a_continuation_hint() {
    let h = Harness::new();
    h.write("big.txt", numbered(9000));
    let result = h.run(&ReadTool, json!({"path": "big.txt"})).await.unwrap();
    let text = result.text();
    assert!(text.starts_with("line 1\n"));
    assert!(
        text.ends_with("line 2000\n\n[Showing lines 1-2000 of 9000. Use offset=2001 to continue.]")
    );
    let t = &result.details.unwrap()["truncation"];
    assert_eq!(t["truncatedBy"], "lines");
    assert_eq!(t["totalLines"], 9000);
    assert_eq!(t["outputLines"], 2000);
}

#[tokio::test]
async fn wide_files_stop_at_50kb() {
    let h = Harness::new();
    let line = "x".repeat(99);
    h.write("wide.txt", format!("{line}\n").repeat(1000));
    let text = h.ok(&ReadTool, json!({"path": "wide.txt"})).await;
    // 512 lines of 100 bytes (99 + newline) fit in 51200 bytes.
    assert!(
        text.ends_with(
            "\n\n[Showing lines 1-512 of 1000 (50.0KB limit). Use offset=513 to continue.]"
        ),
        "{}",
        &text[text.len() - 120..]
    );
}

#[tokio::test]
async fn a_first_line_over_the_budget_suggests_sed() {
    let h = Harness::new();
    h.write("min.js", "y".repeat(60 * 1024));
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "min.js"})).await,
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
    );
}

#[tokio::test]
async fn offset_past_the_end_is_an_error_with_the_line_count() {
    let h = Harness::new();
    h.write("a.txt", "1\n2\n3");
    assert_eq!(
        h.err(&ReadTool, json!({"path": "a.txt", "offset": 5}))
            .await,
        "Offset 5 is beyond end of file (3 lines total)"
    );
}

#[tokio::test]
async fn missing_files_directories_and_unreadable_files_are_named() {
    let h = Harness::new();
    assert_eq!(
        h.err(&ReadTool, json!({"path": "nope.txt"})).await,
        "File not found: nope.txt"
    );
    std::fs::create_dir(h.path("d")).unwrap();
    assert_eq!(
        h.err(&ReadTool, json!({"path": "d"})).await,
        "Path is a directory: d. Use ls to list its contents."
    );
    h.write("secret", "x");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(h.path("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(h.path("secret")).is_err() {
        // Only meaningful when not running as root.
        assert_eq!(
            h.err(&ReadTool, json!({"path": "secret"})).await,
            "Permission denied: secret"
        );
    }
}

#[tokio::test]
async fn binary_files_and_images_are_described_not_dumped() {
    let h = Harness::new();
    h.write("blob.bin", [0u8, 159, 146, 150, 0, 1, 2]);
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "blob.bin"})).await,
        "blob.bin is a binary file (7B); its content is not shown. Use bash (file, xxd, strings) to inspect it."
    );
    h.write("pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "pic.png"})).await,
        "Read image file [image/png]: pic.png (16B). Image content is not passed to the model by this tool."
    );
}

#[tokio::test]
async fn invalid_utf8_is_shown_lossily_with_a_note() {
    let h = Harness::new();
    h.write("latin1.txt", b"caf\xe9\n");
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "latin1.txt"})).await,
        "caf\u{FFFD}\n\n[The file is not valid UTF-8; invalid bytes are shown as U+FFFD.]"
    );
}

#[tokio::test]
async fn hashline_prefixes_each_line_with_its_anchor() {
    let h = Harness::new();
    h.write("a.rs", "fn a() {\r\n}\r\n");
    let expected = format!(
        "1#{}:fn a() {{\n2#{}:}}",
        line_tag("fn a() {", 1),
        line_tag("}", 2)
    );
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "a.rs", "hashline": true}))
            .await,
        expected
    );
}

#[tokio::test]
async fn a_valid_line_cut_inside_a_character_is_not_called_invalid() {
    let h = Harness::new();
    // A first line of 30,000 two-byte characters (60 KB): too long to show, and the
    // 50 KB cut falls inside a character.
    let long = "é".repeat(30_000);
    h.write("wide.txt", format!("{long}\nshort\n"));
    let result = h.run(&ReadTool, json!({"path": "wide.txt"})).await.unwrap();
    let text = result.text();
    assert!(!text.contains("not valid UTF-8"), "{text}");
    assert!(
        text.starts_with("[Line 1 is 58.6KB, exceeds 50.0KB limit."),
        "{text}"
    );
    let truncation = &result.details.unwrap()["truncation"];
    assert_eq!(truncation["totalBytes"], 60_007);
    assert_eq!(truncation["firstLineExceedsLimit"], true);
}

#[tokio::test]
async fn empty_files_say_so() {
    let h = Harness::new();
    h.write("e.txt", "");
    assert_eq!(
        h.ok(&ReadTool, json!({"path": "e.txt"})).await,
        "(empty file)"
    );
}
