use super::*;

#[test]
fn plain_quoted_folded_and_literal_values() {
    let text = "---\nname: roll-dice\ndescription: >\n  Rolls dice\n  for games.\nnote: \"a \\\"q\\\" b\"\nother: 'it''s'\nlong: first\n  second\nblock: |\n  one\n  two\nmetadata:\n  author: x\n---\nBody\n";
    let fields = parse(text).unwrap();
    assert_eq!(fields["name"], "roll-dice");
    assert_eq!(fields["description"], "Rolls dice for games.");
    assert_eq!(fields["note"], "a \"q\" b");
    assert_eq!(fields["other"], "it's");
    assert_eq!(fields["long"], "first second");
    assert_eq!(fields["block"], "one\ntwo");
    assert!(!fields.contains_key("metadata"));
    assert!(!fields.contains_key("author"));
}

#[test]
fn broken_frontmatter_is_explained() {
    assert_eq!(
        parse("# Title\n").unwrap_err().to_string(),
        "the file must start with a --- line"
    );
    assert_eq!(
        parse("---\nname: x\n").unwrap_err().to_string(),
        "no closing --- line"
    );
    assert_eq!(
        parse("---\nname x\n---\n").unwrap_err().to_string(),
        "line 2: expected 'key: value'"
    );
    assert_eq!(
        parse("---\nname: \"x\n---\n").unwrap_err().to_string(),
        "name: unclosed double quote"
    );
}
