//! Credentials in every sink: a model key from each source a `--providers` model can take it
//! from (`apiKey` inline, the variable `apiKeyEnv` names, `<NAME>_API_KEY`), and every other
//! credential worker knows (web search keys, OTEL header values, GitHub tokens and App keys,
//! `--auth-file` entries), printed by a command, read from a file, echoed by the model, put in
//! the prompt, or echoed by a 401, must appear in no sink: stdout, stderr, the recording,
//! `--output-last-message`, the session file, `--trace-file`, OTEL export, the requests the
//! model server receives (only its auth header holds the key), and the spill file of a large
//! output while the run lives. Each test shows where `[REDACTED]` stands instead, so it fails
//! if redaction is removed or a source is not registered.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

/// An OTLP/HTTP collector on 127.0.0.1 that keeps every export body as sent. Protobuf carries
/// strings as raw UTF-8, so a key in any attribute shows up as its bytes.
struct Collector {
    url: String,
    bodies: Arc<Mutex<Vec<Bytes>>>,
}

impl Collector {
    fn start() -> Collector {
        async fn export(State(bodies): State<Arc<Mutex<Vec<Bytes>>>>, body: Bytes) {
            bodies.lock().unwrap().push(body);
        }
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/{signal}", post(export))
            .with_state(bodies.clone());
        Collector {
            url: format!("http://{}", serve(app)),
            bodies,
        }
    }
}

/// The files a run writes outside its working directory, and the flags that ask for them.
struct Outputs {
    dir: tempfile::TempDir,
}

impl Outputs {
    fn new() -> Outputs {
        Outputs {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn flags(&self, collector: &Collector) -> Vec<String> {
        let mut flags = Vec::new();
        for (flag, name) in [
            ("--record", "recording.jsonl"),
            ("--output-last-message", "last.txt"),
            ("--trace-file", "trace.jsonl"),
            ("--session-dir", "sessions"),
        ] {
            flags.push(flag.to_string());
            flags.push(self.path(name).display().to_string());
        }
        flags.extend(
            [
                "--otel",
                "--otel-include-content",
                "--otel-endpoint",
                &collector.url,
            ]
            .map(str::to_string),
        );
        flags
    }

    /// Every file written, with its contents; the ones the flags name must all be there.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut found = Vec::new();
        let mut dirs = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    found.push((path.clone(), std::fs::read(&path).unwrap()));
                }
            }
        }
        found
    }
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

/// `secret` is in no sink: stdout, stderr, any output file, any OTEL export, or the body of any
/// request the model server received.
fn assert_nowhere(secret: &str, run: &Run, mock: &MockLlm, outputs: &Outputs, otel: &Collector) {
    assert!(
        !run.stdout.contains(secret),
        "{secret} on stdout:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains(secret),
        "{secret} on stderr:\n{}",
        run.stderr
    );
    for (path, bytes) in outputs.files() {
        assert!(!holds(&bytes, secret), "{secret} in {}", path.display());
    }
    for body in otel.bodies.lock().unwrap().iter() {
        assert!(!holds(body, secret), "{secret} in an OTEL export");
    }
    for request in mock.requests() {
        let body = request.body.to_string();
        assert!(!body.contains(secret), "{secret} sent to the model: {body}");
    }
}

/// The text of the result of call `id`.
fn result_text<'a>(run: &'a Run, id: &str) -> &'a str {
    run.all("tool_execution_end")
        .into_iter()
        .find(|e| e["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no result for {id}:\n{}", run.stdout))["result"]["content"][0]
        ["text"]
        .as_str()
        .unwrap()
}

