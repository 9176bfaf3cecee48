//! Subagents through the binary (`--subagents`): `task` calls run child agents in this
//! process, at the same time, each shown as `subagent_start` / `subagent_end`, with their
//! usage in the run's totals; the depth limit holds; a failing child is the task's error
//! and its siblings and the parent go on; a signal stops the whole tree.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{results, run_dynamo};

/// One assistant message calling `task` once per `(id, prompt)`.
fn tasks(calls: &[(&str, &str)]) -> Reply {
    let mut frames = vec![role()];
    for (index, (id, prompt)) in calls.iter().enumerate() {
        frames.push(tool_call(
            index as u32,
            id,
            "task",
            &json!({"description": "look around", "prompt": prompt}).to_string(),
        ));
    }
    frames.extend([finish("tool_calls"), usage(10, 5, 0), done()]);
    Reply::Sse(frames)
}

/// A run that starts one child, which calls `ls`, with `--trace-file`.
struct Traced {
    mock: MockLlm,
    trace: std::path::PathBuf,
    parent: String,
    child: String,
}

fn traced_fan_out(dir: &std::path::Path) -> Traced {
    let trace = dir.join("trace.jsonl");
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "look")]),
        call("c1", "ls", "{}"),
        answer("seen"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir,
        &mock.url,
        &["--subagents", "--trace-file", trace.to_str().unwrap()],
        "delegate",
    );
    run.assert_code(0);
    let parent = run.events[0]["id"].as_str().unwrap().to_string();
    let child = run.first("subagent_start")["childSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    Traced {
        mock,
        trace,
        parent,
        child,
    }
}

/// An answer that takes `delay` to start.
fn slow_answer(text_: &str, delay: Duration) -> Reply {
    Reply::Sse(vec![
        Frame::Delay(delay),
        role(),
        text(text_),
        finish("stop"),
        usage(100, 20, 0),
        done(),
    ])
}

#[test]
fn three_children_run_at_once_and_their_answers_and_usage_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(400);
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "one"), ("t2", "two"), ("t3", "three")]),
        slow_answer("a child's answer", delay),
        slow_answer("a child's answer", delay),
        slow_answer("a child's answer", delay),
        answer("all three reported"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &["--subagents"], "fan out");
    run.assert_code(0);
    let header_id = run.events[0]["id"].as_str().unwrap().to_string();

    // Started together: every child's request arrived before the first child's answer could.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let children = &requests[1..4];
    let spread =
        children.iter().map(|r| r.at).max().unwrap() - children.iter().map(|r| r.at).min().unwrap();
    assert!(spread < delay, "children's requests spread over {spread:?}");
    // Each child was asked its own prompt, alone.
    let prompts: BTreeSet<String> = children
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 2, "a child sees only its own prompt");
            messages[1]["content"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        prompts,
        ["one", "three", "two"]
            .map(String::from)
            .into_iter()
            .collect()
    );

    let starts = run.all("subagent_start");
    let ends = run.all("subagent_end");
    assert_eq!((starts.len(), ends.len()), (3, 3));
    let ids: BTreeSet<&str> = starts
        .iter()
        .map(|s| s["childSessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "each child has its own session");
    assert!(!ids.contains(header_id.as_str()));
    for start in &starts {
        assert_eq!(start["parentSessionId"], header_id.as_str());
        assert_eq!(start["depth"], 1);
        assert_eq!(start["description"], "look around");
    }
    for end in &ends {
        assert_eq!(end["stopReason"], "stop");
        assert_eq!(end["usage"]["total"], 120);
    }
    let answers = results(&run);
    assert_eq!(
        answers,
        vec![("a child's answer".to_string(), false); 3],
        "each task returns its child's answer"
    );
    // The run's totals count the children: 2 requests of its own, 3 of theirs.
    let stats = run.stats();
    assert_eq!(stats["llmRequests"], 5);
    assert_eq!(stats["tokens"]["total"], 15 * 2 + 120 * 3);
}

#[test]
fn a_child_at_the_depth_limit_cannot_start_another() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "go one level down")]),
        // The child tries to go deeper.
        tasks(&[("t2", "and one more")]),
        answer("could not go deeper"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--max-subagent-depth", "1"],
        "nest",
    );
    run.assert_code(0);
    assert_eq!(
        run.all("subagent_start").len(),
        1,
        "only the first child started"
    );
    // The child's own task call failed; its answer came back to the parent.
    let child_request = &mock.requests()[2].body["messages"];
    let refused: &Value = child_request.as_array().unwrap().last().unwrap();
    assert_eq!(refused["role"], "tool");
    assert_eq!(
        refused["content"],
        "The subagent failed: the child run failed: subagents nest at most 1 deep (--max-subagent-depth); this one would be 2 deep"
    );
    assert_eq!(
        results(&run),
        vec![("could not go deeper".to_string(), false)]
    );
}

