use super::super::testing::Harness;
use super::*;

#[tokio::test]
async fn replaces_and_reports_blocks_diff_and_first_changed_line() {
    let h = Harness::new();
    h.write("a.txt", "one\ntwo\nthree\n");
    let result = h
        .run(
            &EditTool,
            json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        )
        .await
        .unwrap();
    assert_eq!(
        result.text(),
        "Successfully replaced 1 block(s) in a.txt.\n- edits[0]: now line 2"
    );
    assert_eq!(h.read("a.txt"), "one\n2\nthree\n");
    let details = result.details.unwrap();
    assert_eq!(details["firstChangedLine"], 2);
    // Pi's two shapes: the numbered display diff and the standard unified patch.
    assert_eq!(details["diff"], " 1 one\n-2 two\n+2 2\n 3 three");
    assert_eq!(
        details["patch"],
        "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    );
}

#[tokio::test]
async fn legacy_flat_arguments_and_string_encoded_edits_work() {
    let h = Harness::new();
    h.write("a.txt", "x y\n");
    h.ok(
        &EditTool,
        json!({"path": "a.txt", "oldText": "x", "newText": "X"}),
    )
    .await;
    h.ok(
        &EditTool,
        json!({"path": "a.txt", "edits": "[{\"oldText\":\"y\",\"newText\":\"Y\"}]"}),
    )
    .await;
    assert_eq!(h.read("a.txt"), "X Y\n");
}

#[tokio::test]
async fn bom_and_crlf_survive_an_edit() {
    let h = Harness::new();
    h.write("w.txt", "\u{FEFF}a\r\nb\r\n");
    h.ok(
        &EditTool,
        json!({"path": "w.txt", "edits": [{"oldText": "a\nb", "newText": "a\nB\nc"}]}),
    )
    .await;
    assert_eq!(h.read("w.txt"), "\u{FEFF}a\r\nB\r\nc\r\n");
}

#[tokio::test]
async fn the_messages_for_each_bad_edit_are_exact() {
    let h = Harness::new();
    h.write("a.txt", "dup\ndup\nabcdef\n");
    let single = |old: &str| json!({"path": "a.txt", "edits": [{"oldText": old, "newText": "z"}]});
    assert_eq!(
        h.err(&EditTool, single("missing")).await,
        "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(
        h.err(&EditTool, single("dup")).await,
        "Found 2 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        h.err(&EditTool, single("")).await,
        "oldText must not be empty in a.txt."
    );
    assert_eq!(
            h.err(&EditTool, json!({"path": "a.txt", "edits": [{"oldText": "abcd", "newText": "1"}, {"oldText": "cdef", "newText": "2"}]})).await,
            "edits[0] and edits[1] overlap in a.txt. Merge them into one edit or target disjoint regions."
        );
    assert_eq!(
            h.err(&EditTool, json!({"path": "a.txt", "edits": [{"oldText": "abc", "newText": "1"}, {"oldText": "nope", "newText": "2"}]})).await,
            "Could not find edits[1] in a.txt. The oldText must match exactly including all whitespace and newlines."
        );
    assert_eq!(
        h.err(
            &EditTool,
            json!({"path": "a.txt", "edits": [{"oldText": "abc", "newText": "abc"}]})
        )
        .await,
        "No changes made to a.txt. The replacement produced identical content. Check that newText differs from oldText."
    );
    assert_eq!(
        h.read("a.txt"),
        "dup\ndup\nabcdef\n",
        "a failed edit changes nothing"
    );
    assert_eq!(
        h.err(
            &EditTool,
            json!({"path": "nope.txt", "edits": [{"oldText": "a", "newText": "b"}]})
        )
        .await,
        "File not found: nope.txt"
    );
    assert_eq!(
        h.err(&EditTool, json!({"path": "a.txt", "edits": []}))
            .await,
        "Validation failed for tool \"edit\":\n  - edits: at least one {oldText, newText} edit is required"
    );
}

#[tokio::test]
async fn fuzzy_matches_say_so() {
    let h = Harness::new();
    h.write("q.py", "print(\u{201C}hi\u{201D})  \n");
    let text = h.ok(&EditTool, json!({"path": "q.py", "edits": [{"oldText": "print(\"hi\")", "newText": "print('bye')"}]})).await;
    assert!(
        text.ends_with("the matched lines were rewritten.)"),
        "{text}"
    );
    assert_eq!(h.read("q.py"), "print('bye')\n");
}

#[tokio::test]
async fn non_utf8_files_are_left_alone() {
    let h = Harness::new();
    h.write("l1.txt", b"caf\xe9\n");
    assert_eq!(
        h.err(
            &EditTool,
            json!({"path": "l1.txt", "edits": [{"oldText": "caf", "newText": "x"}]})
        )
        .await,
        "l1.txt is not valid UTF-8 (invalid byte at offset 3); edit will not rewrite it. Use bash for binary or non-UTF-8 files."
    );
}
