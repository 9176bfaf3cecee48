use super::*;
use serde_json::json;

#[test]
fn longest_secrets_win_and_short_values_are_ignored() {
    let secrets = Secrets::from_values([
        "abc".to_string(),
        "token-123".to_string(),
        "token-123456".to_string(),
    ]);
    assert_eq!(
        secrets.redact("x token-123456 y token-123 abc"),
        "x [REDACTED] y [REDACTED] abc"
    );
    secrets.add("minted-later");
    let mut value = json!({"a": ["minted-later"], "b": {"c": "ok"}});
    secrets.redact_value(&mut value);
    assert_eq!(value, json!({"a": ["[REDACTED]"], "b": {"c": "ok"}}));
}

#[test]
fn values_are_trimmed_and_placeholders_are_no_secrets() {
    // Keys local servers accept and nobody needs hidden: blank, `EMPTY`, `ollama`.
    let secrets = Secrets::from_values(
        ["", "        ", "EMPTY", "ollama", "  ollama  ", "1234567"].map(String::from),
    );
    assert!(secrets.is_empty());
    // A real key, given with a newline (read from a file), is found without it.
    secrets.add("sk-from-a-file-91\n");
    assert_eq!(
        secrets.redact("use sk-from-a-file-91 here"),
        "use [REDACTED] here"
    );
}

#[test]
fn the_minimum_length_counts_characters_and_applies_to_values_and_lines() {
    // Exactly MIN_LEN characters is a secret; one fewer is not, however many bytes it takes.
    let secrets = Secrets::from_values(["12345678", "ääääääää", "äääääää"].map(String::from));
    assert_eq!(
        secrets.redact("12345678 ääääääää äääääää 1234567"),
        "[REDACTED] [REDACTED] äääääää 1234567"
    );
    // The same rule for each line of a value of several lines.
    let secrets = Secrets::from_values(["line-one-is-long
abcdefgh
abcdefg"
        .to_string()]);
    assert_eq!(secrets.redact("abcdefgh abcdefg"), "[REDACTED] abcdefg");
}

#[test]
fn each_line_of_a_key_file_is_a_secret_but_not_its_armor() {
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3d4\nq8w7e6r5t4y3u2i1o0p9\nshort\n-----END RSA PRIVATE KEY-----\n";
    let secrets = Secrets::from_values([pem.to_string()]);
    assert_eq!(
        secrets.redact("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3d4\n"),
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n"
    );
    assert_eq!(secrets.redact(pem), "[REDACTED]\n");
    assert_eq!(
        secrets.redact("tail: q8w7e6r5t4y3u2i1o0p9 short"),
        "tail: [REDACTED] short"
    );
}

#[test]
fn a_url_password_is_found_as_written_and_decoded() {
    assert_eq!(
        url_password("https://user:p%40ss-word@gw.example/v1"),
        ["p%40ss-word", "p@ss-word"]
    );
    assert!(url_password("https://user@gw.example/v1").is_empty());
    assert!(url_password("not a url").is_empty());
}

#[test]
fn json_escaped_forms_are_secrets_too() {
    let secrets = Secrets::from_values(["pa\"ss\\word-1".to_string()]);
    let line = serde_json::to_string(&json!({"text": "key pa\"ss\\word-1 here"})).unwrap();
    assert_eq!(secrets.redact(&line), r#"{"text":"key [REDACTED] here"}"#);
}

#[test]
fn a_secret_split_across_pieces_is_still_redacted() {
    let secrets = Secrets::from_values(["sk-live-0123456789".to_string()]);
    let mut stream = StreamRedactor::default();
    let mut out = String::new();
    for piece in [
        "my key is sk-li",
        "ve-01234",
        "56789, ok",
        " sk-",
        "nothing",
    ] {
        out.push_str(&stream.push(&secrets, piece));
    }
    out.push_str(&stream.flush(&secrets));
    assert_eq!(out, "my key is [REDACTED], ok sk-nothing");
    // Nothing that cannot begin a secret is held back.
    assert_eq!(
        StreamRedactor::default().push(&secrets, "plain text"),
        "plain text"
    );
}

#[test]
fn clones_share_the_set() {
    let secrets = Secrets::default();
    let other = secrets.clone();
    other.add("shared-secret");
    assert_eq!(secrets.redact("shared-secret"), "[REDACTED]");
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Text with secrets in it, cut at arbitrary places: the pieces redact to exactly what
        /// the whole text redacts to, and no secret survives.
        #[test]
        fn split_text_redacts_like_whole_text(
            words in proptest::collection::vec(
                prop_oneof!["\\PC{0,8}", Just("tok-SECRET-1".to_string()), Just("a\"b\\c-key".to_string())],
                0..12,
            ),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let secrets = Secrets::from_values(["tok-SECRET-1".to_string(), "a\"b\\c-key".to_string()]);
            let text: String = words.concat();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).filter(|c| text.is_char_boundary(*c)).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut stream = StreamRedactor::default();
            let mut out = String::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                out.push_str(&stream.push(&secrets, &text[start..cut]));
                start = cut;
            }
            out.push_str(&stream.flush(&secrets));
            prop_assert_eq!(&out, &secrets.redact(&text).into_owned());
            prop_assert!(!out.contains("tok-SECRET-1"));
            prop_assert!(!out.contains("a\"b\\c-key"));
        }
    }
}

#[test]
fn a_secret_occurs_in_bytes_only_where_it_is_whole() {
    let secrets = Secrets::from_values(["s3cret-token".to_string(), "other-value".to_string()]);
    assert!(secrets.occur_in(b"xx s3cret-token yy"));
    assert!(secrets.occur_in(b"\xa5other-value"));
    assert!(!secrets.occur_in(b"s3cret-toke other-valu"));
    assert!(!secrets.occur_in(b""));
    assert!(!Secrets::default().occur_in(b"s3cret-token"));
}