#[test]
fn a_failing_child_is_its_task_s_error_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "this one fails")]),
        status(400, r#"{"error":{"message":"bad request"}}"#),
        answer("noted the failure"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &["--subagents"], "try");
    run.assert_code(0);
    let end = run.first("subagent_end");
    assert_eq!(end["stopReason"], "error");
    let (text, is_error) = &results(&run)[0];
    assert!(*is_error);
    assert!(
        text.starts_with("The subagent failed: the child run failed: model request to"),
        "{text}"
    );
    assert!(text.contains("HTTP 400"), "{text}");
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
}

#[test]
fn without_the_flag_there_is_no_task_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run_dynamo(dir.path(), &mock.url, &[], "hi");
    run.assert_code(0);
    let tools = mock.requests()[0].body["tools"].as_array().unwrap().clone();
    assert!(tools.iter().all(|t| t["function"]["name"] != "task"));
    let mock = MockLlm::start(vec![answer("ok")]);
    run_dynamo(dir.path(), &mock.url, &["--subagents"], "hi").assert_code(0);
    let tools = mock.requests()[0].body["tools"].as_array().unwrap().clone();
    assert!(tools.iter().any(|t| t["function"]["name"] == "task"));
}

#[test]
fn a_child_s_calls_pass_the_parent_s_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "make a file")]),
        call("c1", "bash", r#"{"command":"touch made.txt"}"#),
        answer("bash was refused"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &[
            "--subagents",
            "--pre-tool-hook",
            r#"if grep -q '"tool_name":"bash"'; then echo 'no commands here' >&2; exit 2; fi"#,
        ],
        "delegate",
    );
    run.assert_code(0);
    assert!(!dir.path().join("made.txt").exists());
    // The parent's stream shows the hook deciding on the child's call.
    let decisions: Vec<(Value, Value)> = run
        .all("hook_result")
        .iter()
        .map(|h| (h["toolName"].clone(), h["decision"].clone()))
        .collect();
    assert_eq!(
        decisions,
        vec![
            (json!("task"), json!("allow")),
            (json!("bash"), json!("deny"))
        ]
    );
    let child_sees = &mock.requests()[2].body["messages"];
    let refused = child_sees.as_array().unwrap().last().unwrap();
    assert_eq!(refused["content"], "no commands here");
}

