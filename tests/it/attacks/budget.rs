//! Tools that would outlive the budget: a web page, a search provider and a GitHub API that
//! accept the connection and never answer, a command that will not stop, and a search through
//! more text than the budget can read; and a model server that never lists its models (the
//! run's own discovery). Each runs under `--timeout`, and each run must end like
//! any other timeout — exit 3, `limit_reached` (timeout), `agent_end` (timeout) and
//! `usage_snapshot` last — within the budget plus a margin, with the call's own result saying
//! it was stopped. Without the bound these calls ran on for 15 s (web), 60 s (GitHub) or until
//! the search was done.
//!
//! The margin is generous (3 s) so a loaded two-core machine does not fail them; each test
//! prints what it measured.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::stalling::Stalling;
use crate::support::{Run, results, run_worker};

/// On top of `--timeout`: the run's start, its closing lines, a busy machine.
const MARGIN: Duration = Duration::from_secs(3);

/// Runs `worker run --timeout <budget>` whose model calls `calls` (all in one message), and
/// the wall time it took.
fn timed_run(
    cwd: &Path,
    budget: Duration,
    calls: &[(&str, Value)],
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Run, Duration) {
    let mut frames = vec![role()];
    for (index, (tool, args)) in calls.iter().enumerate() {
        frames.push(tool_call(
            index as u32,
            &format!("c{index}"),
            tool,
            &args.to_string(),
        ));
    }
    frames.extend([finish("tool_calls"), done()]);
    let mock = MockLlm::start(vec![Reply::Sse(frames), answer("never reached")]);
    let timeout = format!("{}ms", budget.as_millis());
    let mut args = vec!["--model", "dynamo/m", "--timeout", &timeout];
    args.extend_from_slice(flags);
    let mut all_env = vec![("DYNAMO_BASE_URL", mock.url.as_str())];
    all_env.extend_from_slice(env);
    let started = Instant::now();
    let run = run_worker(cwd, &args, "go", &all_env);
    (run, started.elapsed())
}

/// Ended exactly like any other timeout, within the budget and the margin.
fn assert_timed_out(run: &Run, elapsed: Duration, budget: Duration, what: &str) {
    eprintln!("{what}: ended after {elapsed:?} under a {budget:?} budget");
    run.assert_code(3);
    assert!(
        elapsed < budget + MARGIN,
        "{what}: ran {elapsed:?} under a {budget:?} budget"
    );
    assert_eq!(run.first("limit_reached")["limit"], "timeout", "{what}");
    assert_eq!(run.first("agent_end")["stopReason"], "timeout", "{what}");
    assert_eq!(run.last()["type"], "usage_snapshot", "{what}");
    assert!(
        run.stderr.starts_with("worker: limit reached: timeout ")
            && !run.stderr.contains("panicked"),
        "{what}: {}",
        run.stderr
    );
}

fn stopped(tool: &str) -> (String, bool) {
    (
        format!("Tool {tool} stopped: the run's --timeout ran out before it finished"),
        true,
    )
}

#[test]
fn a_page_that_never_answers_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let page = Stalling::start();
    // Brave has no extractor: web_fetch fetches the page itself (loopback allowed for it).
    let provider = Stalling::start();
    let budget = Duration::from_secs(3);
    let (run, elapsed) = timed_run(
        dir.path(),
        budget,
        &[("web_fetch", json!({"url": format!("{}/slow", page.url())}))],
        &["--web-allow-host", "127.0.0.1"],
        &[
            ("BRAVE_SEARCH_API_KEY", "b-key"),
            ("BRAVE_SEARCH_BASE_URL", &provider.url()),
        ],
    );
    assert_timed_out(&run, elapsed, budget, "web_fetch");
    assert_eq!(page.connections(), 1, "the page was asked for");
    assert_eq!(results(&run), vec![stopped("web_fetch")]);
}

#[test]
fn a_search_provider_that_never_answers_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Stalling::start();
    let budget = Duration::from_secs(3);
    // The provider's extractor stalls too: web_fetch never reaches its own fetch.
    let (run, elapsed) = timed_run(
        dir.path(),
        budget,
        &[
            ("web_search", json!({"query": "rust"})),
            ("web_fetch", json!({"url": "https://docs.example/"})),
        ],
        &[],
        &[
            ("TAVILY_API_KEY", "t-key"),
            ("TAVILY_BASE_URL", &provider.url()),
        ],
    );
    assert_timed_out(&run, elapsed, budget, "web_search");
    assert_eq!(provider.connections(), 2, "both calls asked the provider");
    let mut seen = results(&run);
    seen.sort();
    assert_eq!(seen, vec![stopped("web_fetch"), stopped("web_search")]);
}

