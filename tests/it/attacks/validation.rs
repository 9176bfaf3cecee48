//! Input that must be refused, and outputs that must not fail silently.
//!
//! Every number and URL a run takes from a flag, a variable or a `--providers` entry is checked
//! before anything starts: a bad one is exit 2, one stderr line naming where it came from,
//! nothing on stdout, no session file, no request sent. `--max-cost NaN` used to be taken (and
//! never stopped a run), a huge `--timeout` panicked, and an `ftp://` provider was retried
//! three times before failing.
//!
//! Every output file the run was asked to write — `--trace-file`, `--record`,
//! `--output-last-message`, the session file — that fails (here `/dev/full`, or a file-size
//! limit for the session file, whose name worker picks) is reported once as `output_error`
//! right before `usage_snapshot` and once on stderr, and the run exits 4 even though the model
//! finished.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker, worker_command};

/// A usage error: exit 2, exactly `line` on stderr, nothing on stdout, quickly, and nothing in
/// the session directory.
fn assert_refused(flags: &[&str], env: &[(&str, &str)], line: &str) {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut args = vec!["--session-dir", sessions.to_str().unwrap()];
    args.extend_from_slice(flags);
    if !flags.contains(&"--model") {
        args.extend_from_slice(&["--model", "dynamo/m"]);
    }
    let started = Instant::now();
    let run = run_worker(dir.path(), &args, "q", env);
    let elapsed = started.elapsed();
    assert_eq!(
        (run.code, run.stderr.as_str(), run.stdout.as_str()),
        (2, format!("worker: {line}\n").as_str(), ""),
        "{flags:?} {env:?}"
    );
    assert!(elapsed < Duration::from_secs(2), "{flags:?}: {elapsed:?}");
    assert!(
        !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none(),
        "{flags:?}: a session file was left behind"
    );
}

#[test]
fn a_cost_budget_that_is_not_a_positive_number_is_refused() {
    for value in ["NaN", "nan", "inf", "-inf", "1e309", "-1", "0"] {
        let shown = match value {
            "nan" => "NaN",
            "1e309" => "inf",
            other => other,
        };
        let line = format!("--max-cost must be a positive number of US dollars, got {shown}");
        assert_refused(&["--max-cost", value], &[], &line);
        assert_refused(&[], &[("WORKER_MAX_COST", value)], &line);
    }
}

#[test]
fn a_count_of_zero_and_a_number_that_does_not_parse_are_refused() {
    for flag in [
        "--max-turns",
        "--max-tool-calls",
        "--max-total-tokens",
        "--max-tokens",
        "--context-window",
    ] {
        assert_refused(&[flag, "0"], &[], &format!("{flag} must be at least 1"));
    }
    assert_refused(
        &["--max-tool-calls=-3"],
        &[],
        "invalid value '-3' for --max-tool-calls: -3 is not in 0..=4294967295",
    );
    assert_refused(
        &["--max-retries", "1e3"],
        &[],
        "invalid value '1e3' for --max-retries: invalid digit found in string",
    );
    assert_refused(
        &["--price", "input=NaN,output=1"],
        &[],
        "invalid value 'input=NaN,output=1' for --price: input: expected a non-negative number, got 'NaN'",
    );
    assert_refused(
        &[],
        &[("WORKER_CONTEXT_WINDOW", "lots")],
        "invalid value 'lots' for --context-window: invalid digit found in string",
    );
}

#[test]
fn a_duration_too_long_for_the_clock_is_refused_not_a_crash() {
    for flag in ["--timeout", "--idle-timeout", "--bash-timeout"] {
        assert_refused(
            &[flag, "10000000000000000000"],
            &[],
            &format!(
                "invalid value '10000000000000000000' for {flag}: duration '10000000000000000000' is longer than 36500 days, the longest allowed"
            ),
        );
    }
}

#[test]
fn a_price_table_with_a_negative_price_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"models": {"dynamo/m": {"input": 1, "output": -2}}}"#,
    )
    .unwrap();
    assert_refused(
        &["--prices-file", prices.to_str().unwrap()],
        &[],
        &format!(
            "--prices-file {}: models.dynamo/m.output: expected a non-negative number, got -2",
            prices.display()
        ),
    );
}

/// The scheme refusal for `source` and `url`.
fn unsupported(source: &str, url: &str, scheme: &str) -> String {
    format!("{source} '{url}': unsupported scheme '{scheme}'; expected an http:// or https:// URL")
}

fn no_scheme(source: &str, url: &str) -> String {
    format!("{source} '{url}' has no scheme; expected an http:// or https:// URL")
}