#[test]
fn a_signal_mid_fan_out_stops_every_child_and_its_commands() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // Each child runs a command that records its host pid, then sleeps.
    let sleeper = |name: &str| {
        json!({"command": format!(
            "sh -c 'read -r p _ < /proc/self/stat; echo $p > {name}; exec sleep 30'"
        )})
        .to_string()
    };
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "sleep one"), ("t2", "sleep two")]),
        call("c1", "bash", &sleeper("pid-a")),
        call("c2", "bash", &sleeper("pid-b")),
    ]);
    let mut child = crate::support::worker_command(dir.path())
        .args(["run", "--model", "dynamo/m", "--subagents", "--no-session"])
        .env("DYNAMO_BASE_URL", &mock.url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"fan out").unwrap();
    let pid = |name: &str| -> i32 {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(pid) = std::fs::read_to_string(dir.path().join(name))
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            assert!(std::time::Instant::now() < deadline, "{name} never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let sleepers = [pid("pid-a"), pid("pid-b")];
    let signalled = std::time::Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().cast_signed()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(signalled.elapsed() < Duration::from_secs(10));
    let run = crate::support::Run::from_output(output);
    run.assert_code(143);
    assert_eq!(run.last()["type"], "usage_snapshot");
    assert_eq!(run.all("subagent_end").len(), 2, "both children ended");
    for end in run.all("subagent_end") {
        assert_eq!(end["stopReason"], "aborted");
    }
    for sleeper in sleepers {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::path::Path::new(&format!("/proc/{sleeper}")).exists()
            && std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "process {sleeper} outlived the run"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn what_children_spend_counts_against_the_run_s_budget() {
    let dir = tempfile::tempdir().unwrap();
    let quick = Duration::ZERO;
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "one"), ("t2", "two")]),
        slow_answer("spent", quick),
        slow_answer("spent", quick),
        answer("never asked"),
    ]);
    // 15 tokens of its own, then 120 for each child: over 200 before the next request.
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--max-total-tokens", "200"],
        "spend",
    );
    run.assert_code(3);
    assert_eq!(
        mock.requests().len(),
        3,
        "no request after the budget ran out"
    );
    let limit = run.first("limit_reached");
    assert_eq!(limit["limit"], "max_total_tokens");
    assert_eq!(limit["used"], 255.0);
    assert_eq!(run.first("agent_end")["stopReason"], "budget_exceeded");
}

/// One assistant message calling `task` for agent `agent`.
fn agent_task(id: &str, agent: &str) -> Reply {
    Reply::Sse(vec![
        role(),
        tool_call(
            0,
            id,
            "task",
            &json!({"description": "review", "prompt": "review src", "agent": agent}).to_string(),
        ),
        finish("tool_calls"),
        usage(10, 5, 0),
        done(),
    ])
}

#[test]
fn an_agent_definition_narrows_the_child_and_cannot_widen_it() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\nmax-turns: 3\n---\nYou review code and report bugs only.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("fetcher.md"),
        "---\nname: fetcher\ndescription: Reads the web\ntools: WebFetch\n---\nFetch pages.\n",
    )
    .unwrap();
    let mock = MockLlm::start(vec![
        agent_task("t1", "reviewer"),
        answer("no bugs"),
        agent_task("t2", "fetcher"),
        agent_task("t3", "nobody"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--no-web-search"],
        "review",
    );
    run.assert_code(0);
    let requests = mock.requests();
    // The parent's task tool lists the agents.
    let task_tool = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()
        .clone();
    let listed = task_tool["function"]["description"].as_str().unwrap();
    assert!(
        listed.contains("- fetcher: Reads the web\n- reviewer: Reviews code for bugs"),
        "{listed}"
    );
    // The reviewer's child: only read and grep, with its instructions.
    let child = &requests[1].body;
    let names: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "grep"]);
    let system = child["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("\n\nYou review code and report bugs only.\n"),
        "{system}"
    );
    assert_eq!(run.first("subagent_start")["agent"], "reviewer");
    let answers = results(&run);
    assert_eq!(answers[0], ("no bugs".to_string(), false));
    // A definition asking for a tool the run does not have starts nothing.
    assert_eq!(
        answers[1],
        (
            "The subagent failed: the child run failed: a subagent cannot have tools its parent does not: web_fetch".to_string(),
            true
        )
    );
    assert_eq!(
        answers[2],
        (
            "No agent named \"nobody\"; the agents are: fetcher, reviewer".to_string(),
            true
        )
    );
    assert_eq!(run.all("subagent_start").len(), 1);
}

