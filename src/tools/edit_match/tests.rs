use super::*;

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old_text: old.into(),
        new_text: new.into(),
    }
}

#[test]
fn exact_single_edit() {
    let applied = apply_edits("a\nb\nc\n", &[edit("b", "B")]).unwrap();
    assert_eq!(applied.content, "a\nB\nc\n");
    assert_eq!(applied.blocks, vec![(2, 2)]);
    assert!(!applied.fuzzy);
}

#[test]
fn several_edits_are_located_in_the_original_and_reported_in_input_order() {
    let applied =
        apply_edits("1\n2\n3\n4\n", &[edit("4", "four\nFOUR"), edit("1", "one")]).unwrap();
    assert_eq!(applied.content, "one\n2\n3\nfour\nFOUR\n");
    assert_eq!(applied.blocks, vec![(4, 5), (1, 1)]);
}

#[test]
fn ambiguity_is_counted() {
    assert_eq!(
        apply_edits("x\nx\n", &[edit("x", "y")]),
        Err(MatchError::Ambiguous { index: 0, count: 2 })
    );
}

#[test]
fn overlapping_edits_are_rejected() {
    assert_eq!(
        apply_edits("abcdef", &[edit("abcd", "1"), edit("cdef", "2")]),
        Err(MatchError::Overlap {
            first: 0,
            second: 1
        })
    );
}

#[test]
fn empty_old_text_and_identical_replacements_are_rejected() {
    assert_eq!(
        apply_edits("a", &[edit("", "b")]),
        Err(MatchError::Empty { index: 0 })
    );
    assert_eq!(
        apply_edits("a", &[edit("a", "a")]),
        Err(MatchError::NoChange)
    );
}

#[test]
fn trailing_whitespace_smart_quotes_and_dashes_match_fuzzily() {
    let content = "let s = \u{201C}hi\u{201D};   \nlet d = a \u{2014} b;\nkeep  \n";
    let applied = apply_edits(content, &[edit("let s = \"hi\";\nlet d = a - b;", "X")]);
    let applied = applied.unwrap();
    assert!(applied.fuzzy);
    assert_eq!(
        applied.content, "X\nkeep  \n",
        "untouched lines keep their bytes"
    );
}

#[test]
fn inner_whitespace_runs_collapse_but_indentation_does_not() {
    let content = "fn f() {\n    let  x =   1;\n}\n";
    let applied = apply_edits(content, &[edit("    let x = 1;", "    let x = 2;")]).unwrap();
    assert_eq!(applied.content, "fn f() {\n    let x = 2;\n}\n");
    // Indentation is compared as written: a tab is not four spaces.
    assert_eq!(
        apply_edits("\tlet x = 1;\n", &[edit("    let  x = 1;", "y")]),
        Err(MatchError::NotFound { index: 0 })
    );
}

#[test]
fn fuzzy_uniqueness_is_counted_in_normalized_space() {
    let content = "a  b\na b\n";
    assert_eq!(
        apply_edits(content, &[edit("a   b", "c")]),
        Err(MatchError::Ambiguous { index: 0, count: 2 })
    );
}

#[test]
fn a_fuzzy_match_inside_a_line_keeps_the_rest_of_the_line() {
    let applied = apply_edits("call(a,  b); // x\n", &[edit("a, b", "c")]).unwrap();
    assert_eq!(applied.content, "call(c); // x\n");
}

#[test]
fn missing_text_names_the_edit() {
    assert_eq!(
        apply_edits("abc", &[edit("a", "x"), edit("zzz", "y")]),
        Err(MatchError::NotFound { index: 1 })
    );
}

#[test]
fn first_changed_line_is_one_based() {
    assert_eq!(first_changed_line("a\nb\nc", "a\nB\nc"), 2);
    assert_eq!(first_changed_line("a", "a\nb"), 2);
}
