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

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_anchor_text_parses_to_a_valid_anchor_or_is_rejected(
            text in prop_oneof!["\\PC{0,30}", "[ +0-9]{0,4}#[ 0-9A-Za-z]{0,4}(:\\PC{0,10})?"],
        ) {
            if let Some((number, tag)) = parse_anchor(&text) {
                prop_assert!(number > 0);
                prop_assert!(text.contains(&number.to_string()), "{text:?} read as line {number}");
                prop_assert!(tag.len() == 2 && tag.bytes().all(|b| ALPHABET.contains(&b)), "{text:?}: {tag:?}");
                prop_assert!(text.contains(&tag), "{text:?} read as tag {tag:?}");
                // The parsed anchor, printed plainly, reads back as itself.
                prop_assert_eq!(parse_anchor(&format!("{number}#{tag}")), Some((number, tag)));
            }
        }

        #[test]
        fn every_printed_prefix_parses_back(line in "\\PC{0,80}", number in 1usize..1_000_000) {
            let prefix = line_prefix(number, &line);
            let copied = format!("{prefix}{line}");
            prop_assert_eq!(parse_anchor(&copied), Some((number, line_tag(&line, number))));
        }
    }
}
