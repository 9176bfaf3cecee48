//! worker as a drop-in for agentic-pi: the command lines lastlight builds for every workflow
//! phase, the status lines its parser reads, skills, and the one stderr line a failed run
//! leaves for an orchestrator that keeps only the stderr tail.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker, worker_command};

/// The lines after the header, in agentic-pi's order (`skills_status` only when skills were
/// asked for or found).
const STATUS_LINES: [&str; 5] = [
    "sandbox_status",
    "extension_status",
    "extension_status",
    "extension_status",
    "skills_status",
];

fn complete(run: &Run) {
    assert_eq!(run.last()["type"], "usage_snapshot", "{}", run.stdout);
    let lines = if run.types().iter().any(|t| t == "skills_status") {
        5
    } else {
        4
    };
    assert_eq!(
        run.types()[1..=lines],
        STATUS_LINES[..lines],
        "{}",
        run.stdout
    );
    let extensions: Vec<&str> = run
        .all("extension_status")
        .iter()
        .filter_map(|e| e["extension"].as_str())
        .collect();
    assert_eq!(extensions[..3], ["github", "web-search", "file-search"]);
}

/// Every shape of `agentic-pi run --model M --sandbox none [--thinking T] [--profile P]
/// (--no-web-search | --web-search-provider P) [--skill DIR]… [--no-skills] [--no-session]`.
#[test]
fn every_lastlight_command_line_runs_to_a_complete_stream() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("claude-skills");
    write_skill(
        &skills.join("roll-dice"),
        "roll-dice",
        "Roll dice for a game.",
    );
    let skill = skills.to_str().unwrap();
    let shapes: Vec<Vec<&str>> = vec![
        vec!["--no-web-search"],
        vec!["--thinking", "high", "--no-web-search", "--no-session"],
        vec!["--profile", "read", "--web-search-provider", "tavily"],
        vec!["--skill", skill, "--no-skills", "--no-web-search"],
        vec![
            "--thinking",
            "low",
            "--profile",
            "repo-write",
            "--web-search-provider",
            "exa",
            "--skill",
            skill,
            "--skill",
            skill,
            "--no-skills",
            "--no-session",
        ],
        // Overrides appended to a default command line: the last value wins.
        vec![
            "--thinking",
            "low",
            "--no-web-search",
            "--thinking",
            "xhigh",
        ],
    ];
    for shape in shapes {
        let mock = MockLlm::start(vec![answer("done")]);
        let mut args = vec!["--model", "dynamo/m", "--sandbox", "none"];
        args.extend(&shape);
        let run = run_worker(
            dir.path(),
            &args,
            "phase prompt",
            &[
                ("DYNAMO_BASE_URL", &mock.url),
                ("GITHUB_TOKEN", "ghp_not_used_by_this_run"),
            ],
        );
        assert_eq!(run.code, 0, "{shape:?}: {}", run.stderr);
        complete(&run);
        assert_eq!(
            run.types().iter().any(|t| t == "skills_status"),
            shape.contains(&"--skill") || shape.contains(&"--no-skills"),
            "{shape:?}"
        );
        if shape.contains(&"--skill") {
            let status = run.first("skills_status");
            assert_eq!(status["status"], "configured", "{shape:?}");
            assert_eq!(status["discovered"], 1, "{shape:?}");
            assert_eq!(status["noSkills"], true, "{shape:?}");
        }
        if shape.contains(&"xhigh") {
            let body = &mock.requests()[0].body;
            assert_eq!(body["reasoning_effort"], "xhigh");
        }
    }
}

