//! Promises of the README that no other test pinned, each through the binary and each with a
//! test that fails when the promise breaks: the sandbox's hidden paths refuse writes as well as
//! reads; `--max-cost` stops a run; compaction cuts old tool results for the summarizer; the
//! `--output-last-message` file and the ZeroMQ tool events are redacted; a long `agent_end` is
//! one whole line, redacted throughout; a sandbox that cannot
//! be set up never runs the command; the sandbox's file-size cap; `--auth-file` and the App
//! key are hidden from commands; read-only calls of one message run concurrently.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};

use crate::dynamo_bridge::{Pull, decode};
use crate::sandbox::{bash, results, sandboxed, scene};
use crate::support::mock_llm::*;
use crate::support::run_worker;

#[test]
fn a_hidden_path_inside_the_working_directory_cannot_be_written_by_any_tool() {
    let scene = scene();
    let hidden = scene.repo.join("private.env");
    std::fs::write(&hidden, "TOKEN=HIDE-ME\n").unwrap();
    let mock = MockLlm::start(vec![
        call(
            "w1",
            "write",
            &json!({"path": "private.env", "content": "overwritten"}).to_string(),
        ),
        call(
            "e1",
            "edit",
            &json!({"path": "private.env", "edits": [{"oldText": "HIDE-ME", "newText": "CHANGED"}]})
                .to_string(),
        ),
        // Under the cover, a write lands in /dev/null and the cover cannot be removed.
        bash(
            "b1",
            "echo overwritten > private.env; rm -f private.env 2>&1; mv private.env moved 2>&1; echo end",
        ),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--sandbox-hide", hidden.to_str().unwrap()],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    for (i, tool) in [(0, "write"), (1, "edit")] {
        let (text, is_error) = &results[i];
        assert!(
            *is_error
                && text.starts_with("Access denied: ")
                && text.ends_with(
                    "private.env is hidden by the sandbox (credentials are not readable)"
                ),
            "{tool}: {text}"
        );
    }
    let (shell, _) = &results[2];
    assert!(
        shell.contains("rm: cannot remove 'private.env': Device or resource busy")
            && shell.ends_with("end"),
        "{shell}"
    );
    assert_eq!(
        std::fs::read_to_string(&hidden).unwrap(),
        "TOKEN=HIDE-ME\n",
        "the hidden file is unchanged"
    );
    assert!(!scene.repo.join("moved").exists());
}

#[test]
fn max_cost_stops_a_run_that_spends_past_it() {
    let dir = tempfile::tempdir().unwrap();
    // Each turn: a million input tokens at $0.60 a million.
    let costly_call = |id: &str| {
        Reply::Sse(vec![
            role(),
            tool_call(0, id, "ls", "{}"),
            finish("tool_calls"),
            usage(1_000_000, 0, 0),
            done(),
        ])
    };
    let mock = MockLlm::start(vec![
        costly_call("c1"),
        costly_call("c2"),
        costly_call("c3"),
        costly_call("c4"),
        answer("spent it all"),
    ]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--price",
            "input=0.6,output=0",
            "--max-cost",
            "1",
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(3);
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_cost");
    let used = limit["used"].as_f64().unwrap();
    assert!((used - 1.2).abs() < 1e-9, "{limit}");
    assert_eq!(limit["budgetLimit"].as_f64(), Some(1.0));
    assert_eq!(run.first("agent_end")["stopReason"], "budget_exceeded");
    assert_eq!(
        run.stderr,
        "worker: limit reached: max cost 1 USD (spent 1.2000)\n"
    );
    // The second turn crossed the limit: no third request was made.
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn compaction_cuts_each_old_tool_result_to_2000_characters_for_the_summarizer() {
    let dir = tempfile::tempdir().unwrap();
    let bash_call = |id: &str, command: &str, prompt_tokens: u64| {
        Reply::Sse(vec![
            role(),
            tool_call(0, id, "bash", &json!({"command": command}).to_string()),
            finish("tool_calls"),
            usage(prompt_tokens, 10, 0),
            done(),
        ])
    };
    let mock = MockLlm::start(vec![
        // 20,000 characters: well within the window, and ten times the cut.
        bash_call("c1", "printf 'x%.0s' $(seq 1 20000)", 100),
        // The server says the prompt is now near the window: the next request compacts.
        bash_call("c2", "echo small", 95_000),
        answer("SUMMARY: printed many x."),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--context-window", "100000"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert_eq!(run.first("compaction_start")["reason"], "threshold");
    let requests = mock.requests();
    let summary_request = &requests[2].body["messages"];
    assert!(
        summary_request[0]["content"]
            .as_str()
            .unwrap()
            .contains("compress"),
        "{summary_request}"
    );
    let old_results: Vec<&Value> = summary_request
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(old_results.len(), 1, "{summary_request}");
    let content = old_results[0]["content"].as_str().unwrap();
    assert_eq!(
        content,
        format!("{}… [18000 more characters]", "x".repeat(2000))
    );
}

#[test]
fn the_output_last_message_file_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let key = "dynamo-key-5c1f9e7a2b";
    let mock = MockLlm::start(vec![answer(&format!("The key is {key}, as asked."))]);
    let out = dir.path().join("last.txt");
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--output-last-message",
            out.to_str().unwrap(),
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url), ("DYNAMO_API_KEY", key)],
    );
    run.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "The key is [REDACTED], as asked."
    );
}

