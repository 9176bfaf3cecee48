use super::super::testing::Harness;
use super::*;
use std::time::Instant;

#[tokio::test]
async fn runs_in_the_cwd_and_merges_streams_in_order() {
    let h = Harness::new();
    h.write("marker", "");
    let result = h
        .run(
            &BashTool,
            json!({"command": "ls; echo out; echo err >&2; echo out2"}),
        )
        .await
        .unwrap();
    assert_eq!(result.text(), "marker\nout\nerr\nout2");
    assert_eq!(result.details.unwrap()["exitCode"], 0);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_the_code() {
    let h = Harness::new();
    let err = h
        .run(&BashTool, json!({"command": "echo no match; exit 1"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "no match\n\nCommand exited with code 1");
    assert_eq!(err.details.unwrap()["exitCode"], 1);
}

#[tokio::test]
async fn a_missing_command_reports_127() {
    let h = Harness::new();
    let err = h
        .run(
            &BashTool,
            json!({"command": "definitely-not-a-command-xyz"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("definitely-not-a-command-xyz: command not found"),
        "{}",
        err.message
    );
    assert!(err.message.ends_with("\n\nCommand exited with code 127"));
}

#[tokio::test]
async fn empty_output_says_so() {
    let h = Harness::new();
    assert_eq!(
        h.ok(&BashTool, json!({"command": "true"})).await,
        "(no output)"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group_promptly() {
    let h = Harness::new();
    let started = Instant::now();
    let err = h
        .run(
            &BashTool,
            json!({"command": "echo started; sleep 30 & sleep 30", "timeout": 0.3}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "started\n\nCommand timed out after 0.3 seconds"
    );
    let details = err.details.unwrap();
    assert_eq!(details["timedOut"], true);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_background_job_holding_the_pipe_cannot_hang_the_call() {
    let h = Harness::new();
    let started = Instant::now();
    let text = h
        .ok(&BashTool, json!({"command": "sleep 20 & echo done"}))
        .await;
    assert_eq!(text, "done");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    h.ctx.leftovers.clean_up();
}

#[tokio::test]
async fn abort_stops_the_command() {
    let h = Harness::new();
    let cancel = h.ctx.cancel().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let err = h
        .run(&BashTool, json!({"command": "sleep 30"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "(no output)\n\nCommand aborted");
}

#[tokio::test]
async fn the_model_cannot_exceed_the_configured_maximum() {
    let mut h = Harness::new();
    h.ctx.bash.max_timeout = Duration::from_millis(200);
    let err = h
        .run(&BashTool, json!({"command": "sleep 5", "timeout": 1000}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "(no output)\n\nCommand timed out after 0.2 seconds"
    );
}

#[tokio::test]
async fn progress_arrives_as_deltas() {
    let h = Harness::new();
    h.ok(
        &BashTool,
        json!({"command": "echo one; sleep 0.3; echo two"}),
    )
    .await;
    let updates = h.updates.lock().unwrap();
    let joined: String = updates
        .iter()
        .map(crate::events::ToolResult::text)
        .collect();
    assert_eq!(joined, "one\ntwo\n");
    assert!(updates.len() >= 2, "{}", updates.len());
}

#[tokio::test]
async fn two_hundred_megabytes_of_output_stay_bounded() {
    let h = Harness::new();
    let result = h
        // 2,097,152 lines of 100 bytes; fold leaves the last one unterminated.
        .run(
            &BashTool,
            json!({"command": "head -c 209715200 /dev/zero | tr '\\0' 'a' | fold -w 100"}),
        )
        .await
        .unwrap();
    let text = result.text();
    let details = result.details.unwrap();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    let omitted = details["fullOutputOmittedBytes"].as_u64().unwrap();
    assert!(text.starts_with(&format!("{}\n", "a".repeat(100))),);
    assert!(
            text.contains(&format!(
                "[Showing lines 2096647-2097152 of 2097152. Output saved to {path}: the first 16.0MB and the last "
            )),
            "{}",
            &text[text.len() - 250..]
        );
    // The file is bounded: 16 MiB of head, a note, and the tail the run still held.
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 16 * 1024 * 1024 + 300 * 1024, "{size}");
    assert_eq!(
        size + omitted,
        209_715_200
            + 2_097_151
            + format!("\n[... {omitted} bytes of output not kept ...]\n").len() as u64
    );
    std::fs::remove_file(path).unwrap();
}
