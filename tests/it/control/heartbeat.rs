//! `--heartbeat`: a line in a silence, none in a busy stream.

use super::*;

#[test]
fn a_quiet_run_gets_heartbeats_only_when_asked() {
    let script = || {
        MockLlm::start(vec![
            call("c1", "bash", &bash("sleep 2; echo slept")),
            answer("ok"),
        ])
    };
    let dir = tempfile::tempdir().unwrap();
    let mock = script();
    let run = run_dynamo(dir.path(), &mock.url, &["--heartbeat", "300ms"], "task");
    run.assert_code(0);
    assert_complete(&run);
    let beats = run.all("heartbeat");
    assert!(!beats.is_empty(), "{}", run.stdout);
    for beat in &beats {
        assert!(beat["quietMs"].as_u64().unwrap() >= 300, "{beat}");
        assert!(
            beat["elapsedMs"].as_u64().unwrap() >= beat["quietMs"].as_u64().unwrap(),
            "{beat}"
        );
    }
    // They came while the command ran, the quiet part of the run.
    let types = run.types();
    let start = types
        .iter()
        .position(|t| t == "tool_execution_start")
        .unwrap();
    let end = types
        .iter()
        .position(|t| t == "tool_execution_end")
        .unwrap();
    let inside = types[start..end]
        .iter()
        .filter(|t| *t == "heartbeat")
        .count();
    assert!(inside >= 1, "{types:?}");
    // Nothing follows the closing line.
    assert_eq!(run.last()["type"], "usage_snapshot");

    let mock = script();
    let run = run_dynamo(dir.path(), &mock.url, &[], "task");
    run.assert_code(0);
    assert!(run.all("heartbeat").is_empty(), "{}", run.stdout);
}

#[test]
fn a_busy_stream_gets_no_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    // A token every 100 ms for about 3 s: never a second of silence.
    let mut frames = vec![role()];
    for n in 0..30 {
        frames.push(text(&format!("{n} ")));
        frames.push(Frame::Delay(Duration::from_millis(100)));
    }
    frames.extend([finish("stop"), usage(10, 5, 0), done()]);
    let mock = MockLlm::start(vec![Reply::Sse(frames)]);
    let run = run_dynamo(dir.path(), &mock.url, &["--heartbeat", "1s"], "task");
    run.assert_code(0);
    assert!(run.all("heartbeat").is_empty(), "{}", run.stdout);
}
