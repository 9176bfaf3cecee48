//! Pi's display diff of an edit (`details.diff`): changed lines with their line numbers
//! (`+12 new`, `-12 old`), up to four lines of context around each change and ` ...` for the
//! lines skipped, so consumers that render Pi's edit results render worker's the same way.
//! `details.patch` carries the standard unified patch beside it.

use similar::{ChangeTag, TextDiff};

/// Lines of context shown around a change.
const CONTEXT: usize = 4;

/// The display diff, and the first changed line of the new text (1-based).
pub(super) fn display_diff(before: &str, after: &str) -> (String, Option<usize>) {
    let diff = TextDiff::from_lines(before, after);
    // Runs of lines with the same tag, in order (a replacement: its removals, then additions).
    let mut runs: Vec<(ChangeTag, Vec<String>)> = Vec::new();
    for change in diff.iter_all_changes() {
        let line = change.value().trim_end_matches('\n').to_string();
        match runs.last_mut() {
            Some((tag, lines)) if *tag == change.tag() => lines.push(line),
            _ => runs.push((change.tag(), vec![line])),
        }
    }
    let width = before
        .split('\n')
        .count()
        .max(after.split('\n').count())
        .to_string()
        .len();
    let number = |n: usize| format!("{n:>width$}");
    let skipped = format!(" {} ...", " ".repeat(width));
    let (mut old, mut new) = (1usize, 1usize);
    let mut first_changed = None;
    let mut last_was_change = false;
    let mut out: Vec<String> = Vec::new();
    for (index, (tag, lines)) in runs.iter().enumerate() {
        match tag {
            ChangeTag::Insert | ChangeTag::Delete => {
                first_changed.get_or_insert(new);
                for line in lines {
                    if *tag == ChangeTag::Insert {
                        out.push(format!("+{} {line}", number(new)));
                        new += 1;
                    } else {
                        out.push(format!("-{} {line}", number(old)));
                        old += 1;
                    }
                }
                last_was_change = true;
            }
            ChangeTag::Equal => {
                let next_is_change = runs
                    .get(index + 1)
                    .is_some_and(|(tag, _)| *tag != ChangeTag::Equal);
                let count = lines.len();
                // Which lines of the run are shown: a head after a change, a tail before one.
                let head = if last_was_change {
                    CONTEXT.min(count)
                } else {
                    0
                };
                let tail = if next_is_change {
                    CONTEXT.min(count)
                } else {
                    0
                };
                // Lines shown (`Some`) and a gap of skipped ones (`None` counts them).
                let mut shown: Vec<(Option<&String>, usize)> = Vec::new();
                if head + tail >= count && (head > 0 || tail > 0) {
                    shown.extend(lines.iter().map(|line| (Some(line), 1)));
                } else {
                    shown.extend(lines[..head].iter().map(|line| (Some(line), 1)));
                    shown.push((None, count - head - tail));
                    shown.extend(lines[count - tail..].iter().map(|line| (Some(line), 1)));
                }
                for (line, advance) in shown {
                    match line {
                        Some(line) => out.push(format!(" {} {line}", number(old))),
                        None if advance > 0 && (head > 0 || tail > 0) => out.push(skipped.clone()),
                        None => {}
                    }
                    old += advance;
                    new += advance;
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_shows_its_lines_numbered_with_context_and_gaps() {
        let before: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let after = before.replace("line 10\n", "line ten\n");
        let (diff, first) = display_diff(&before, &after);
        assert_eq!(first, Some(10));
        assert_eq!(
            diff,
            "    ...\n  6 line 6\n  7 line 7\n  8 line 8\n  9 line 9\n-10 line 10\n+10 line ten\n 11 line 11\n 12 line 12\n 13 line 13\n 14 line 14\n    ..."
        );
    }

    #[test]
    fn nearby_changes_share_their_context() {
        let before = "a\nb\nc\nd\n";
        let after = "A\nb\nc\nD\n";
        let (diff, first) = display_diff(before, after);
        assert_eq!(first, Some(1));
        assert_eq!(diff, "-1 a\n+1 A\n 2 b\n 3 c\n-4 d\n+4 D");
    }

    #[test]
    fn identical_texts_have_no_diff() {
        assert_eq!(display_diff("a\n", "a\n"), (String::new(), None));
    }
}
