use std::time::{Duration, Instant};

use super::*;

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

#[test]
fn only_a_regular_file_is_read_and_refusing_anything_else_is_immediate() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let cases = [
        (fifo.as_path(), "a FIFO, not a regular file"),
        (
            Path::new("/dev/zero"),
            "a character device, not a regular file",
        ),
        (dir.path(), "a directory, not a regular file"),
        (socket.as_path(), "a socket, not a regular file"),
    ];
    for (path, reason) in cases {
        let started = Instant::now();
        let err = read_text(path, InputKind::SystemPrompt).unwrap_err();
        // Opening a FIFO without a writer, or reading a device, would block or run on; 2 s is
        // far beyond a refusal from metadata on a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(2), "{path:?}");
        assert_eq!(err.to_string(), reason, "{path:?}");
    }
    assert_eq!(
        read_text(&dir.path().join("nope"), InputKind::SystemPrompt)
            .unwrap_err()
            .to_string(),
        "No such file or directory"
    );
}

#[test]
fn a_file_over_its_cap_is_refused_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let file = File::create(&path).unwrap();
    // Sparse: 64 GiB of nothing, instantly. Reading it would take tens of seconds, so a 2 s
    // bound tells a refusal from metadata from a read with room for any machine load.
    file.set_len(64 << 30).unwrap();
    let started = Instant::now();
    let err = read_bytes(&path, InputKind::OutputSchema).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        err.to_string(),
        "larger than the 1 MiB cap (68719476736 bytes)"
    );
    // Exactly at the cap is fine.
    file.set_len(InputKind::OutputSchema.max_bytes()).unwrap();
    assert_eq!(
        read_bytes(&path, InputKind::OutputSchema).unwrap().len() as u64,
        InputKind::OutputSchema.max_bytes()
    );
}

#[test]
fn a_file_that_says_it_is_empty_is_still_read_no_further_than_the_cap() {
    // procfs files report a size of 0 and can be longer.
    let err = read_bytes(Path::new("/proc/self/maps"), InputKind::AuthFile);
    match err {
        Ok(bytes) => assert!(bytes.len() as u64 <= InputKind::AuthFile.max_bytes()),
        Err(err) => assert_eq!(err.to_string(), "larger than the 64 KiB cap"),
    }
    let (bytes, size) = read_prefix(Path::new("/proc/self/maps"), 10).unwrap();
    assert_eq!(bytes.len(), 10);
    assert!(size >= 10);
}

#[test]
fn a_prefix_is_bounded_and_reports_the_whole_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("AGENTS.md");
    std::fs::write(&path, "0123456789").unwrap();
    assert_eq!(read_prefix(&path, 4).unwrap(), (b"0123".to_vec(), 10u64));
    assert_eq!(
        read_prefix(&path, 40).unwrap(),
        (b"0123456789".to_vec(), 10)
    );
}

#[test]
fn text_must_be_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p");
    std::fs::write(&path, b"ok\xffno").unwrap();
    assert_eq!(
        read_text(&path, InputKind::SystemPrompt)
            .unwrap_err()
            .to_string(),
        "not UTF-8 text (invalid byte at offset 2)"
    );
}

#[test]
fn sizes_read_exactly() {
    assert_eq!(human_bytes(InputKind::ContextFile.max_bytes()), "32 KiB");
    assert_eq!(human_bytes(InputKind::Session.max_bytes()), "256 MiB");
    assert_eq!(human_bytes(1000), "1000 bytes");
}