/// A provider named `acme` at `url`, with `key` from one of its three sources: the providers
/// JSON to pass, whether it goes in `AGENTIC_PI_PROVIDERS` (else `--providers`), and the
/// environment that holds the key.
struct Source {
    name: &'static str,
    providers: Value,
    in_env: bool,
    env: Vec<(&'static str, String)>,
}

const SOURCES: usize = 3;

fn sources(url: &str, key: &str) -> Vec<Source> {
    let entry = |extra: Value| {
        let mut entry = json!({"baseUrl": url, "api": "openai-completions"});
        entry
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"acme": entry})
    };
    vec![
        Source {
            name: "apiKey",
            providers: entry(json!({"apiKey": key})),
            in_env: true,
            env: Vec::new(),
        },
        Source {
            name: "apiKeyEnv",
            providers: entry(json!({"apiKeyEnv": "ACME_TOKEN"})),
            in_env: false,
            env: vec![("ACME_TOKEN", key.to_string())],
        },
        Source {
            name: "ACME_API_KEY",
            providers: entry(json!({})),
            in_env: false,
            env: vec![("ACME_API_KEY", key.to_string())],
        },
    ]
}

/// Runs `acme/m` with the key from `source`, every output sink on, in `cwd`.
fn run_acme(
    cwd: &Path,
    source: &Source,
    extra_env: &[(&str, &str)],
    outputs: &Outputs,
    otel: &Collector,
    prompt: &str,
) -> Run {
    let providers = source.providers.to_string();
    let mut args = vec!["--model", "acme/m", "--retry-base-delay", "1ms"];
    if !source.in_env {
        args.extend(["--providers", &providers]);
    }
    let flags = outputs.flags(otel);
    args.extend(flags.iter().map(String::as_str));
    let mut env: Vec<(&str, &str)> = source.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if source.in_env {
        env.push(("AGENTIC_PI_PROVIDERS", &providers));
    }
    env.extend_from_slice(extra_env);
    run_worker(cwd, &args, prompt, &env)
}

