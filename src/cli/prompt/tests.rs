use super::*;

#[test]
fn stdin_alone_is_the_prompt_verbatim() {
    assert_eq!(combine(None, Some(b"fix it\n")).unwrap(), "fix it\n");
}

#[test]
fn an_argument_comes_first_and_stdin_is_wrapped() {
    assert_eq!(
        combine(Some("review this"), Some(b"diff --git\n")).unwrap(),
        "review this\n\n<stdin>\ndiff --git\n</stdin>"
    );
    assert_eq!(
        combine(Some("only arg"), Some(b"  \n")).unwrap(),
        "only arg"
    );
    assert_eq!(combine(Some("only arg"), None).unwrap(), "only arg");
}

#[test]
fn boms_are_handled_and_invalid_bytes_are_located() {
    assert_eq!(combine(None, Some(b"\xEF\xBB\xBFhi")).unwrap(), "hi");
    assert_eq!(combine(None, Some(b"\xFF\xFEh\0i\0")).unwrap(), "hi");
    assert_eq!(
        combine(None, Some(b"ok\xC3\x28")).unwrap_err().to_string(),
        "stdin is not valid UTF-8 (invalid byte at offset 2)"
    );
    assert_eq!(
        combine(None, Some(b"\xEF\xBB\xBFok\xFF"))
            .unwrap_err()
            .to_string(),
        "stdin is not valid UTF-8 (invalid byte at offset 5)"
    );
}

#[test]
fn empty_and_blank_prompts_are_refused() {
    for input in [&b""[..], b"   \n\t"] {
        assert!(
            combine(None, Some(input))
                .unwrap_err()
                .to_string()
                .starts_with("empty prompt")
        );
    }
    assert!(
        combine(None, None)
            .unwrap_err()
            .to_string()
            .starts_with("empty prompt: pipe the prompt into stdin")
    );
}