#[test]
fn a_github_api_that_never_answers_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let api = Stalling::start();
    let budget = Duration::from_secs(3);
    let (run, elapsed) = timed_run(
        dir.path(),
        budget,
        &[(
            "github_get_issue",
            json!({"owner": "o", "repo": "r", "issue_number": 1}),
        )],
        &["--profile", "read"],
        &[
            ("GITHUB_API_URL", &api.url()),
            ("GITHUB_TOKEN", "ghp_budgettest"),
            (
                "WORKER_GIT_CREDENTIALS",
                dir.path().join("credentials").to_str().unwrap(),
            ),
        ],
    );
    assert_timed_out(&run, elapsed, budget, "github_get_issue");
    assert!(api.connections() >= 1, "the API was asked");
    assert_eq!(results(&run), vec![stopped("github_get_issue")]);
}

#[test]
fn a_command_that_will_not_stop_is_killed_with_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let budget = Duration::from_secs(2);
    // The job records its pid as the host sees it (`$!` is its pid in the command's own PID
    // namespace).
    let command = "trap '' TERM; sh -c 'read -r p _ < /proc/self/stat; echo $p > bg.pid; exec sleep 60' & \
                   while [ ! -s bg.pid ]; do sleep 0.01; done; echo started; sleep 60";
    let (run, elapsed) = timed_run(
        dir.path(),
        budget,
        &[("bash", json!({ "command": command }))],
        &[],
        &[],
    );
    assert_timed_out(&run, elapsed, budget, "bash");
    let (text, is_error) = &results(&run)[0];
    assert!(*is_error);
    assert_eq!(text, "started\n\nCommand aborted");
    let background: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !Path::new(&format!("/proc/{background}")).exists()
            || std::fs::read_to_string(format!("/proc/{background}/stat"))
                .is_ok_and(|stat| stat.contains(") Z ")),
        "the command's background job {background} outlived the run"
    );
}

#[test]
fn a_search_through_more_text_than_the_budget_can_read_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // Lines of words no search engine can skip through: every position may start a match of
    // the pattern, and nothing matches, so every byte is examined.
    let line = "ωmega ".repeat(40) + "\n";
    let block = line.repeat(4096);
    let text = dir.path().join("text");
    std::fs::create_dir(&text).unwrap();
    let mut file = std::fs::File::create(text.join("big-000.txt")).unwrap();
    for _ in 0..10 {
        std::io::Write::write_all(&mut file, block.as_bytes()).unwrap();
    }
    drop(file);
    // 11.5 MB under 256 names: 2.9 GB to search, more than an optimized build on a fast
    // machine reads in the budget, at the disk cost of one file.
    for n in 1..256 {
        std::fs::hard_link(
            text.join("big-000.txt"),
            text.join(format!("big-{n:03}.txt")),
        )
        .unwrap();
    }
    let budget = Duration::from_secs(2);
    let pattern = json!({"pattern": r"\b\w{3,}\s+\w+\d\b", "path": "text"});
    let (run, elapsed) = timed_run(
        dir.path(),
        budget,
        &[
            ("grep", pattern),
            ("multi_grep", json!({"patterns": ["ωmega1", "omega2"]})),
        ],
        &[],
        &[],
    );
    assert_timed_out(&run, elapsed, budget, "grep");
    for (text, is_error) in results(&run) {
        assert!(is_error, "{text}");
        assert!(
            text.contains("stopped: the run's --timeout ran out"),
            "{text}"
        );
    }
}

#[test]
fn a_model_server_that_never_lists_its_models_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = Stalling::start();
    let budget = Duration::from_secs(2);
    let started = Instant::now();
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/default", "--timeout", "2s"],
        "go",
        &[("DYNAMO_BASE_URL", &server.url())],
    );
    let elapsed = started.elapsed();
    eprintln!("model discovery: ended after {elapsed:?} under a {budget:?} budget");
    // A timeout, not a failed discovery; no agent_start, so no agent_end.
    run.assert_code(3);
    assert!(elapsed < budget + MARGIN, "{elapsed:?}");
    assert_eq!(run.first("limit_reached")["limit"], "timeout");
    assert!(run.all("fatal_error").is_empty(), "{}", run.stdout);
    assert_eq!(run.last()["type"], "usage_snapshot");
    assert!(server.connections() >= 1, "the models were asked for");
}
