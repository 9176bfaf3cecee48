//! Locating `oldText` blocks in a file and replacing them: exact first, then fuzzy.
//!
//! Every edit is located in the *original* content (edits never see each other's results) and
//! must match exactly once; matches must not overlap. If any edit misses exactly, all of them
//! are located again in a normalized view of the file where each line is NFKC-folded, smart
//! quotes, Unicode dashes and spaces become ASCII, runs of inner whitespace collapse to one
//! space and trailing whitespace is dropped. Leading indentation is kept as it is: it carries
//! meaning in many languages. A fuzzy match rewrites only the lines it touches; every other
//! line keeps its original bytes.
//!
//! Content here is LF-only and BOM-free; the edit tool restores both around this.

use unicode_normalization::UnicodeNormalization;

#[derive(Debug, Clone)]
pub(super) struct Edit {
    pub old_text: String,
    pub new_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MatchError {
    Empty { index: usize },
    NotFound { index: usize },
    Ambiguous { index: usize, count: usize },
    Overlap { first: usize, second: usize },
    NoChange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Applied {
    pub content: String,
    /// For each edit (in input order): first and last line of its new text, 1-based.
    pub blocks: Vec<(usize, usize)>,
    pub fuzzy: bool,
}

/// One replacement of `range` (bytes of the original) by `text`.
struct Replacement {
    edit: usize,
    range: std::ops::Range<usize>,
    text: String,
}

pub(super) fn apply_edits(content: &str, edits: &[Edit]) -> Result<Applied, MatchError> {
    if let Some(index) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(MatchError::Empty { index });
    }
    let (replacements, fuzzy) = match locate_exact(content, edits)? {
        Some(found) => (found, false),
        None => (locate_fuzzy(content, edits)?, true),
    };
    let applied = apply(content, replacements, edits.len())?;
    Ok(Applied { fuzzy, ..applied })
}

/// `None` when some edit has no exact match (the fuzzy pass then takes over).
fn locate_exact(content: &str, edits: &[Edit]) -> Result<Option<Vec<Replacement>>, MatchError> {
    let mut found = Vec::with_capacity(edits.len());
    let mut missing = false;
    for (index, edit) in edits.iter().enumerate() {
        let mut matches = content.match_indices(edit.old_text.as_str());
        match (matches.next(), matches.count()) {
            (None, _) => missing = true,
            (Some((start, _)), 0) => found.push(Replacement {
                edit: index,
                range: start..start + edit.old_text.len(),
                text: edit.new_text.clone(),
            }),
            (Some(_), more) => {
                return Err(MatchError::Ambiguous {
                    index,
                    count: more + 1,
                });
            }
        }
    }
    Ok((!missing).then_some(found))
}

fn locate_fuzzy(content: &str, edits: &[Edit]) -> Result<Vec<Replacement>, MatchError> {
    let lines: Vec<&str> = content.split('\n').collect();
    let normalized: Vec<String> = lines.iter().map(|line| normalize_line(line)).collect();
    let haystack = normalized.join("\n");
    // Where each line starts, in the original and in the normalized text.
    let mut original_starts = Vec::with_capacity(lines.len());
    let mut normalized_starts = Vec::with_capacity(lines.len());
    let (mut o, mut n) = (0, 0);
    for (line, norm) in lines.iter().zip(&normalized) {
        original_starts.push(o);
        normalized_starts.push(n);
        o += line.len() + 1;
        n += norm.len() + 1;
    }
    let line_of = |offset: usize| normalized_starts.partition_point(|&start| start <= offset) - 1;

    let mut found = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let needle = normalize_text(&edit.old_text);
        if needle.trim().is_empty() {
            return Err(MatchError::NotFound { index });
        }
        let mut matches = haystack.match_indices(needle.as_str());
        let (start, end) = match (matches.next(), matches.count()) {
            (None, _) => return Err(MatchError::NotFound { index }),
            (Some((start, _)), 0) => (start, start + needle.len()),
            (Some(_), more) => {
                return Err(MatchError::Ambiguous {
                    index,
                    count: more + 1,
                });
            }
        };
        let first = line_of(start);
        let last = line_of(end.saturating_sub(1).max(start));
        let prefix = &normalized[first][..start - normalized_starts[first]];
        let suffix =
            &normalized[last][(end - normalized_starts[last]).min(normalized[last].len())..];
        let range_end = original_starts[last] + lines[last].len();
        found.push(Replacement {
            edit: index,
            range: original_starts[first]..range_end,
            text: format!("{prefix}{}{suffix}", edit.new_text),
        });
    }
    Ok(found)
}

fn apply(
    content: &str,
    mut replacements: Vec<Replacement>,
    count: usize,
) -> Result<Applied, MatchError> {
    replacements.sort_by_key(|r| (r.range.start, r.range.end));
    for pair in replacements.windows(2) {
        if pair[1].range.start < pair[0].range.end {
            let (a, b) = (
                pair[0].edit.min(pair[1].edit),
                pair[0].edit.max(pair[1].edit),
            );
            return Err(MatchError::Overlap {
                first: a,
                second: b,
            });
        }
    }
    let mut out = String::with_capacity(content.len());
    let mut blocks = vec![(0, 0); count];
    let mut cursor = 0;
    for replacement in &replacements {
        out.push_str(&content[cursor..replacement.range.start]);
        let first = out.matches('\n').count() + 1;
        out.push_str(&replacement.text);
        let last = first + replacement.text.matches('\n').count();
        blocks[replacement.edit] = (first, last);
        cursor = replacement.range.end;
    }
    out.push_str(&content[cursor..]);
    if out == content {
        return Err(MatchError::NoChange);
    }
    Ok(Applied {
        content: out,
        blocks,
        fuzzy: false,
    })
}

fn normalize_text(text: &str) -> String {
    text.split('\n')
        .map(normalize_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn normalize_line(line: &str) -> String {
    let folded: String = line.nfkc().map(fold_char).collect();
    let trimmed = folded.trim_end();
    let indent_len = trimmed.len() - trimmed.trim_start_matches([' ', '\t']).len();
    let (indent, rest) = trimmed.split_at(indent_len);
    let mut out = String::with_capacity(trimmed.len());
    out.push_str(indent);
    let mut in_space = false;
    for c in rest.chars() {
        if c == ' ' || c == '\t' {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

fn fold_char(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The first line (1-based) where `before` and `after` differ.
pub(super) fn first_changed_line(before: &str, after: &str) -> usize {
    before
        .split('\n')
        .zip(after.split('\n'))
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| before.split('\n').count().min(after.split('\n').count()))
        + 1
}

#[cfg(test)]
mod tests;