#[test]
fn with_full_events_a_child_s_lines_come_tagged_between_its_start_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "say hi")]),
        call("c1", "bash", r#"{"command":"echo hi"}"#),
        answer("said hi"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--subagent-events", "full"],
        "delegate",
    );
    run.assert_code(0);
    let header_id = run.events[0]["id"].clone();
    let start = run.first("subagent_start").clone();
    let child_id = start["childSessionId"].clone();
    let position = |pred: &dyn Fn(&Value) -> bool| run.events.iter().position(pred).unwrap();
    let started = position(&|e| e["type"] == "subagent_start");
    let ended = position(&|e| e["type"] == "subagent_end");
    let tagged: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e.get("subagent").is_some())
        .collect();
    assert!(!tagged.is_empty());
    for line in &tagged {
        assert_eq!(
            line["subagent"],
            json!({"toolCallId": "t1", "childSessionId": child_id, "depth": 1})
        );
        assert_eq!(line["sessionId"], child_id, "a child's line is its own");
    }
    assert!(
        tagged.iter().all(|e| e["type"] != "session"),
        "no second header"
    );
    let child_types: Vec<&str> = tagged.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(
        child_types.contains(&"tool_execution_end"),
        "{child_types:?}"
    );
    assert_eq!(child_types.last(), Some(&"usage_snapshot"));
    let first_tagged = position(&|e| e.get("subagent").is_some());
    let last_tagged = run
        .events
        .iter()
        .rposition(|e| e.get("subagent").is_some())
        .unwrap();
    assert!(started < first_tagged && last_tagged < ended);
    // Every other line is the run's own.
    for line in run
        .events
        .iter()
        .skip(1)
        .filter(|e| e.get("subagent").is_none())
    {
        assert_eq!(line["sessionId"], header_id);
    }
    // Without the flag, none of the child's lines.
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "say hi")]),
        answer("said hi"),
        answer("done"),
    ]);
    let quiet = run_dynamo(dir.path(), &mock.url, &["--subagents"], "delegate");
    assert!(quiet.events.iter().all(|e| e.get("subagent").is_none()));
}

#[test]
fn a_child_s_requests_and_trace_rows_carry_its_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let traced = traced_fan_out(dir.path());
    let (mock, trace) = (&traced.mock, &traced.trace);
    let (parent, child) = (traced.parent.clone(), traced.child.clone());
    let requests = mock.requests();
    // The parent's requests name only it; the child's name it and its parent.
    let context = |i: usize| requests[i].body["nvext"]["agent_context"].clone();
    assert_eq!(context(0)["trajectory_id"], parent.as_str());
    assert!(context(0).get("parent_trajectory_id").is_none());
    for i in [1, 2] {
        assert_eq!(context(i)["trajectory_id"], child.as_str(), "request {i}");
        assert_eq!(context(i)["parent_trajectory_id"], parent.as_str());
        assert_eq!(context(i)["session_id"], context(0)["session_id"]);
        assert_eq!(
            requests[i]
                .headers
                .get("x-dynamo-parent-session-id")
                .map(String::as_str),
            Some(parent.as_str())
        );
    }
    assert_eq!(context(3)["trajectory_id"], parent.as_str());
    // The trace file: the child's rows under its own trajectory, linked to the parent, and
    // its tool row names the parent's request that asked for the child.
    let rows: Vec<Value> = crate::support::read_jsonl(trace)
        .into_iter()
        .map(|row| row["event"].clone())
        .collect();
    let child_rows: Vec<&Value> = rows
        .iter()
        .filter(|row| row["agent_context"]["trajectory_id"] == child.as_str())
        .collect();
    assert!(child_rows.len() >= 3, "{rows:?}");
    for row in &child_rows {
        assert_eq!(
            row["agent_context"]["parent_trajectory_id"],
            parent.as_str()
        );
    }
    let child_tool = child_rows
        .iter()
        .find(|row| row["event_type"] == "tool_end")
        .unwrap();
    let asked_by = requests[0].headers.get("x-request-id").unwrap();
    assert_eq!(child_tool["tool"]["parent_request_id"], asked_by.as_str());
}