#[test]
fn a_provider_base_url_that_is_not_http_is_refused_before_any_request() {
    // A listener that would see the request if one were made.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for (url, line) in [
        (
            format!("ftp://127.0.0.1:{port}/v1"),
            unsupported(
                "--providers.acme.baseUrl",
                &format!("ftp://127.0.0.1:{port}/v1"),
                "ftp",
            ),
        ),
        (
            "file:///etc/passwd".to_string(),
            unsupported("--providers.acme.baseUrl", "file:///etc/passwd", "file"),
        ),
        (
            format!("127.0.0.1:{port}/v1"),
            no_scheme("--providers.acme.baseUrl", &format!("127.0.0.1:{port}/v1")),
        ),
    ] {
        let providers = json!({"acme": {"baseUrl": url, "api": "openai-completions"}}).to_string();
        assert_refused(
            &["--model", "acme/m", "--providers", &providers],
            &[],
            &line,
        );
        // The same entry from the variable, named as such.
        assert_refused(
            &["--model", "acme/m"],
            &[("AGENTIC_PI_PROVIDERS", &providers)],
            &line.replace("--providers.", "AGENTIC_PI_PROVIDERS."),
        );
    }
    // Non-blocking: an empty backlog is WouldBlock; anything else (a connection) is a request.
    match listener.accept() {
        Err(err) => assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}"),
        Ok((_, from)) => panic!("a request was made from {from}"),
    }
}

