use super::*;

#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = std::time::Instant::now();
    let err = read_regular(&fifo, "pipe", "read").unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(
        err.message,
        "pipe is a FIFO, not a regular file; read only works on regular files. Use bash for pipes and devices."
    );
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    assert_eq!(read_regular(&file, "f", "read").unwrap(), b"x");
    assert_eq!(
        read_regular(&dir.path().join("nope"), "nope", "read")
            .unwrap_err()
            .message,
        "File not found: nope"
    );
}
