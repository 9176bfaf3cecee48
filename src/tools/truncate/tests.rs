use super::*;

#[test]
fn head_keeps_whole_lines_within_the_line_budget() {
    let (out, t) = truncate_head("a\nb\nc\nd\n", 2, 100);
    assert_eq!(out, "a\nb");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    assert_eq!((t.total_lines, t.output_lines), (4, 2));
}

#[test]
fn head_stops_before_the_line_that_would_overflow_bytes() {
    let (out, t) = truncate_head("aaaa\nbbbb\ncccc", 10, 9);
    assert_eq!(out, "aaaa\nbbbb");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    assert_eq!(t.output_bytes, 9);
}

#[test]
fn head_reports_a_first_line_over_the_budget() {
    let (out, t) = truncate_head("0123456789\nx", 10, 5);
    assert_eq!(out, "");
    assert!(t.first_line_exceeds_limit);
}

#[test]
fn untruncated_text_is_returned_whole() {
    let (out, t) = truncate_head("one\ntwo\n", 10, 100);
    assert_eq!(out, "one\ntwo");
    assert!(!t.truncated);
    assert_eq!(t.total_lines, 2);
}

#[test]
fn tail_keeps_the_last_lines() {
    let (out, t) = truncate_tail("1\n2\n3\n4\n", 2, 100);
    assert_eq!(out, "3\n4");
    assert_eq!((t.total_lines, t.output_lines), (4, 2));
}

#[test]
fn tail_cuts_a_huge_last_line_on_a_char_boundary() {
    // "é" is two bytes; a 5-byte budget would split one if cut blindly.
    let text = "x\néééééé";
    let (out, t) = truncate_tail(text, 10, 5);
    assert!(t.last_line_partial);
    assert_eq!(out, "éé");
    assert!(out.len() <= 5);
}

#[test]
fn sizes_are_formatted_like_pi() {
    assert_eq!(format_size(12), "12B");
    assert_eq!(format_size(51200), "50.0KB");
    assert_eq!(format_size(1536), "1.5KB");
    assert_eq!(format_size(3 * 1024 * 1024), "3.0MB");
}

#[test]
fn capped_lines_never_split_characters() {
    assert_eq!(cap_line("ab", 5), ("ab".to_string(), false));
    assert_eq!(cap_line("ééé", 2), ("éé... [truncated]".to_string(), true));
}