#[test]
fn every_url_variable_and_flag_is_checked_where_it_is_read() {
    let ftp = "ftp://127.0.0.1:9/v1";
    for var in ["DYNAMO_BASE_URL", "OPENAI_BASE_URL"] {
        assert_refused(&[], &[(var, ftp)], &unsupported(var, ftp, "ftp"));
    }
    assert_refused(
        &["--model", "anthropic/claude"],
        &[("ANTHROPIC_BASE_URL", "api.anthropic.com")],
        &no_scheme("ANTHROPIC_BASE_URL", "api.anthropic.com"),
    );
    let github = [("GITHUB_TOKEN", "ghp_validation")];
    assert_refused(
        &["--profile", "read"],
        &[github[0], ("GITHUB_API_URL", "file:///srv/api")],
        &unsupported("GITHUB_API_URL", "file:///srv/api", "file"),
    );
    assert_refused(
        &["--profile", "read"],
        &[github[0], ("GITHUB_SERVER_URL", "ssh://git@ghe.example")],
        "GITHUB_SERVER_URL 'ssh://git@ghe.example': unsupported scheme 'ssh'; expected a URL starting with https://, http://, file://",
    );
    for (key, var) in [
        ("TAVILY_API_KEY", "TAVILY_BASE_URL"),
        ("EXA_API_KEY", "EXA_BASE_URL"),
        ("BRAVE_SEARCH_API_KEY", "BRAVE_SEARCH_BASE_URL"),
    ] {
        assert_refused(
            &[],
            &[(key, "k"), (var, "gopher://search.example")],
            &unsupported(var, "gopher://search.example", "gopher"),
        );
    }
    assert_refused(
        &["--otel", "--otel-endpoint", "grpc://127.0.0.1:4317"],
        &[],
        &unsupported("--otel-endpoint", "grpc://127.0.0.1:4317", "grpc"),
    );
    assert_refused(
        &["--otel"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
        &no_scheme("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
    );
    // A password in a refused URL is not repeated on stderr.
    assert_refused(
        &[],
        &[("DYNAMO_BASE_URL", "ftp://user:hunter2@127.0.0.1/v1")],
        &unsupported("DYNAMO_BASE_URL", "ftp://user:***@127.0.0.1/v1", "ftp"),
    );
}

#[test]
fn a_variable_nobody_reads_is_not_checked() {
    // Without --profile there are no GitHub tools; without --otel no export; with another
    // provider's model DYNAMO_BASE_URL is not used.
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run_worker(
        dir.path(),
        &["--model", "openai/gpt", "--no-session"],
        "q",
        &[
            ("OPENAI_BASE_URL", &mock.url),
            ("OPENAI_API_KEY", "sk-x"),
            ("DYNAMO_BASE_URL", "ftp://nowhere"),
            ("GITHUB_API_URL", "ftp://nowhere"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "nowhere"),
        ],
    );
    run.assert_code(0);
}

/// The `output_error` lines, and what they say.
fn output_errors(run: &Run) -> Vec<(String, String, String)> {
    run.all("output_error")
        .iter()
        .map(|e| {
            (
                e["output"].as_str().unwrap().to_string(),
                e["path"].as_str().unwrap().to_string(),
                e["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Exit 4, each failed output reported once as an event right before `usage_snapshot` and
/// once on stderr, the run itself complete.
fn assert_incomplete(run: &Run, expected: &[(&str, &str, &str)]) {
    run.assert_code(4);
    let reported = output_errors(run);
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(output, path, message)| (output.to_string(), path.to_string(), message.to_string()))
        .collect();
    assert_eq!(reported, expected, "{}", run.stdout);
    let types = run.outline();
    let tail: Vec<&str> = types[types.len() - expected.len() - 1..]
        .iter()
        .map(String::as_str)
        .collect();
    let mut wanted = vec!["output_error"; expected.len()];
    wanted.push("usage_snapshot");
    assert_eq!(tail, wanted, "{types:?}");
    for (_, _, message) in &expected {
        let line = format!("worker: {message}\n");
        assert_eq!(
            run.stderr.matches(&line).count(),
            1,
            "once on stderr: {}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

const ENOSPC: &str = "No space left on device (os error 28)";

#[test]
fn an_output_file_that_cannot_be_written_is_reported_and_exits_4() {
    let full = "/dev/full";
    for (flag, output, content) in [
        ("--trace-file", "trace_file", "the trace"),
        ("--record", "record", "the recording"),
        (
            "--output-last-message",
            "output_last_message",
            "the final answer",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![call("c1", "ls", "{}"), answer("done")]);
        let run = run_worker(
            dir.path(),
            &["--model", "dynamo/m", "--no-session", flag, full],
            "q",
            &[("DYNAMO_BASE_URL", &mock.url)],
        );
        // The run itself finished; only its output is incomplete.
        assert_eq!(run.first("agent_end")["stopReason"], "stop", "{flag}");
        assert_incomplete(
            &run,
            &[(
                output,
                full,
                &format!("{flag} {full}: write failed: {ENOSPC}; {content} is incomplete"),
            )],
        );
    }
}

#[test]
fn every_failed_output_is_reported_and_a_limit_becomes_4_too() {
    let dir = tempfile::tempdir().unwrap();
    // Text with every call, so there is a last message to write.
    let mock = MockLlm::start_cycling(vec![Reply::Sse(vec![
        role(),
        text("working"),
        tool_call(0, "c", "ls", "{}"),
        finish("tool_calls"),
        done(),
    ])]);
    let full = "/dev/full";
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--no-session",
            "--max-tool-calls",
            "2",
            "--trace-file",
            full,
            "--record",
            full,
            "--output-last-message",
            full,
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.first("limit_reached")["limit"], "max_tool_calls");
    assert_incomplete(
        &run,
        &[
            (
                "trace_file",
                full,
                &format!("--trace-file {full}: write failed: {ENOSPC}; the trace is incomplete"),
            ),
            (
                "record",
                full,
                &format!("--record {full}: write failed: {ENOSPC}; the recording is incomplete"),
            ),
            (
                "output_last_message",
                full,
                &format!(
                    "--output-last-message {full}: write failed: {ENOSPC}; the final answer is incomplete"
                ),
            ),
        ],
    );
    // The limit's own line still comes last on stderr.
    assert!(
        run.stderr
            .ends_with("worker: limit reached: max tool calls 2\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_session_file_that_stops_taking_writes_is_reported_and_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mock = MockLlm::start(vec![answer("done")]);
    // No file may grow past 2 KiB (writes past it fail with EFBIG, SIGXFSZ ignored): the
    // session's header fits, the long prompt's message does not.
    let mut cmd = worker_command(dir.path());
    cmd.args(["run", "--model", "dynamo/m", "--session-dir"])
        .arg(&sessions)
        .env("DYNAMO_BASE_URL", &mock.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs before exec.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::resource::{Resource, setrlimit};
            use nix::sys::signal::{SigHandler, Signal, signal};
            setrlimit(Resource::RLIMIT_FSIZE, 2048, 2048)?;
            signal(Signal::SIGXFSZ, SigHandler::SigIgn)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let prompt = "a long task ".repeat(400);
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
    }
    let run = Run::from_output(child.wait_with_output().unwrap());
    let file = session_file(&sessions);
    let path = file.display().to_string();
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
    assert_incomplete(
        &run,
        &[(
            "session",
            &path,
            &format!(
                "session file {path}: write failed: File too large (os error 27); the session is incomplete"
            ),
        )],
    );
    // Nothing was written after the failure: the file holds no assistant message.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\"assistant\""), "{text}");
    assert!(text.len() <= 2048);
}

/// The one session file in `dir` (session files sit in a per-cwd folder below it).
fn session_file(dir: &Path) -> std::path::PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

#[test]
fn a_successful_run_with_every_output_writable_still_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("done")]);
    let (trace, record, last) = (
        dir.path().join("trace.jsonl"),
        dir.path().join("record.jsonl"),
        dir.path().join("last.txt"),
    );
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--trace-file",
            trace.to_str().unwrap(),
            "--record",
            record.to_str().unwrap(),
            "--output-last-message",
            last.to_str().unwrap(),
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert!(run.all("output_error").is_empty());
    assert_eq!(std::fs::read_to_string(&last).unwrap(), "done");
    let last_line: Value = run.last().clone();
    assert_eq!(last_line["type"], "usage_snapshot");
}