#[test]
fn invoked_as_agentic_pi_it_behaves_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("agentic-pi");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_worker"), &link).unwrap();
    let mock = MockLlm::start(vec![answer("done")]);
    let out = std::process::Command::new(&link)
        .args([
            "run",
            "--model",
            "dynamo/m",
            "--sandbox",
            "none",
            "--no-web-search",
        ])
        .args(["--retry-base-delay-ms", "50", "--max-steps", "4"])
        .env_clear()
        .env("DYNAMO_BASE_URL", &mock.url)
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .arg("hello")
        .output()
        .unwrap();
    let run = Run::from_output(out);
    assert_eq!(run.code, 0, "{}", run.stderr);
    complete(&run);

    // Usage messages name the program as it was invoked.
    let out = std::process::Command::new(&link)
        .args(["run", "--sandbox", "gondolin"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the gondolin backend is not available in worker; supported: none"),
        "{stderr}"
    );
    let out = std::process::Command::new(&link)
        .args(["run", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Usage: agentic-pi run"), "{stderr}");
}

#[test]
fn no_arguments_print_the_help_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = worker_command(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: worker <COMMAND>"), "{help}");
    assert!(out.stderr.is_empty());
}

#[test]
fn restrictions_without_a_sandbox_are_warned_about_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        call("c1", "bash", r#"{"command":"echo $PHASE"}"#),
        answer("done"),
    ]);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--no-network",
            "--allow-host",
            "github.com",
            "--sandbox-env",
            "PHASE=build",
            "--dangerously-skip-permissions",
        ],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("worker: --no-network has no effect with --sandbox none"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("worker: --allow-host has no effect"));
    let status = run.first("sandbox_status");
    assert_eq!(status["backend"], "none");
    assert_eq!(status["status"]["network"], "host");
    // --sandbox-env reaches commands.
    let end = run.first("tool_execution_end");
    assert_eq!(end["result"]["content"][0]["text"], "build");
}

#[test]
fn max_steps_stops_a_model_that_wants_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start_cycling(vec![call("c", "ls", "{}")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--max-steps", "2"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 3);
    let types = run.types();
    let at = types.iter().position(|t| t == "max_steps_reached").unwrap();
    assert_eq!(types[at + 1..at + 3], ["limit_reached", "agent_end"]);
    let reached = run.first("max_steps_reached");
    assert_eq!(
        (reached["maxSteps"].as_u64(), reached["steps"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        run.all("tool_execution_end").len(),
        2,
        "both steps ran their tools"
    );
    assert_eq!(
        run.stderr,
        "worker: limit reached: max turns 2 (the model wanted to go on)\n"
    );
}

#[test]
fn skills_are_discovered_listed_and_offered_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write_skill(
        &repo.join(".agents/skills/release-notes"),
        "release-notes",
        "Write release notes from merged pull requests.",
    );
    std::fs::create_dir_all(repo.join(".pi/skills/broken")).unwrap();
    std::fs::write(repo.join(".pi/skills/broken/SKILL.md"), "no frontmatter\n").unwrap();
    write_skill(
        &dir.path().join(".pi/agent/skills/global-one"),
        "global-one",
        "A skill in the home directory.",
    );
    let mock = MockLlm::start(vec![answer("done")]);
    let run = run_worker(
        &repo,
        &["--model", "dynamo/m"],
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("HOME", dir.path().to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let status = run.first("skills_status");
    assert_eq!(status["status"], "default");
    assert_eq!(status["discovered"], 2);
    let names: Vec<&str> = status["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["release-notes", "global-one"]);
    assert_eq!(
        status["problems"][0]["message"],
        "invalid frontmatter: the file must start with a --- line"
    );
    let system = system_prompt(&mock.requests()[0].body);
    assert!(
        system.contains("<name>release-notes</name>\n    <description>Write release notes from merged pull requests.</description>"),
        "{system}"
    );
    let file = repo.join(".agents/skills/release-notes/SKILL.md");
    assert!(
        system.contains(&format!("<location>{}</location>", file.display())),
        "{system}"
    );
    // Only the header is in the prompt: the body is read on demand.
    assert!(!system.contains("# release-notes"), "{system}");

    let mock = MockLlm::start(vec![answer("done")]);
    let run = run_worker(
        &repo,
        &["--model", "dynamo/m", "--no-skills"],
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("HOME", dir.path().to_str().unwrap()),
        ],
    );
    assert_eq!(run.first("skills_status")["status"], "disabled");
    assert!(!system_prompt(&mock.requests()[0].body).contains("<available_skills>"));
}

#[test]
fn every_failure_leaves_one_stderr_line_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    // 401: not retried; the line names the URL and the server's message.
    let mock = MockLlm::start(vec![Reply::Status {
        code: 401,
        body: r#"{"error":{"message":"invalid api key"}}"#.into(),
        retry_after: None,
    }]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        last_line(&run),
        format!(
            "worker: model request to {}/chat/completions failed: HTTP 401 Unauthorized: invalid api key",
            mock.url
        )
    );

    // Connection refused, after retries.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", free.local_addr().unwrap());
    drop(free);
    let run = run_worker(
        dir.path(),
        &[
            "--model",
            "dynamo/m",
            "--max-retries",
            "2",
            "--retry-base-delay",
            "10ms",
        ],
        "q",
        &[("DYNAMO_BASE_URL", &url)],
    );
    assert_eq!(run.code, 1);
    let line = last_line(&run);
    assert!(
        line.starts_with(&format!(
            "worker: model request to {url}/chat/completions failed after 2 retries: "
        )),
        "{line}"
    );
    assert!(
        line.contains("Connection refused") || line.contains("connection refused"),
        "{line}"
    );

    // The output limit.
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        role(),
        text("a"),
        finish("length"),
        done(),
    ])]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 1);
    assert!(
        last_line(&run)
            .starts_with("worker: the model hit the output limit (finish_reason length)"),
        "{}",
        run.stderr
    );

    // A missing key for a provider that needs one: found before any request.
    let run = run_worker(dir.path(), &["--model", "openai/gpt-4o"], "q", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(last_line(&run), "worker: OPENAI_API_KEY is not set");
    let fatal = run.first("fatal_error");
    assert_eq!(fatal["error"]["kind"], "auth");
    assert_eq!(fatal["error"]["name"], "AuthError");
    assert_eq!(run.last()["type"], "usage_snapshot");
}

