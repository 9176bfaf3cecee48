//! Golden replay: every scenario under `fixtures/` runs through the real binary, and its whole
//! stdout (normalized) must equal the scenario's `expected.jsonl`.
//!
//! A scenario directory holds `scenario.json` (`description`, extra `args`, `exitCode`, and
//! `files` whose content must match after the run), `prompt.txt`, `model.jsonl` (the recorded
//! model responses) and optionally `workspace/`, copied to a temporary directory that becomes
//! `--cwd`. Normalization replaces what differs between runs: the session id, timestamps,
//! durations, retry delays, the temporary cwd and spill-file paths; consecutive progress
//! updates of one tool call are merged (their split depends on timing).
//!
//! A scenario with a `site/` directory gets a web server on 127.0.0.1 serving it (a path is
//! the file of that name; `…/search` paths answer with `site/search.json`) as the Brave Search
//! API and as the web: `{{SITE}}` in `model.jsonl` becomes its URL, which the expected stream
//! shows as `<SITE>`.
//!
//! `WORKER_BLESS=fixtures cargo test --test it golden` rewrites the expected files (or name
//! one: `WORKER_BLESS=fixtures/<scenario>/expected.jsonl`) and prints the diff to review.

use std::path::{Path, PathBuf};

use crate::support::run_worker;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scenario {
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    exit_code: i32,
    #[serde(default)]
    files: std::collections::BTreeMap<String, String>,
}

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("scenario.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// How a command's output splits into throttled updates depends on timing; consecutive
/// updates of one call are merged so the comparison sees what was reported, not when.
fn coalesce_updates(stdout: &str) -> String {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for line in stdout.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            return stdout.to_string();
        };
        if let Some(previous) = out.last_mut()
            && event["type"] == "tool_execution_update"
            && previous["type"] == "tool_execution_update"
            && previous["toolCallId"] == event["toolCallId"]
        {
            let more = event["partialResult"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let text = &mut previous["partialResult"]["content"][0]["text"];
            *text = serde_json::Value::String(format!("{}{more}", text.as_str().unwrap_or("")));
            previous["partialResult"]["details"] = event["partialResult"]["details"].clone();
            continue;
        }
        out.push(event);
    }
    out.iter().map(|e| format!("{e}\n")).collect()
}