#[test]
fn a_custom_provider_key_from_any_source_reaches_no_sink() {
    let key = "acme-gw-key-5f0c9d2e71b8a4";
    for index in 0..SOURCES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key.txt"), format!("token={key}\n")).unwrap();
        // A gateway that echoes the key in the response's id and model (which reach the
        // trace file and the OTEL spans), as well as everything below.
        let echo = json!({
            "id": format!("chatcmpl-{key}"),
            "model": format!("echo-{key}"),
            "choices": [{"index": 0, "delta": {"role": "assistant"}}],
        });
        let mock = MockLlm::start(vec![
            Reply::Sse(vec![
                Frame::Data(echo.to_string()),
                tool_call(0, "c1", "bash", r#"{"command":"cat key.txt; env"}"#),
                tool_call(1, "c2", "read", r#"{"path":"key.txt"}"#),
                finish("tool_calls"),
                done(),
            ]),
            answer(&format!("The key is {key}.")),
        ]);
        let source = sources(&mock.url, key).swap_remove(index);
        let (outputs, otel) = (Outputs::new(), Collector::start());
        let prompt = format!("The gateway key is {key}; check key.txt.");
        let run = run_acme(dir.path(), &source, &[], &outputs, &otel, &prompt);
        run.assert_code(0);
        let name = source.name;

        // The key was the one in use, and only the auth header carried it.
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{name}");
        for request in &requests {
            assert_eq!(request.headers["authorization"], format!("Bearer {key}"));
        }
        // Where it was printed, read, asked about or answered, it is [REDACTED].
        let shell = result_text(&run, "c1");
        assert!(shell.starts_with("token=[REDACTED]\n"), "{name}: {shell}");
        if let Some(var) = source.env.first().map(|(var, _)| var) {
            assert!(
                shell.contains(&format!("\n{var}=[REDACTED]\n")),
                "{name}: {shell}"
            );
        } else {
            assert!(
                shell.contains(r#""apiKey":"[REDACTED]""#),
                "{name}: {shell}"
            );
        }
        assert!(
            result_text(&run, "c2").contains("token=[REDACTED]"),
            "{name}"
        );
        let first = requests[0].body.to_string();
        assert!(
            first.contains("The gateway key is [REDACTED]; check key.txt."),
            "{first}"
        );
        let second = requests[1].body.to_string();
        assert!(second.contains("token=[REDACTED]"), "{name}: {second}");
        assert_eq!(
            std::fs::read_to_string(outputs.path("last.txt")).unwrap(),
            "The key is [REDACTED]."
        );
        // Every sink was written, and none holds the key; the trace file and the spans hold
        // the echoed response id, redacted.
        let files = outputs.files();
        for name in ["recording.jsonl", "last.txt", "trace.jsonl"] {
            assert!(
                files.iter().any(|(path, _)| path.ends_with(name)),
                "no {name}"
            );
        }
        let trace = std::fs::read_to_string(outputs.path("trace.jsonl")).unwrap();
        assert!(
            trace.contains(r#""request_id":"[REDACTED]""#),
            "{name}: {trace}"
        );
        let exported = otel.bodies.lock().unwrap().concat();
        assert!(holds(&exported, "chatcmpl-[REDACTED]"), "{name}");
        assert!(
            files.iter().any(
                |(path, bytes)| path.extension().is_some_and(|e| e == "jsonl")
                    && path.starts_with(outputs.path("sessions"))
                    && holds(bytes, "[REDACTED]")
            ),
            "no session file"
        );
        assert_nowhere(key, &run, &mock, &outputs, &otel);
    }
}

#[test]
fn a_401_that_echoes_the_key_shows_it_nowhere() {
    let key = "acme-gw-key-7e3a1c0b95d2f6";
    // A JSON error quoting the key, and a plain body where the key straddles the 500-byte cut
    // of the excerpt the error message keeps (a cut before redaction kept its first half).
    let bodies = [
        json!({"error": {"message": format!("Incorrect API key provided: {key}")}}).to_string(),
        format!("{}{key} was refused", "x".repeat(490)),
    ];
    for index in 0..SOURCES {
        for body in &bodies {
            let dir = tempfile::tempdir().unwrap();
            let mock = MockLlm::start(vec![status(401, body)]);
            let source = sources(&mock.url, key).swap_remove(index);
            let (outputs, otel) = (Outputs::new(), Collector::start());
            let run = run_acme(dir.path(), &source, &[], &outputs, &otel, "hello");
            run.assert_code(1);
            let fatal = run.first("fatal_error")["error"]["message"]
                .as_str()
                .unwrap();
            assert!(fatal.starts_with("HTTP 401 Unauthorized: "), "{fatal}");
            let failed = format!(
                "worker: model request to {}/chat/completions failed: {fatal}",
                mock.url
            );
            let line = run
                .stderr
                .lines()
                .find(|l| *l == failed)
                .unwrap_or_else(|| panic!("no {failed}\n on stderr:\n{}", run.stderr));
            for shown in [fatal, line] {
                assert!(shown.contains("[REDACTED]"), "{}: {shown}", source.name);
                // Not even the part before a cut.
                assert!(!shown.contains(&key[..10]), "{}: {shown}", source.name);
            }
            assert_nowhere(&key[..10], &run, &mock, &outputs, &otel);
        }
    }
}

#[test]
fn the_spill_file_of_a_large_output_is_redacted_while_the_run_lives() {
    let key = "acme-gw-key-0d9b6e4f2a7c13";
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // 3000 lines (more than a result shows) each ending in the key; then, while the run is
    // still alive, a second command finds the spill file, copies it, and counts in it.
    let flood = r#"{"command":"for i in $(seq 3000); do echo \"line $i $ACME_API_KEY\"; done"}"#;
    let inspect = r#"{"command":"f=$(ls \"$TMPDIR\"/worker-run-*/bash-*.log); echo \"$f\"; cp \"$f\" spill-copy.log; grep -c -F -e \"$ACME_API_KEY\" \"$f\"; grep -c -F '[REDACTED]' \"$f\"; true"}"#;
    let mock = MockLlm::start(vec![
        call("c1", "bash", flood),
        call("c2", "bash", inspect),
        answer("done"),
    ]);
    let source = sources(&mock.url, key).pop().unwrap();
    let (outputs, otel) = (Outputs::new(), Collector::start());
    let tmpdir = tmp.path().display().to_string();
    let run = run_acme(
        dir.path(),
        &source,
        &[("TMPDIR", &tmpdir)],
        &outputs,
        &otel,
        "flood",
    );
    run.assert_code(0);

    let ends = run.all("tool_execution_end");
    let spill = ends[0]["result"]["details"]["fullOutputPath"]
        .as_str()
        .unwrap_or_else(|| panic!("no spill file:\n{}", run.stdout));
    assert!(spill.starts_with(&tmpdir), "{spill}");
    assert_eq!(
        result_text(&run, "c2"),
        format!("{spill}\n0\n3000"),
        "the spill file held the key while the run lived"
    );
    let copy = std::fs::read_to_string(dir.path().join("spill-copy.log")).unwrap();
    let expected: String = (1..=3000)
        .map(|i| format!("line {i} [REDACTED]\n"))
        .collect();
    assert_eq!(copy, expected);
    assert!(
        !Path::new(spill).exists(),
        "the spill file outlived the run"
    );
    assert!(result_text(&run, "c1").contains("line 3000 [REDACTED]"));
    assert_nowhere(key, &run, &mock, &outputs, &otel);
}

#[test]
fn a_placeholder_key_shorter_than_the_minimum_redacts_nothing() {
    // Local servers take any key; `ollama` must not be cut out of ordinary text, nor the
    // spaces around it when the key was written with some.
    for placeholder in ["ollama", "EMPTY", "  ollama  "] {
        let dir = tempfile::tempdir().unwrap();
        let answer_text = "use  ollama  or EMPTY";
        let mock = MockLlm::start(vec![answer(answer_text)]);
        let providers = json!({"acme": {"baseUrl": mock.url, "api": "openai-completions"}});
        let run = run_worker(
            dir.path(),
            &["--model", "acme/m", "--providers", &providers.to_string()],
            "hi",
            &[("ACME_API_KEY", placeholder)],
        );
        run.assert_code(0);
        let end = run
            .all("message_end")
            .into_iter()
            .find(|e| e["message"]["role"] == "assistant")
            .unwrap();
        assert_eq!(
            end["message"]["content"][0]["text"], answer_text,
            "{placeholder:?}"
        );
        assert!(!run.stdout.contains("[REDACTED]"), "{placeholder:?}");
    }
}

#[test]
fn every_other_credential_worker_knows_is_redacted_too() {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let pem = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024)
        .unwrap()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let pem_path = outside.path().join("app.pem");
    std::fs::write(&pem_path, &pem).unwrap();
    let auth_key = "sk-auth-file-4c2e8a1f9b";
    let auth_path = outside.path().join("auth.json");
    std::fs::write(
        &auth_path,
        json!({"openai": {"type": "api_key", "key": auth_key}}).to_string(),
    )
    .unwrap();
    std::fs::set_permissions(
        &auth_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let credentials = [
        ("TAVILY_API_KEY", "tvly-search-key-93b1d0"),
        ("BRAVE_SEARCH_API_KEY", "brave-search-key-5a7e2c"),
        ("GITHUB_TOKEN", "ghp_run-token-1f4b7d9e"),
        ("GH_TOKEN", "gho_cli-token-6c2a8e0d"),
    ];
    let otel_headers = "authorization=Bearer%20otlp-cred-3e9f1a7b,x-team=team-cred-8d2c4b6a";
    // The command prints its environment, the start of the App key and the auth file: every
    // one of them holds a credential this run knows.
    let command = format!(
        "env; head -3 {}; cat {}",
        pem_path.display(),
        auth_path.display()
    );
    let mock = MockLlm::start(vec![
        call("c1", "bash", &json!({"command": command}).to_string()),
        answer("done"),
    ]);
    let pem_var = pem_path.display().to_string();
    let auth_arg = auth_path.display().to_string();
    let mut env: Vec<(&str, &str)> = credentials.to_vec();
    env.extend([
        ("DYNAMO_BASE_URL", mock.url.as_str()),
        ("OTEL_EXPORTER_OTLP_HEADERS", otel_headers),
        ("GITHUB_APP_ID", "1"),
        ("GITHUB_APP_INSTALLATION_ID", "2"),
        ("GITHUB_APP_PRIVATE_KEY_PATH", &pem_var),
        // Never reached: the App token is minted only for a GitHub call.
        ("GITHUB_API_URL", "http://127.0.0.1:9"),
    ]);
    // A collector URL with a password, which nothing listens at: the export failure names it.
    let collector = "http://otel-user:otel-pass-2b8d5f1e@127.0.0.1:9";
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--profile",
            "read",
            "--auth-file",
            &auth_arg,
            "--otel",
            "--otel-endpoint",
            collector,
        ],
        "print them",
        &env,
    );
    run.assert_code(0);
    assert!(
        run.stderr.lines().any(|line| line
            .starts_with("worker: telemetry: could not deliver traces to the collector: ")
            && line.contains("(http://otel-user:[REDACTED]@127.0.0.1:9/v1/traces)")),
        "{}",
        run.stderr
    );
    let shell = result_text(&run, "c1");
    for (var, _) in credentials {
        assert!(
            shell.contains(&format!("\n{var}=[REDACTED]\n")),
            "{var}: {shell}"
        );
    }
    assert!(
        shell.contains("OTEL_EXPORTER_OTLP_HEADERS=authorization=[REDACTED],x-team=[REDACTED]\n"),
        "{shell}"
    );
    assert!(shell.contains(r#""key":"[REDACTED]""#), "{shell}");
    // Part of the key file: its armor stays (it is no secret), each line of the key is gone.
    assert!(
        shell.contains("\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n"),
        "{shell}"
    );
    let mut secrets: Vec<&str> = credentials.iter().map(|(_, value)| *value).collect();
    secrets.extend([
        "otlp-cred-3e9f1a7b",
        "team-cred-8d2c4b6a",
        auth_key,
        "otel-pass-2b8d5f1e",
    ]);
    secrets.extend(pem.lines().filter(|line| !line.starts_with("-----")));
    let request = mock.requests()[1].body.to_string();
    for secret in secrets {
        assert!(!run.stdout.contains(secret), "{secret} on stdout");
        assert!(!run.stderr.contains(secret), "{secret} on stderr");
        assert!(!request.contains(secret), "{secret} sent to the model");
    }
}

#[test]
fn a_password_in_a_provider_url_is_a_credential_too() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: the request fails, and the error names the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let password = "gw-pass-6a1f3c9e0d";
    let url = format!("http://acme:{password}@127.0.0.1:{port}/v1");
    let providers = json!({"acme": {"baseUrl": url, "api": "openai-completions"}}).to_string();
    let outputs = Outputs::new();
    let recording = outputs.path("recording.jsonl").display().to_string();
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "acme/m",
            "--providers",
            &providers,
            "--max-retries",
            "0",
            "--record",
            &recording,
        ],
        "hello",
        &[],
    );
    run.assert_code(1);
    let shown = format!("http://acme:[REDACTED]@127.0.0.1:{port}/v1/chat/completions");
    assert!(
        run.stderr
            .lines()
            .any(|line| line.starts_with(&format!("worker: model request to {shown} failed: "))),
        "{}",
        run.stderr
    );
    let recorded = std::fs::read_to_string(outputs.path("recording.jsonl")).unwrap();
    assert!(recorded.contains(r#""transportError":"#), "{recorded}");
    assert!(!run.stdout.contains(password), "{}", run.stdout);
    assert!(!recorded.contains(password), "{recorded}");
}