#[test]
fn an_auth_file_supplies_the_key_and_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth.json");
    std::fs::write(
        &auth,
        r#"{"dynamo":{"type":"api_key","key":"dyn-secret-key-1"}}"#,
    )
    .unwrap();
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mock = MockLlm::start(vec![answer("done")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--auth-file", auth.to_str().unwrap()],
        "say dyn-secret-key-1",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        mock.requests()[0].headers["authorization"],
        "Bearer dyn-secret-key-1"
    );
    assert!(
        !run.stdout.contains("dyn-secret-key-1"),
        "the key is a secret"
    );

    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "--auth-file", auth.to_str().unwrap()],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .contains("readable by others (mode 644); run chmod 600 on it")
    );
}

fn last_line(run: &Run) -> String {
    run.stderr.lines().last().unwrap_or_default().to_string()
}

fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn write_skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n"),
    )
    .unwrap();
}

#[test]
fn a_gateway_from_agentic_pi_providers_is_reached_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("via the gateway")]);
    let providers = serde_json::json!({
        "acme": {"baseUrl": format!("{}/", mock.url), "api": "openai-completions", "apiKeyEnv": "ACME_TOKEN"}
    })
    .to_string();
    let run = run_worker(
        dir.path(),
        &["--model", "acme/llama-70b"],
        "q",
        &[
            ("AGENTIC_PI_PROVIDERS", &providers),
            ("ACME_TOKEN", "acme-token-1"),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let request = &mock.requests()[0];
    assert_eq!(request.headers["authorization"], "Bearer acme-token-1");
    assert_eq!(request.body["model"], "llama-70b");
    assert_eq!(run.all("message_end")[1]["message"]["provider"], "acme");

    // A required key that is missing is found before any request.
    let run = run_worker(
        dir.path(),
        &["--model", "acme/llama-70b", "--providers", &providers],
        "q",
        &[],
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "worker: ACME_TOKEN is not set\n");
}