fn normalize(stdout: &str, cwd: &Path) -> String {
    let stdout = &coalesce_updates(stdout);
    let session = stdout
        .lines()
        .next()
        .and_then(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .and_then(|header| header["id"].as_str().map(str::to_string))
        .unwrap_or_default();
    let mut text = stdout.clone();
    if !session.is_empty() {
        text = text.replace(&session, "<SESSION>");
    }
    text = text.replace(&cwd.display().to_string(), "<CWD>");
    let rules = [
        (r#""timestamp":"[^"]+""#, r#""timestamp":"<TIME>""#),
        (r#""timestamp":\d+"#, r#""timestamp":0"#),
        (r#""(durationMs|elapsedMs|delayMs)":\d+"#, r#""$1":0"#),
        (
            r#"/[^"\\]*worker-run-[^"\\/]*/bash-[^"\\]*\.log"#,
            "<SPILL>",
        ),
        (
            r#""sessionFile":"[^"]*""#,
            r#""sessionFile":"<SESSION_FILE>""#,
        ),
    ];
    for (pattern, replacement) in rules {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, replacement)
            .into_owned();
    }
    text
}

#[test]
fn every_fixture_scenario_replays_to_its_expected_stream() {
    let all = scenarios();
    assert!(all.len() >= 5, "scenarios: {all:?}");
    let failures: Vec<String> = all
        .iter()
        .flat_map(|dir| replay_scenario(dir, true, false))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same streams with every command in the Linux sandbox: only `sandbox_status` differs.
#[test]
fn every_fixture_scenario_replays_the_same_under_the_linux_sandbox() {
    let failures: Vec<String> = scenarios()
        .iter()
        .flat_map(|dir| replay_scenario(dir, false, true))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Replays one scenario; returns what differs from its expected stream and files. With `bless`,
/// the expected stream is rewritten first when `WORKER_BLESS` names it.
fn replay_scenario(dir: &Path, bless: bool, sandboxed: bool) -> Vec<String> {
    let mut failures = Vec::new();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let scenario: Scenario =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scenario.json")).unwrap()).unwrap();
    let prompt = std::fs::read_to_string(dir.join("prompt.txt")).unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().canonicalize().unwrap();
    if dir.join("workspace").is_dir() {
        copy_tree(&dir.join("workspace"), &cwd);
    }
    let site = dir.join("site");
    let site_url = site.is_dir().then(|| serve_site(site));
    let mut model_file = dir.join("model.jsonl");
    if let Some(url) = &site_url {
        let text = std::fs::read_to_string(&model_file).unwrap();
        model_file = work.path().join("model.jsonl");
        std::fs::write(&model_file, text.replace("{{SITE}}", url)).unwrap();
    }
    let model = format!("replay/{}", model_file.display());
    let mut args: Vec<&str> = vec!["--model", &model, "--cwd", cwd.to_str().unwrap()];
    args.extend(scenario.args.iter().map(String::as_str));
    if sandboxed {
        args.extend(["--sandbox", "linux"]);
    }
    let env: Vec<(&str, &str)> = match &site_url {
        Some(url) => vec![
            ("BRAVE_SEARCH_API_KEY", "fixture-brave-key"),
            ("BRAVE_SEARCH_BASE_URL", url.as_str()),
        ],
        None => Vec::new(),
    };
    let run = run_worker(&cwd, &args, &prompt, &env);
    let mut actual = normalize(&run.stdout, &cwd);
    if let Some(url) = &site_url {
        actual = actual.replace(url.as_str(), "<SITE>");
    }
    let expected_path = dir.join("expected.jsonl");
    if bless {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let relative = expected_path.strip_prefix(root).unwrap_or(&expected_path);
        worker::bless::bless(root, &relative.to_string_lossy(), &actual)
            .unwrap_or_else(|err| panic!("{err}"));
    }
    let mut expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if sandboxed {
        let without_status = |text: &str| -> String {
            text.lines()
                .filter(|line| !line.starts_with(r#"{"type":"sandbox_status""#))
                .map(|line| format!("{line}\n"))
                .collect()
        };
        let status = actual
            .lines()
            .find(|line| line.starts_with(r#"{"type":"sandbox_status""#))
            .unwrap_or_default()
            .to_string();
        if !status.contains(r#""backend":"linux""#) {
            failures.push(format!("{name}: not sandboxed: {status}"));
        }
        actual = without_status(&actual);
        expected = without_status(&expected);
    }
    let name = if sandboxed {
        format!("{name} (--sandbox linux)")
    } else {
        name
    };
    if run.code != scenario.exit_code {
        failures.push(format!(
            "{name}: exit {} (expected {})\n{}",
            run.code, scenario.exit_code, run.stderr
        ));
    }
    if actual != expected {
        let first_diff = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        failures.push(format!(
            "{name}: stream differs at line {}\n  actual:   {}\n  expected: {}",
            first_diff + 1,
            actual.lines().nth(first_diff).unwrap_or("<end>"),
            expected.lines().nth(first_diff).unwrap_or("<end>")
        ));
    }
    for (path, content) in &scenario.files {
        let actual = std::fs::read_to_string(cwd.join(path)).unwrap_or_else(|e| format!("<{e}>"));
        if &actual != content {
            failures.push(format!(
                "{name}: {path} is {actual:?}, expected {content:?}"
            ));
        }
    }
    failures
}

/// Serves the files of `root` on 127.0.0.1; returns the base URL.
fn serve_site(root: PathBuf) -> String {
    use axum::http::{StatusCode, Uri, header};
    use axum::response::IntoResponse;
    let handler = move |uri: Uri| {
        let root = root.clone();
        async move {
            let path = uri.path().trim_start_matches('/');
            let file = if path.ends_with("search") {
                root.join("search.json")
            } else {
                root.join(path)
            };
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("json") => "application/json",
                _ => "text/plain",
            };
            match std::fs::read(&file) {
                Ok(body) => ([(header::CONTENT_TYPE, kind)], body).into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    };
    let app = axum::Router::new().fallback(handler);
    format!("http://{}", crate::support::mock_llm::serve(app))
}
