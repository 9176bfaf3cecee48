use super::*;

#[test]
fn small_output_is_returned_whole() {
    let leftovers = Leftovers::default();
    let mut out = Output::new(Secrets::default(), leftovers.clone());
    out.push(b"a\n");
    out.push(b"b\n");
    assert_eq!(out.finish().0, "a\nb");
}

#[test]
fn empty_output_says_so() {
    assert_eq!(
        Output::new(Secrets::default(), Leftovers::default())
            .finish()
            .0,
        "(no output)"
    );
}

#[test]
fn long_output_keeps_the_tail_and_spills_everything() {
    let leftovers = Leftovers::default();
    let mut out = Output::new(Secrets::default(), leftovers.clone());
    for i in 1..=5000 {
        out.push(format!("line {i}\n").as_bytes());
    }
    let (text, details) = out.finish();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(text.starts_with("line 3001\n"), "{}", &text[..20]);
    assert!(text.ends_with(&format!(
        "line 5000\n\n[Showing lines 3001-5000 of 5000. Full output: {path}]"
    )));
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.lines().count(), 5000);
    assert!(full.starts_with("line 1\n"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn memory_stays_bounded_for_huge_output() {
    let leftovers = Leftovers::default();
    let mut out = Output::new(Secrets::default(), leftovers.clone());
    let chunk = vec![b'z'; 64 * 1024];
    for _ in 0..200 {
        out.push(&chunk);
        assert!(out.buffer.len() <= 2 * TAIL_KEEP + chunk.len());
        assert!(out.pending.len() <= 2 * MAX_BYTES);
    }
    let (text, details) = out.finish();
    assert!(
        text.contains("[Showing last 50.0KB of line 1 (line is 12.5MB). Full output: "),
        "{}",
        &text[text.len() - 200..]
    );
    let path = details["fullOutputPath"].as_str().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 200 * 64 * 1024);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn the_spill_file_keeps_the_head_and_the_tail_of_endless_output() {
    let leftovers = Leftovers::default();
    let mut out = Output::new(Secrets::default(), leftovers.clone());
    let chunk: Vec<u8> = b"y\n".repeat(32 * 1024);
    let rounds = (3 * SPILL_HEAD as usize) / chunk.len();
    for _ in 0..rounds {
        out.push(&chunk);
    }
    out.push(b"last line\n");
    let total = (rounds * chunk.len() + 10) as u64;
    let (text, details) = out.finish();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    let omitted = details["fullOutputOmittedBytes"].as_u64().unwrap();
    let file = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let note = format!("\n[... {omitted} bytes of output not kept ...]\n");
    assert_eq!(file.len() as u64, total - omitted + note.len() as u64);
    assert!(file.len() as u64 <= SPILL_HEAD + TAIL_KEEP as u64 * 2 + 100);
    assert!(file.ends_with(b"y\nlast line\n"));
    assert_eq!(&file[..4], b"y\ny\n");
    let at = SPILL_HEAD as usize;
    assert_eq!(&file[at..at + note.len()], note.as_bytes());
    assert!(text.ends_with(&format!(
            "Output saved to {path}: the first 16.0MB and the last {}; {} in between were not kept]",
            format_size((total - omitted - SPILL_HEAD) as usize),
            format_size(omitted as usize)
        )), "{}", &text[text.len() - 200..]);
}

#[test]
fn the_spill_file_is_redacted_even_across_writes() {
    let secrets = Secrets::from_values(["sk-spill-secret-99".to_string()]);
    let leftovers = Leftovers::default();
    let mut out = Output::new(secrets, leftovers.clone());
    out.push(&vec![b'x'; 60 * 1024]);
    out.push(b"\nkey sk-spill-");
    out.push(b"secret-99 end\n");
    out.push(b"again sk-spill-secret-99\n");
    let (_, details) = out.finish();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    let file = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(!file.contains("sk-spill"), "{}", &file[file.len() - 80..]);
    assert!(file.ends_with("\nkey [REDACTED] end\nagain [REDACTED]\n"));
}

#[test]
fn pending_updates_never_split_a_character() {
    let leftovers = Leftovers::default();
    let mut out = Output::new(Secrets::default(), leftovers.clone());
    let bytes = "é".as_bytes();
    out.push(&bytes[..1]);
    assert_eq!(out.take_pending(), None);
    out.push(&bytes[1..]);
    assert_eq!(out.take_pending().as_deref(), Some("é"));
    assert_eq!(out.take_pending(), None);
}

#[test]
fn a_cut_of_a_long_line_never_keeps_part_of_a_secret() {
    let secret = "sk-cut-secret-0123456789";
    let secrets = Secrets::from_values([secret.to_string()]);
    let leftovers = Leftovers::default();
    let mut out = Output::new(secrets, leftovers.clone());
    // One line whose shown tail would begin in the middle of the secret.
    out.push(b"start ");
    out.push(secret.as_bytes());
    out.push(&vec![b'x'; MAX_BYTES - 10]);
    let (text, _) = out.finish();
    assert!(!text.contains(&secret[10..]), "{}", &text[..40]);
    assert!(text.starts_with("[REDACTED]xxx"), "{}", &text[..40]);
}
