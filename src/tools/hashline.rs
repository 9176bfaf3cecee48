//! Line anchors (`LINE#TAG`) that go stale when the line changes.
//!
//! `read` with `hashline: true` prints each line as `12#KJ:content`; `hashline_edit` accepts
//! `12#KJ` as an anchor and refuses it unless line 12 still hashes to `KJ`. The tag is the low
//! byte of xxh32 over the line with whitespace removed (so re-indentation alone doesn't stale
//! it), written as two letters. Lines with no letters or digits (`}`, blank lines) are
//! seeded with their line number, or every `}` would share a tag.

use xxhash_rust::xxh32::xxh32;

const ALPHABET: &[u8; 16] = b"ZPMQVRWSNKTXJBYH";

pub fn line_tag(line: &str, line_number: usize) -> String {
    let stripped: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let seed = if line.chars().any(char::is_alphanumeric) {
        0
    } else {
        line_number as u32
    };
    let low = (xxh32(stripped.as_bytes(), seed) & 0xff) as usize;
    let mut tag = String::with_capacity(2);
    tag.push(ALPHABET[low >> 4] as char);
    tag.push(ALPHABET[low & 0xf] as char);
    tag
}

/// `12#KJ:` for line 12.
pub fn line_prefix(line_number: usize, line: &str) -> String {
    format!("{line_number}#{}:", line_tag(line, line_number))
}

/// Parses `12#KJ` (a copied `12#KJ:content` also works) into the line number and tag.
pub fn parse_anchor(anchor: &str) -> Option<(usize, String)> {
    let (number, rest) = anchor.trim().split_once('#')?;
    let number: usize = number.trim().parse().ok().filter(|n| *n > 0)?;
    let tag: String = rest.split(':').next()?.trim().to_string();
    (tag.len() == 2 && tag.bytes().all(|b| ALPHABET.contains(&b))).then_some((number, tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_ignore_whitespace_but_not_content() {
        assert_eq!(line_tag("let x = 1;", 3), line_tag("    let x  =  1;", 9));
        assert_ne!(line_tag("let x = 1;", 3), line_tag("let x = 2;", 3));
    }

    #[test]
    fn symbol_only_lines_are_seeded_by_position() {
        // Two "}" lines on different lines should usually differ; the seed makes that likely.
        let tags: Vec<String> = (1..=20).map(|n| line_tag("}", n)).collect();
        let distinct: std::collections::HashSet<&String> = tags.iter().collect();
        assert!(distinct.len() > 5, "{tags:?}");
    }

    #[test]
    fn anchors_parse_with_or_without_copied_content() {
        let tag = line_tag("fn main() {", 4);
        assert_eq!(parse_anchor(&format!("4#{tag}")), Some((4, tag.clone())));
        assert_eq!(
            parse_anchor(&format!("4#{tag}:fn main() {{")),
            Some((4, tag))
        );
        assert_eq!(parse_anchor("0#ZZ"), None);
        assert_eq!(parse_anchor("4#zz"), None);
        assert_eq!(parse_anchor("4"), None);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_anchor_text_parses_or_is_rejected(text in "\\PC{0,30}") {
            let _ = parse_anchor(&text);
        }

        #[test]
        fn every_printed_prefix_parses_back(line in "\\PC{0,80}", number in 1usize..1_000_000) {
            let prefix = line_prefix(number, &line);
            let copied = format!("{prefix}{line}");
            prop_assert_eq!(parse_anchor(&copied), Some((number, line_tag(&line, number))));
        }
    }
}
