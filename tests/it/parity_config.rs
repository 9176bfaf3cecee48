//! agentic-pi's configuration behaviour, case by case through the binary: Pi's own auth store
//! and retry settings (`~/.pi/agent/auth.json`, `settings.json`), the retry schedule, empty
//! values refused, and `--continue` in a shared session directory. Each test is named after
//! the agentic-pi (or Pi) test it mirrors.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::mock_llm::*;
use crate::support::run_worker;

/// Writes `<dir>/<name>` with `text` and `mode`, creating the directories.
fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// Pi's agent directory when `HOME` is `home`.
fn agent_dir(home: &Path) -> PathBuf {
    home.join(".pi").join("agent")
}

const REAL_KEY: &str = "sk-real-key-from-pi-auth-store";
const BOGUS_KEY: &str = "sk-bogus-must-not-be-used";

/// run-auth-file.integration.test.ts, "reads the model key from --auth-file, not the
/// environment", for the store agentic-pi reads without the flag: `<agent dir>/auth.json`.
#[test]
fn run_auth_file_reads_the_model_key_from_pis_auth_json_not_the_environment() {
    let home = tempfile::tempdir().unwrap();
    write(
        &agent_dir(home.path()),
        "auth.json",
        &format!(r#"{{"openai":{{"type":"api_key","key":"{REAL_KEY}"}}}}"#),
        0o600,
    );
    let mock = MockLlm::start(vec![answer("authfile works")]);
    let run = run_worker(
        home.path(),
        &["--model", "openai/gpt-5.4-nano"],
        &format!("say {REAL_KEY}"),
        &[
            ("OPENAI_BASE_URL", &mock.url),
            ("OPENAI_API_KEY", BOGUS_KEY),
        ],
    );
    run.assert_code(0);
    assert_eq!(
        mock.requests()[0].headers["authorization"],
        format!("Bearer {REAL_KEY}")
    );
    assert!(!run.stdout.contains(REAL_KEY), "the key is redacted");
    assert!(run.stdout.contains("[REDACTED]"));
}

/// The same, with the store moved by `PI_CODING_AGENT_DIR` (Pi's getAgentDir).
#[test]
fn run_auth_file_pi_coding_agent_dir_moves_the_store() {
    let home = tempfile::tempdir().unwrap();
    let moved = home.path().join("elsewhere");
    write(
        &moved,
        "auth.json",
        &format!(r#"{{"openai":{{"type":"api_key","key":"{REAL_KEY}"}}}}"#),
        0o600,
    );
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run_worker(
        home.path(),
        &["--model", "openai/gpt-5.4-nano"],
        "q",
        &[
            ("OPENAI_BASE_URL", &mock.url),
            ("OPENAI_API_KEY", BOGUS_KEY),
            ("PI_CODING_AGENT_DIR", moved.to_str().unwrap()),
        ],
    );
    run.assert_code(0);
    assert_eq!(
        mock.requests()[0].headers["authorization"],
        format!("Bearer {REAL_KEY}")
    );
}

/// `--auth-file` still wins over Pi's store, and a store others can read is refused like the
/// flag's file (exit 2, nothing on stdout, no request); one that is not JSON is skipped with a
/// warning, as Pi skips it.
#[test]
fn run_auth_file_the_flag_wins_and_an_exposed_store_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let store = write(
        &agent_dir(home.path()),
        "auth.json",
        &format!(r#"{{"openai":{{"type":"api_key","key":"{REAL_KEY}"}}}}"#),
        0o600,
    );
    let flag_file = write(
        home.path(),
        "flag-auth.json",
        r#"{"openai":{"type":"api_key","key":"sk-from-the-flag-file"}}"#,
        0o600,
    );
    let mock = MockLlm::start(vec![answer("ok"), answer("ok")]);
    let env = [
        ("OPENAI_BASE_URL", mock.url.as_str()),
        ("OPENAI_API_KEY", BOGUS_KEY),
    ];
    let run = run_worker(
        home.path(),
        &[
            "--model",
            "openai/gpt-5.4-nano",
            "--auth-file",
            flag_file.to_str().unwrap(),
        ],
        "q",
        &env,
    );
    run.assert_code(0);
    assert_eq!(
        mock.requests()[0].headers["authorization"],
        "Bearer sk-from-the-flag-file"
    );

    mock.clear_requests();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = run_worker(home.path(), &["--model", "openai/gpt-5.4-nano"], "q", &env);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    assert_eq!(
        run.stderr,
        format!(
            "worker: Pi's auth file {}: readable by others (mode 644); run chmod 600 on it\n",
            store.display()
        )
    );
    assert!(mock.requests().is_empty());

    write(&agent_dir(home.path()), "auth.json", "{not json", 0o600);
    let run = run_worker(home.path(), &["--model", "openai/gpt-5.4-nano"], "q", &env);
    run.assert_code(0);
    assert!(
        run.stderr.contains(&format!(
            "worker: Pi's auth file {}: not a JSON object of providers:",
            store.display()
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        mock.requests()[0].headers["authorization"],
        format!("Bearer {BOGUS_KEY}")
    );
}

/// A run against a server that answers 503 `failures` times, then "done"; `settings` is
/// Pi's settings.json (none when `None`).
fn overloaded(failures: usize, settings: Option<&str>, flags: &[&str]) -> crate::support::Run {
    let home = tempfile::tempdir().unwrap();
    if let Some(text) = settings {
        write(&agent_dir(home.path()), "settings.json", text, 0o600);
    }
    let mut replies: Vec<Reply> = (0..failures).map(|_| status(503, "overloaded")).collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let mut args = vec!["--model", "dynamo/m"];
    args.extend_from_slice(flags);
    run_worker(home.path(), &args, "q", &[("DYNAMO_BASE_URL", &mock.url)])
}

/// The waits of a run's retries, in milliseconds, and the count each announced.
fn retry_waits(run: &crate::support::Run) -> Vec<(u64, u64)> {
    run.all("auto_retry_start")
        .iter()
        .map(|e| {
            (
                e["delayMs"].as_u64().unwrap(),
                e["maxAttempts"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// retry.test.ts, "default schedule rides out a ~60s window (final wait >= 60s)": no flag, no
/// file: 5 retries from 4 s (the run is ended by --timeout during the first wait; the unit
/// test `retry_test_the_default_schedule_rides_out_a_60s_window` checks the last wait).
#[test]
fn retry_test_no_flags_no_file_gives_agentic_pis_defaults() {
    let run = overloaded(1, None, &["--timeout", "1s"]);
    run.assert_code(3);
    let waits = retry_waits(&run);
    assert_eq!(waits.len(), 1, "{}", run.stdout);
    let (delay, max) = waits[0];
    assert_eq!(max, 5);
    assert!((4000..5000).contains(&delay), "{delay}");
}

/// retry.test.ts, "operator settings.json wins over our defaults".
#[test]
fn retry_test_operator_settings_json_wins_over_the_defaults() {
    let run = overloaded(
        1,
        Some(r#"{"retry":{"maxRetries":2,"baseDelayMs":10}}"#),
        &[],
    );
    run.assert_code(0);
    let waits = retry_waits(&run);
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].1, 2);
    assert!((10..13).contains(&waits[0].0), "{waits:?}");
}

/// retry.test.ts, "CLI flags win over both file and defaults" and "flags and file mix
/// per-field" (`--retry-base-delay-ms` is agentic-pi's spelling).
#[test]
fn retry_test_cli_flags_win_and_mix_per_field() {
    let file = r#"{"retry":{"maxRetries":10,"baseDelayMs":30000}}"#;
    let run = overloaded(
        2,
        Some(file),
        &["--max-retries", "1", "--retry-base-delay-ms", "20"],
    );
    run.assert_code(1);
    let waits = retry_waits(&run);
    assert_eq!(
        waits.len(),
        1,
        "one retry, then the second 503 ends the run"
    );
    assert_eq!(waits[0].1, 1);
    assert!((20..25).contains(&waits[0].0), "{waits:?}");

    let run = overloaded(
        1,
        Some(r#"{"retry":{"baseDelayMs":15}}"#),
        &["--max-retries", "7"],
    );
    run.assert_code(0);
    let waits = retry_waits(&run);
    assert_eq!(waits[0].1, 7, "the count from the flag");
    assert!(
        (15..19).contains(&waits[0].0),
        "the delay from the file: {waits:?}"
    );
}

/// retry.test.ts, "maxRetries: 0 (disable) is respected, not treated as unset".
#[test]
fn retry_test_max_retries_zero_is_respected() {
    let run = overloaded(1, None, &["--max-retries", "0"]);
    run.assert_code(1);
    assert!(retry_waits(&run).is_empty());
}

/// retry.test.ts, "preserves operator's enabled:false": Pi does not retry at all then; a
/// flag asking for retries is told why it is not used.
#[test]
fn retry_test_preserves_operators_enabled_false() {
    let off = r#"{"retry":{"enabled":false,"provider":{"maxRetries":0,"maxRetryDelayMs":60000}}}"#;
    let run = overloaded(1, Some(off), &[]);
    run.assert_code(1);
    assert!(retry_waits(&run).is_empty(), "{}", run.stdout);
    assert!(
        run.stderr
            .ends_with("failed: HTTP 503 Service Unavailable: overloaded\n"),
        "failed at once, not after retries: {}",
        run.stderr
    );

    let run = overloaded(1, Some(off), &["--max-retries", "3"]);
    run.assert_code(1);
    assert!(retry_waits(&run).is_empty());
    assert!(run.stderr.contains(
        "worker: --max-retries 3 is not used: Pi's settings.json says retry.enabled false, so no model request is retried\n"
    ), "{}", run.stderr);
}

/// A `retry` value that cannot mean anything is a usage error naming the file and the field.
#[test]
fn retry_test_a_malformed_retry_block_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let path = write(
        &agent_dir(home.path()),
        "settings.json",
        r#"{"retry":{"maxRetries":"lots"}}"#,
        0o600,
    );
    let run = run_worker(home.path(), &["--model", "dynamo/m"], "q", &[]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    assert_eq!(
        run.stderr,
        format!(
            "worker: {}: retry.maxRetries must be a non-negative integer\n",
            path.display()
        )
    );
}

/// Runs `args` and expects the usage error `line`: exit 2, nothing on stdout, no request.
fn refused(args: &[&str], line: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("never")]);
    let run = run_worker(dir.path(), args, "q", &[("DYNAMO_BASE_URL", &mock.url)]);
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr, format!("worker: {line}\n"));
    assert!(mock.requests().is_empty());
    assert_eq!(mock.models_requests(), 0);
}

/// args.test.ts, "--sandbox-image rejects empty value".
#[test]
fn args_test_sandbox_image_rejects_empty_value() {
    refused(
        &["--model", "dynamo/m", "--sandbox-image", ""],
        "invalid value '' for --sandbox-image: must not be empty",
    );
}

/// args.test.ts, "--otel-service-name rejects empty value" (blank included).
#[test]
fn args_test_otel_service_name_rejects_empty_value() {
    for blank in ["", "  "] {
        refused(
            &["--model", "dynamo/m", "--otel-service-name", blank],
            &format!("invalid value '{blank}' for --otel-service-name: must not be empty"),
        );
    }
}

/// models.test.ts, "rejects empty provider or id".
#[test]
fn models_test_rejects_empty_provider_or_id() {
    for spec in ["/foo", "openai/", "dynamo/", "/"] {
        refused(
            &["--model", spec],
            &format!("--model must be 'provider/id', got '{spec}'"),
        );
    }
}

/// Pi's SessionManager.continueRecent with an explicit session dir: the newest session whose
/// header names this cwd, not a newer one of another directory sharing the folder.
#[test]
fn session_manager_continue_recent_with_a_session_dir_filters_by_cwd() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions");
    let sessions = sessions.to_str().unwrap();
    let (alpha, beta) = (root.path().join("alpha"), root.path().join("beta"));
    std::fs::create_dir_all(&alpha).unwrap();
    std::fs::create_dir_all(&beta).unwrap();
    let mock = MockLlm::start(vec![answer("a1"), answer("b1"), answer("a2")]);
    let run_in = |cwd: &Path, extra: &[&str], prompt: &str| {
        let mut args = vec!["--model", "dynamo/m", "--session-dir", sessions];
        args.extend_from_slice(extra);
        run_worker(cwd, &args, prompt, &[("DYNAMO_BASE_URL", &mock.url)])
    };
    let first = run_in(&alpha, &[], "alpha task");
    first.assert_code(0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let other = run_in(&beta, &[], "beta task");
    other.assert_code(0);
    assert_ne!(first.events[0]["id"], other.events[0]["id"]);

    let again = run_in(&alpha, &["--continue"], "go on");
    again.assert_code(0);
    assert_eq!(
        again.events[0]["id"], first.events[0]["id"],
        "alpha's own session"
    );
    let last = mock.requests().pop().unwrap();
    let said: Vec<&str> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.iter().any(|c| c.contains("alpha task")), "{said:?}");
    assert!(!said.iter().any(|c| c.contains("beta task")), "{said:?}");

    let empty = root.path().join("gamma");
    std::fs::create_dir_all(&empty).unwrap();
    let none = run_in(&empty, &["--continue"], "q");
    none.assert_code(2);
    assert_eq!(
        none.stderr,
        format!(
            "worker: --continue: no session of {} to continue in {sessions}\n",
            empty.canonicalize().unwrap().display()
        )
    );
}

/// A Dynamo-like server: `GET /v1/models` lists `small-model` with a 1000-token window (as vLLM
/// reports `max_model_len`); every chat request is answered "ok".
fn small_window_server() -> String {
    use axum::routing::{get, post};
    let listing = || async {
        axum::Json(serde_json::json!({"object": "list", "data": [
            {"id": "other-model", "max_model_len": 999_999},
            {"id": "small-model", "max_model_len": 1000},
        ]}))
    };
    let chat = || async {
        let chunk = serde_json::json!({"id": "c", "model": "small-model", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
        (
            [("content-type", "text/event-stream")],
            format!("data: {chunk}\n\ndata: [DONE]\n\n"),
        )
    };
    let app = axum::Router::new()
        .route("/v1/models", get(listing))
        .route("/v1/chat/completions", post(chat));
    format!("http://{}/v1", serve(app))
}

/// pi-dynamo-provider reads each model's window from the listing; worker did so only for
/// `dynamo/default`. A prompt of ~2300 tokens does not fit the 1000 the server lists for the
/// model the run names, so the run says so instead of sending it.
#[test]
fn models_test_the_listed_context_window_is_used_for_an_explicit_dynamo_model() {
    let dir = tempfile::tempdir().unwrap();
    let url = small_window_server();
    let prompt = "word ".repeat(1600);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/small-model"],
        &prompt,
        &[("DYNAMO_BASE_URL", &url)],
    );
    run.assert_code(1);
    let error = &run.first("fatal_error")["error"];
    assert_eq!(error["kind"], "context_overflow");
    // Within other-model's 999999, and with no window at all the run would send it.
    assert_eq!(
        error["message"],
        "about 2270 tokens, and nothing before the newest turn to summarize"
    );

    // --context-window still wins over the listing.
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/small-model",
            "--context-window",
            "100000",
        ],
        &prompt,
        &[("DYNAMO_BASE_URL", &url)],
    );
    run.assert_code(0);
}