#[test]
fn a_definition_s_model_and_thinking_apply_and_each_child_s_usage_is_itemized() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join(".pi/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("quick.md"),
        "---\nname: quick\ndescription: Answers fast\nmodel: dynamo/small-model\nthinking: high\n---\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("elsewhere.md"),
        "---\nname: elsewhere\ndescription: Another provider\nmodel: openai/gpt-4o\n---\n",
    )
    .unwrap();
    let mock = MockLlm::start(vec![
        agent_task("t1", "quick"),
        slow_answer("quick answer", Duration::ZERO),
        agent_task("t2", "elsewhere"),
        answer("done"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &["--subagents"], "delegate");
    run.assert_code(0);
    let requests = mock.requests();
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(requests[1].body["model"], "small-model");
    assert_eq!(requests[1].body["reasoning_effort"], "high");
    assert!(requests[0].body.get("reasoning_effort").is_none());
    assert_eq!(
        results(&run)[1],
        (
            "The subagent failed: the child run failed: a subagent's model must be one the run's provider serves (dynamo/<id>), not \"openai/gpt-4o\"".to_string(),
            true
        )
    );
    let itemized = run.stats()["subagents"].as_array().unwrap().clone();
    assert_eq!(itemized.len(), 1);
    assert_eq!(itemized[0]["agent"], "quick");
    assert_eq!(
        itemized[0]["childSessionId"],
        run.first("subagent_start")["childSessionId"]
    );
    assert_eq!(itemized[0]["tokens"]["total"], 120);
    assert_eq!(itemized[0]["llmRequests"], 1);
}

#[test]
fn a_child_s_session_file_sits_beside_the_parent_s_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "look")]),
        answer("seen it"),
        answer("done"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &[
            "--subagents",
            "--session-dir",
            sessions.path().to_str().unwrap(),
        ],
        "delegate",
    );
    run.assert_code(0);
    let parent_file = run.events[0]["sessionFile"].as_str().unwrap().to_string();
    let start = run.first("subagent_start");
    let child_file = start["sessionFile"].as_str().unwrap().to_string();
    assert_eq!(
        std::path::Path::new(&child_file).parent(),
        std::path::Path::new(&parent_file).parent()
    );
    let child = crate::support::read_jsonl(std::path::Path::new(&child_file));
    assert_eq!(child[0]["type"], "session");
    assert_eq!(child[0]["id"], start["childSessionId"]);
    assert_eq!(child[0]["parentSession"], run.events[0]["id"]);
    let texts: Vec<String> = child
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(texts, ["look", "seen it"]);
    // With --no-session, none.
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "look")]),
        answer("seen it"),
        answer("done"),
    ]);
    let quiet = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--no-session"],
        "delegate",
    );
    assert!(quiet.first("subagent_start").get("sessionFile").is_none());
}

#[test]
fn a_chain_three_deep_runs_within_a_depth_of_three() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "level one")]),
        tasks(&[("t2", "level two")]),
        tasks(&[("t3", "level three")]),
        answer("bottom"),
        answer("level two saw bottom"),
        answer("level one saw two"),
        answer("top saw one"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &[
            "--subagents",
            "--max-subagent-depth",
            "3",
            "--subagent-events",
            "full",
        ],
        "go deep",
    );
    run.assert_code(0);
    // With full events, the deeper starts come tagged by the child that started them.
    let depths: Vec<u64> = run
        .all("subagent_start")
        .iter()
        .map(|s| s["depth"].as_u64().unwrap())
        .collect();
    assert_eq!(depths, [1, 2, 3]);
    // The run's own task call got level one's answer; the deeper answers came tagged.
    let own: Vec<&Value> = run
        .all("tool_execution_end")
        .into_iter()
        .filter(|e| e.get("subagent").is_none())
        .collect();
    assert_eq!(own.len(), 1);
    assert_eq!(crate::support::result_text(own[0]), "level one saw two");
    // Each level's parent is the level above.
    let starts = run.all("subagent_start");
    assert_eq!(starts[1]["parentSessionId"], starts[0]["childSessionId"]);
    assert_eq!(starts[2]["parentSessionId"], starts[1]["childSessionId"]);
}

