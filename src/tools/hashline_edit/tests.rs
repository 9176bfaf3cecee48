use super::super::testing::Harness;
use super::*;

fn anchor(line: &str, n: usize) -> String {
    format!("{n}#{}", line_tag(line, n))
}

#[tokio::test]
async fn replace_prepend_and_append_apply_bottom_up() {
    let h = Harness::new();
    h.write("f.txt", "a\nb\nc\nd\n");
    let text = h
        .ok(
            &HashlineEditTool,
            json!({"path": "f.txt", "edits": [
                {"op": "prepend", "pos": anchor("a", 1), "lines": ["top"]},
                {"op": "replace", "pos": anchor("b", 2), "end": anchor("c", 3), "lines": "B\nC"},
                {"op": "append", "pos": anchor("d", 4), "lines": ["end"]}
            ]}),
        )
        .await;
    assert_eq!(h.read("f.txt"), "top\na\nB\nC\nd\nend\n");
    assert!(
        text.starts_with(
            "Successfully applied 3 edit(s) to f.txt.\nUpdated lines (fresh anchors):\n1#"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn replace_with_null_deletes() {
    let h = Harness::new();
    h.write("f.txt", "keep\ndrop\nkeep2\n");
    h.ok(&HashlineEditTool, json!({"path": "f.txt", "edits": [{"op": "replace", "pos": anchor("drop", 2), "lines": null}]})).await;
    assert_eq!(h.read("f.txt"), "keep\nkeep2\n");
}

#[tokio::test]
async fn a_stale_anchor_rejects_the_whole_call_and_shows_current_lines() {
    let h = Harness::new();
    h.write("f.txt", "one\ntwo\nthree\nfour\n");
    let stale = anchor("TWO (old)", 2);
    let err = h
        .err(
            &HashlineEditTool,
            json!({"path": "f.txt", "edits": [
                {"op": "replace", "pos": anchor("one", 1), "lines": ["1"]},
                {"op": "replace", "pos": stale.clone(), "lines": ["2"]}
            ]}),
        )
        .await;
    let expected = format!(
        "edits[1].pos: stale anchor {stale} in f.txt; line 2 is now:\n    {}one\n>>> {}two\n    {}three\n    {}four\nNo edits were applied. Read the file again with hashline: true and retry with current anchors.",
        line_prefix(1, "one"),
        line_prefix(2, "two"),
        line_prefix(3, "three"),
        line_prefix(4, "four")
    );
    assert_eq!(err, expected);
    assert_eq!(
        h.read("f.txt"),
        "one\ntwo\nthree\nfour\n",
        "nothing changed"
    );
}

#[tokio::test]
async fn overlapping_and_out_of_range_edits_are_rejected() {
    let h = Harness::new();
    h.write("f.txt", "a\nb\nc\n");
    let err = h
        .err(
            &HashlineEditTool,
            json!({"path": "f.txt", "edits": [
                {"op": "replace", "pos": anchor("a", 1), "end": anchor("c", 3), "lines": ["x"]},
                {"op": "replace", "pos": anchor("b", 2), "lines": ["y"]}
            ]}),
        )
        .await;
    assert_eq!(
        err,
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint lines."
    );
    let err = h
        .err(
            &HashlineEditTool,
            json!({"path": "f.txt", "edits": [{"op": "append", "pos": "9#ZZ", "lines": ["x"]}]}),
        )
        .await;
    assert!(
        err.starts_with("edits[0].pos: line 9 does not exist in f.txt (3 lines)."),
        "{err}"
    );
}

#[tokio::test]
async fn crlf_and_bom_are_preserved() {
    let h = Harness::new();
    h.write("w.txt", "\u{FEFF}x\r\ny\r\n");
    h.ok(&HashlineEditTool, json!({"path": "w.txt", "edits": [{"op": "replace", "pos": anchor("y", 2), "lines": ["Y"]}]})).await;
    assert_eq!(h.read("w.txt"), "\u{FEFF}x\r\nY\r\n");
}