#[test]
fn a_long_agent_end_is_one_whole_line_redacted_throughout() {
    let dir = tempfile::tempdir().unwrap();
    let key = "dynamo-key-8e2d4a6c1f";
    // Each read returns 20 KB holding the key 400 times: the conversation, and so the
    // `agent_end` line that carries it, is several times the size the emitter writes at once.
    let line = format!("a line that names {key} in passing\n");
    std::fs::write(dir.path().join("notes.txt"), line.repeat(400)).unwrap();
    let mut replies: Vec<_> = (0..12)
        .map(|i| call(&format!("r{i}"), "read", r#"{"path":"notes.txt"}"#))
        .collect();
    replies.push(answer("read"));
    let mock = MockLlm::start(replies);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--no-session"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url), ("DYNAMO_API_KEY", key)],
    );
    run.assert_code(0);
    assert!(!run.stdout.contains(key));
    let end_line = run
        .stdout
        .lines()
        .find(|line| line.starts_with(r#"{"type":"agent_end""#))
        .unwrap();
    assert!(end_line.len() > 2 * 64 * 1024, "{} bytes", end_line.len());
    let end: Value = serde_json::from_str(end_line).unwrap();
    assert_eq!(end["messages"].as_array().unwrap().len(), 26);
    // Every one of the 12 x 400 mentions is there, redacted, in the tool results it carries.
    assert_eq!(
        end_line.matches("names [REDACTED] in passing").count(),
        4800
    );
    assert_eq!(run.last()["type"], "usage_snapshot");
}

#[test]
fn the_zeromq_tool_events_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let key = "dynamo-key-5c1f9e7a2b";
    let pull = Pull::bind();
    // The call id is the model's to choose: here it carries the key.
    let id = format!("c-{key}");
    let mock = MockLlm::start(vec![call(&id, "ls", "{}"), answer("done")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("DYNAMO_API_KEY", key),
            ("DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT", &pull.endpoint),
        ],
    );
    run.assert_code(0);
    let messages = pull.wait_for(2);
    assert_eq!(messages.len(), 2, "tool_start and tool_end");
    for frames in &messages {
        let raw = frames.concat();
        assert!(
            !raw.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key left in a record"
        );
        let (_, _, record) = decode(frames);
        assert_eq!(record["tool"]["tool_call_id"], "c-[REDACTED]", "{record}");
    }
}

#[test]
fn a_sandbox_that_cannot_be_set_up_exits_126_and_never_runs_the_command() {
    let scene = scene();
    // A namespace file cannot be covered by a mount, so building the command's view fails.
    let mock = MockLlm::start(vec![
        bash("b1", "echo ran > ran.txt; echo ran"),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &["--sandbox-hide", "/proc/self/ns/net"], &[]);
    run.assert_code(0);
    let results = results(&run);
    let (text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("worker sandbox: cannot hide /proc/self/ns/net: ")
            && text.contains("Command exited with code 126"),
        "{text}"
    );
    assert!(!text.contains("ran"), "{text}");
    assert!(
        !scene.repo.join("ran.txt").exists(),
        "the command never ran"
    );
}

#[test]
fn sandboxed_commands_cannot_write_a_file_past_4_gib() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash("b1", "ulimit -f; ulimit -H -f"),
        // One byte just past the cap (a sparse write, nothing on disk): the kernel stops the
        // writer with SIGXFSZ (exit 128 + 25).
        bash(
            "b2",
            "dd if=/dev/zero of=big bs=1 count=1 seek=4294967296 conv=notrunc 2>&1; echo status=$?; stat -c %s big",
        ),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    // `ulimit -f` counts 1024-byte blocks: 4 GiB.
    assert_eq!(results[0].0, "4194304\n4194304", "{results:?}");
    let out = &results[1].0;
    assert!(out.contains("File size limit exceeded"), "{out}");
    assert!(out.ends_with("status=153\n0"), "nothing was written: {out}");
}

#[test]
fn the_auth_file_and_the_app_key_are_hidden_from_commands() {
    let scene = scene();
    let auth = scene.outside.join("auth.json");
    std::fs::write(
        &auth,
        r#"{"openai": {"type": "api_key", "key": "sk-authfile-7f3e9a1c"}}"#,
    )
    .unwrap();
    std::fs::set_permissions(&auth, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let pem = scene.outside.join("app.pem");
    std::fs::write(
        &pem,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::set_permissions(&pem, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // Byte counts, not contents: the contents would be redacted from the output anyway, so only
    // a count shows whether the command could read the files.
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            &format!("wc -c < {}; wc -c < {}", auth.display(), pem.display()),
        ),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--auth-file", auth.to_str().unwrap()],
        &[
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_APP_INSTALLATION_ID", "2"),
            ("GITHUB_APP_PRIVATE_KEY_PATH", pem.to_str().unwrap()),
            // Never reached: an App token is minted only for a GitHub call.
            ("GITHUB_API_URL", "http://127.0.0.1:9"),
        ],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[0], ("0\n0".to_string(), false), "{results:?}");
    // Outside the sandbox the files are there.
    assert!(std::fs::metadata(&auth).unwrap().len() > 0);
    assert!(std::fs::metadata(&pem).unwrap().len() > 0);
}

/// What each search saw: its query, and whether the other query arrived while it waited.
type Meetings = Arc<Mutex<Vec<(String, bool)>>>;

/// A search API whose answer waits until a search for another query has arrived, or until
/// `patience` has passed.
fn rendezvous_search(patience: Duration) -> (String, Meetings) {
    #[derive(Clone)]
    struct Rendezvous {
        arrived: Arc<Mutex<Vec<String>>>,
        met: Meetings,
        patience: Duration,
    }
    async fn search(
        State(rendezvous): State<Rendezvous>,
        axum::Json(body): axum::Json<Value>,
    ) -> impl IntoResponse {
        let query = body["query"].as_str().unwrap_or_default().to_string();
        rendezvous.arrived.lock().unwrap().push(query.clone());
        let start = Instant::now();
        let mut met = false;
        while !met && start.elapsed() < rendezvous.patience {
            met = rendezvous
                .arrived
                .lock()
                .unwrap()
                .iter()
                .any(|q| *q != query);
            if !met {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        rendezvous.met.lock().unwrap().push((query, met));
        axum::Json(
            json!({"results": [{"title": "Hit", "url": "https://hit.example/", "content": "snippet"}]}),
        )
    }
    let rendezvous = Rendezvous {
        arrived: Arc::default(),
        met: Arc::default(),
        patience,
    };
    let met = rendezvous.met.clone();
    let app = Router::new()
        .route("/search", post(search))
        .with_state(rendezvous);
    (format!("http://{}", serve(app)), met)
}

#[test]
fn read_only_calls_of_one_message_run_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    // Run one at a time, the first search waits out its patience alone; run together, each
    // sees the other arrive, within milliseconds. The patience bounds how long a failing run
    // takes, and stays under the providers' 15 s request timeout, so a search one at a time
    // is answered (alone) rather than timed out and retried.
    let (api, met) = rendezvous_search(Duration::from_secs(10));
    let search = |query: &str| json!({"query": query}).to_string();
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "s1", "web_search", &search("one")),
            tool_call(1, "s2", "web_search", &search("two")),
            finish("tool_calls"),
            done(),
        ]),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("TAVILY_API_KEY", "t-key-for-tests"),
            ("TAVILY_BASE_URL", &api),
        ],
    );
    run.assert_code(0);
    let ends = run.all("tool_execution_end");
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|end| end["isError"] == false), "{ends:?}");
    let mut met = met.lock().unwrap().clone();
    met.sort();
    assert_eq!(
        met,
        [("one".to_string(), true), ("two".to_string(), true)],
        "each search was in flight when the other arrived"
    );
}
