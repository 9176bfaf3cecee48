//! agentic-pi 0.3.0's skills.test.ts, and the `--skill`/`--no-skills`/`--tools` cases of its
//! args.test.ts, through the binary: each test is named after the case it mirrors.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

fn write_skill(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n"),
    )
    .unwrap();
}

/// A run in `start` with HOME at `home`, answering at once.
fn run_in(start: &Path, home: &Path, flags: &[&str]) -> (Run, MockLlm) {
    let mock = MockLlm::start(vec![answer("done")]);
    let mut args = vec!["--model", "dynamo/m"];
    args.extend_from_slice(flags);
    let run = run_worker(
        start,
        &args,
        "q",
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("HOME", home.to_str().unwrap()),
        ],
    );
    (run, mock)
}

/// The names of the tools the model was offered.
fn offered(mock: &MockLlm) -> Vec<String> {
    mock.requests()[0].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn usage_error(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let run = run_worker(dir.path(), args, "q", &[]);
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    assert_eq!(run.stdout, "", "{args:?}: nothing on stdout");
    run
}

#[test]
fn skills_test_no_flags_status_default_suppressed_on_a_default_run_with_no_skills() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = run_in(dir.path(), dir.path(), &[]);
    run.assert_code(0);
    assert!(!run.types().contains(&"skills_status".to_string()));
    assert_eq!(
        run.outline()[..6],
        [
            "session",
            "sandbox_status",
            "extension_status",
            "extension_status",
            "extension_status",
            "trace_status"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn skills_test_emitted_when_skills_are_discovered_even_with_no_flags() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(&dir.path().join(".pi/skills/roll-dice"), "roll-dice");
    let (run, _) = run_in(dir.path(), dir.path(), &[]);
    run.assert_code(0);
    let status = run.first("skills_status");
    assert_eq!(
        (
            &status["status"],
            &status["discovered"],
            &status["skills"][0]["name"]
        ),
        (&json!("default"), &json!(1), &json!("roll-dice"))
    );
}

#[test]
fn skills_test_expands_tilde_and_resolves_relative_paths_against_cwd() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    write_skill(&home.path().join(".claude/skills/from-home"), "from-home");
    write_skill(&cwd.path().join("local-skills/from-cwd"), "from-cwd");
    // Started in another directory: "local-skills" is under --cwd, not there.
    let (run, mock) = run_in(
        elsewhere.path(),
        home.path(),
        &[
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--skill",
            "~/.claude/skills",
            "--skill",
            "local-skills",
        ],
    );
    run.assert_code(0);
    let status = run.first("skills_status");
    assert_eq!(status["status"], "configured");
    assert_eq!(
        status["mappedPaths"],
        json!([
            home.path().join(".claude/skills").display().to_string(),
            cwd.path().join("local-skills").display().to_string()
        ])
    );
    assert_eq!(status["discovered"], 2);
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("<name>from-home</name>") && system.contains("<name>from-cwd</name>"),
        "{system}"
    );
}

#[test]
fn skills_test_drops_missing_paths_with_a_warning_non_fatal() {
    let home = tempfile::tempdir().unwrap();
    write_skill(&home.path().join(".claude/skills/kept"), "kept");
    let (run, _) = run_in(
        home.path(),
        home.path(),
        &["--skill", "~/.claude/skills", "--skill", "~/does-not-exist"],
    );
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("worker: skills: skill path not found, ignoring: ~/does-not-exist\n"),
        "{}",
        run.stderr
    );
    let status = run.first("skills_status");
    // One valid path remains, so still "configured".
    assert_eq!(status["status"], "configured");
    assert_eq!(
        status["mappedPaths"],
        json!([home.path().join(".claude/skills").display().to_string()])
    );
    assert_eq!(status.get("problems"), None, "no problem: a warning");

    // Only a missing path: nothing was mapped, so the run is a default one, and quiet.
    let (run, _) = run_in(home.path(), home.path(), &["--skill", "gone"]);
    run.assert_code(0);
    assert!(!run.types().contains(&"skills_status".to_string()));
    assert!(run.stderr.contains("ignoring: gone"), "{}", run.stderr);
}