#[test]
fn the_timeout_mid_fan_out_stops_every_child_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let sleep = json!({"command": "sleep 30"}).to_string();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "one"), ("t2", "two")]),
        call("c1", "bash", &sleep),
        call("c2", "bash", &sleep),
    ]);
    let started = std::time::Instant::now();
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--timeout", "2s"],
        "fan out",
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    run.assert_code(3);
    assert_eq!(run.first("limit_reached")["limit"], "timeout");
    let ends = run.all("subagent_end");
    assert_eq!(ends.len(), 2);
    assert!(
        ends.iter().all(|e| e["stopReason"] == "timeout"),
        "{ends:?}"
    );
}

#[test]
fn perfetto_draws_each_child_on_a_track_named_by_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let traced = traced_fan_out(dir.path());
    let (trace, parent, child) = (&traced.trace, &traced.parent, &traced.child);
    let out = dir.path().join("trace.json");
    let converted = crate::support::worker_command(dir.path())
        .args(["trace", "perfetto"])
        .arg(trace)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(converted.status.success());
    let chrome: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let tracks: Vec<String> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tracks.contains(parent), "{tracks:?}");
    assert!(
        tracks.contains(&format!("{child} (parent {parent})")),
        "{tracks:?}"
    );
}

#[test]
fn resuming_the_run_keeps_what_its_children_answered() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "find the answer")]),
        answer("forty-two"),
        answer("the child found it"),
    ]);
    let dir_arg = sessions.path().to_str().unwrap();
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--session-dir", dir_arg],
        "delegate",
    );
    run.assert_code(0);
    let file = run.events[0]["sessionFile"].as_str().unwrap().to_string();
    let mock = MockLlm::start(vec![answer("still forty-two")]);
    let resumed = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--session-dir", dir_arg, "--resume", &file],
        "what was it?",
    );
    resumed.assert_code(0);
    let sent = mock.requests()[0].body["messages"].clone();
    let task_result = sent
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "t1")
        .unwrap()
        .clone();
    assert_eq!(task_result["content"], "forty-two");
}

#[test]
fn an_agent_with_an_output_schema_returns_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join(".pi/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("verdict.json"),
        r#"{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}},"additionalProperties":false}"#,
    )
    .unwrap();
    std::fs::write(
        agents.join("judge.md"),
        "---\nname: judge\ndescription: Says yes or no\noutput-schema: verdict.json\n---\nAnswer with the verdict.\n",
    )
    .unwrap();
    let mock = MockLlm::start(vec![
        agent_task("t1", "judge"),
        answer("```json\n{\"ok\": true}\n```"),
        agent_task("t2", "judge"),
        answer("yes"),
        answer("still yes"),
        answer("done"),
    ]);
    let run = run_dynamo(dir.path(), &mock.url, &["--subagents"], "judge it");
    run.assert_code(0);
    let ends = run.all("tool_execution_end");
    assert_eq!(crate::support::result_text(ends[0]), r#"{"ok":true}"#);
    assert_eq!(
        ends[0]["result"]["details"]["structuredOutput"],
        json!({"ok": true})
    );
    // The child is asked to keep to the schema, and one that cannot is the task's error.
    let child_system = mock.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        child_system.contains("valid against this JSON Schema"),
        "{child_system}"
    );
    let (failed, is_error) = &results(&run)[1];
    assert!(*is_error);
    assert!(
        failed.starts_with("The subagent failed: the child run failed: the final answer does not match --output-schema"),
        "{failed}"
    );
}

#[test]
fn max_subagents_makes_the_others_wait_their_turn() {
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(300);
    let mock = MockLlm::start(vec![
        tasks(&[("t1", "one"), ("t2", "two")]),
        slow_answer("first", delay),
        slow_answer("second", delay),
        answer("both"),
    ]);
    let run = run_dynamo(
        dir.path(),
        &mock.url,
        &["--subagents", "--max-subagents", "1"],
        "fan out",
    );
    run.assert_code(0);
    let requests = mock.requests();
    // The second child asked only once the first had its answer.
    let gap = requests[2].at - requests[1].at;
    assert!(
        gap >= delay,
        "the second child started {gap:?} after the first"
    );
    assert_eq!(results(&run).len(), 2);
}