#[test]
fn skills_test_no_skills_with_no_valid_paths_status_disabled() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(&dir.path().join(".pi/skills/hidden"), "hidden");
    let (run, _) = run_in(dir.path(), dir.path(), &["--no-skills"]);
    run.assert_code(0);
    let status = run.first("skills_status");
    assert_eq!(
        (
            &status["status"],
            &status["noSkills"],
            &status["discovered"],
            &status["mappedPaths"]
        ),
        (&json!("disabled"), &json!(true), &json!(0), &json!([]))
    );
}

#[test]
fn skills_test_skill_is_additive_even_with_no_skills() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(&dir.path().join(".pi/skills/discovered"), "discovered");
    write_skill(&dir.path().join("mine/explicit"), "explicit");
    let (run, _) = run_in(dir.path(), dir.path(), &["--no-skills", "--skill", "mine"]);
    run.assert_code(0);
    let status = run.first("skills_status");
    assert_eq!(status["status"], "configured");
    assert_eq!(status["noSkills"], true);
    let names: Vec<&Value> = status["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["name"])
        .collect();
    assert_eq!(names, [&json!("explicit")]);
}

#[test]
fn skills_test_emitted_when_explicitly_configured_even_with_zero_discovered() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let (run, _) = run_in(dir.path(), dir.path(), &["--skill", "empty"]);
    run.assert_code(0);
    let status = run.first("skills_status");
    assert_eq!(status["status"], "configured");
    assert_eq!(status["discovered"], 0);
    assert_eq!(
        status["mappedPaths"],
        json!([dir.path().join("empty").display().to_string()])
    );
}

#[test]
fn args_test_skill_accumulates_repeated_paths() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(&dir.path().join(".claude/skills/a"), "a");
    write_skill(&dir.path().join("project-skills/b"), "b");
    let (run, _) = run_in(
        dir.path(),
        dir.path(),
        &["--skill", "~/.claude/skills", "--skill", "./project-skills"],
    );
    run.assert_code(0);
    assert_eq!(run.first("skills_status")["discovered"], 2);
    assert_eq!(
        run.first("skills_status")["mappedPaths"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn args_test_skill_requires_a_non_empty_value() {
    for value in ["  ", "\t"] {
        let run = usage_error(&["run", "--model", "dynamo/m", "--skill", value]);
        assert!(
            run.stderr
                .contains("worker: --skill requires a non-empty path"),
            "{}",
            run.stderr
        );
    }
    // An empty path is refused by the parser itself; no path at all too.
    for args in [
        &["run", "--model", "dynamo/m", "--skill", ""][..],
        &["run", "--model", "dynamo/m", "--skill"],
    ] {
        let run = usage_error(args);
        assert!(
            run.stderr
                .contains("a value is required for '--skill <PATH>'"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn args_test_tools_parses_comma_separated_list_naming_an_extension_tool() {
    let dir = tempfile::tempdir().unwrap();
    // No --profile: the GitHub tool is not offered, and the run goes on with the others.
    let (run, mock) = run_in(
        dir.path(),
        dir.path(),
        &["--tools", "read,bash,github_get_repository"],
    );
    run.assert_code(0);
    assert_eq!(offered(&mock), ["read", "bash"]);
    assert!(
        run.stderr.contains(
            "worker: --tools github_get_repository: not offered in this run (no --profile, web search key or built-in tools for it); left out\n"
        ),
        "{}",
        run.stderr
    );
    // The web tools without a search key, and a built-in with --no-builtin-tools: the same.
    let (run, mock) = run_in(
        dir.path(),
        dir.path(),
        &[
            "--no-builtin-tools",
            "--tools",
            "read,web_search,multi_grep",
        ],
    );
    run.assert_code(0);
    assert_eq!(offered(&mock), ["multi_grep"]);
    assert!(
        run.stderr.contains("--tools read,web_search: not offered"),
        "{}",
        run.stderr
    );
    // A name no run could offer is still a typo worth stopping for.
    let run = usage_error(&["run", "--model", "dynamo/m", "--tools", "read,raed"]);
    assert!(
        run.stderr
            .contains("worker: unknown tool in --tools: raed. Available: "),
        "{}",
        run.stderr
    );
}
