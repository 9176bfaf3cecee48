use std::time::{Duration, Instant};

use super::*;

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

fn only_problem(defs: &Definitions) -> &DefinitionProblem {
    assert_eq!(defs.problems().len(), 1, "{:?}", defs.problems());
    &defs.problems()[0]
}

#[test]
fn a_claude_code_definition_maps_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "reviewer.md",
        "---\nname: reviewer\ndescription: Reviews a diff for bugs   # a comment\n\
         tools: Read, Write, Edit, MultiEdit, Bash, Grep, Glob, LS, WebFetch, WebSearch, TodoWrite\n\
         model: dynamo/some-model\nthinking: low\nmax-turns: 8\ncolor: blue\n---\n\n\
         You are a careful reviewer.\n\nSay what is missing.\n\n",
    );
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    assert!(defs.problems().is_empty(), "{:?}", defs.problems());
    let agent = defs.get("reviewer").unwrap();
    assert_eq!(
        agent,
        &AgentDefinition {
            name: "reviewer".into(),
            description: "Reviews a diff for bugs".into(),
            tools: Some(
                [
                    "read",
                    "write",
                    "edit",
                    "bash",
                    "grep",
                    "find",
                    "ls",
                    "web_fetch",
                    "web_search",
                    "todowrite"
                ]
                .map(String::from)
                .to_vec()
            ),
            model: Some("dynamo/some-model".into()),
            thinking: Some("low".into()),
            max_turns: Some(8),
            output_schema: None,
            instructions: "You are a careful reviewer.\n\nSay what is missing.".into(),
            source: file,
        }
    );
}

#[test]
fn a_pi_definition_lists_its_tools_in_yaml() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "scout.md",
        "---\nname: scout\ndescription: Finds things\ntools:\n  - read\n  - \"grep\"  # search\n\n  - find\nmax_turns: 3\n---\nLook around.\n",
    );
    write(
        dir.path(),
        "flow.md",
        "---\nname: flow\ndescription: Flow list\ntools: [Read, 'Glob']\n---\n",
    );
    write(
        dir.path(),
        "flush.md",
        "---\nname: flush\ntools:\n- bash\n- ls\ndescription: Items in the key's column\n---\n",
    );
    write(
        dir.path(),
        "none.md",
        "---\nname: none\ntools:\ndescription: No tools at all\n---\n",
    );
    write(
        dir.path(),
        "parent.md",
        "---\nname: parent\ndescription: The parent's tools\n---\n",
    );
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    assert!(defs.problems().is_empty(), "{:?}", defs.problems());
    let tools = |name: &str| defs.get(name).unwrap().tools.clone();
    let list = |names: &[&str]| Some(names.iter().map(ToString::to_string).collect::<Vec<_>>());
    assert_eq!(tools("scout"), list(&["read", "grep", "find"]));
    assert_eq!(defs.get("scout").unwrap().max_turns, Some(3));
    assert_eq!(defs.get("scout").unwrap().instructions, "Look around.");
    assert_eq!(tools("flow"), list(&["read", "find"]));
    assert_eq!(tools("flush"), list(&["bash", "ls"]));
    assert_eq!(
        defs.get("flush").unwrap().description,
        "Items in the key's column"
    );
    assert_eq!(tools("none"), Some(vec![]));
    assert_eq!(tools("parent"), None);
    let parent = defs.get("parent").unwrap();
    assert_eq!(parent.instructions, "");
    assert_eq!(
        (parent.max_turns, &parent.thinking, &parent.model),
        (None, &None, &None)
    );
    // Sorted by name.
    let names: Vec<&str> = defs.all().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["flow", "flush", "none", "parent", "scout"]);
}

#[test]
fn the_first_of_two_same_named_definitions_wins() {
    let root = tempfile::tempdir().unwrap();
    let first = root.path().join("first");
    let second = root.path().join("second");
    let winner = write(&first, "a.md", "---\nname: dup\ndescription: First\n---\n");
    let loser = write(
        &second,
        "a.md",
        "---\nname: dup\ndescription: Second\n---\n",
    );
    // Within one directory too: `b.md` comes after `a.md`.
    let later = write(&first, "b.md", "---\nname: dup\ndescription: Later\n---\n");
    let defs = Definitions::read(&[first, second]);
    assert_eq!(defs.all().len(), 1);
    assert_eq!(defs.get("dup").unwrap().description, "First");
    assert_eq!(defs.get("dup").unwrap().source, winner);
    let paths: Vec<&Path> = defs.problems().iter().map(|p| p.path.as_path()).collect();
    assert_eq!(paths, [later.as_path(), loser.as_path()]);
    assert!(
        defs.problems()[1]
            .message
            .contains(&winner.display().to_string()),
        "{:?}",
        defs.problems()
    );
}

#[test]
fn a_file_that_cannot_be_used_is_a_problem_and_the_others_still_read() {
    let cases = [
        ("no-name.md", "---\ndescription: D\n---\n", "no name"),
        (
            "upper.md",
            "---\nname: Reviewer\ndescription: D\n---\n",
            "name 'Reviewer'",
        ),
        (
            "space.md",
            "---\nname: my agent\ndescription: D\n---\n",
            "name 'my agent'",
        ),
        (
            "underscore.md",
            "---\nname: my_agent\ndescription: D\n---\n",
            "name 'my_agent'",
        ),
        (
            "long.md",
            &format!("---\nname: {}\ndescription: D\n---\n", "a".repeat(65)),
            "longer than 64",
        ),
        ("no-desc.md", "---\nname: x\n---\n", "no description"),
        (
            "empty-desc.md",
            "---\nname: x\ndescription: \"  \"\n---\n",
            "no description",
        ),
        (
            "zero.md",
            "---\nname: x\ndescription: D\nmax-turns: 0\n---\n",
            "max-turns",
        ),
        (
            "minus.md",
            "---\nname: x\ndescription: D\nmax_turns: -2\n---\n",
            "max-turns",
        ),
        (
            "word.md",
            "---\nname: x\ndescription: D\nmax-turns: many\n---\n",
            "max-turns",
        ),
        (
            "think.md",
            "---\nname: x\ndescription: D\nthinking: extreme\n---\n",
            "thinking",
        ),
        ("plain.md", "Just text.\n", "start with a --- line"),
        ("open.md", "---\nname: x\ndescription: D\n", "no closing"),
    ];
    for (file, text, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let bad = write(dir.path(), file, text);
        write(
            dir.path(),
            "good.md",
            "---\nname: good\ndescription: Fine\n---\n",
        );
        let defs = Definitions::read(&[dir.path().to_path_buf()]);
        let problem = only_problem(&defs);
        assert_eq!(problem.path, bad, "{file}");
        assert!(problem.message.contains(says), "{file}: {problem}");
        let names: Vec<&str> = defs.all().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["good"], "{file}");
    }
    // The edges of what is allowed.
    let dir = tempfile::tempdir().unwrap();
    let longest = "a".repeat(64);
    write(
        dir.path(),
        "edge.md",
        &format!("---\nname: {longest}\ndescription: D\nthinking: xhigh\nmax-turns: 1\n---\n"),
    );
    write(
        dir.path(),
        "digits.md",
        "---\nname: 0-9-z\ndescription: D\nthinking: off\n---\n",
    );
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    assert!(defs.problems().is_empty(), "{:?}", defs.problems());
    assert_eq!(defs.get(&longest).unwrap().max_turns, Some(1));
    assert!(defs.get("0-9-z").is_some());
}

#[test]
fn only_md_files_directly_in_the_directory_are_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "---\nname: a\ndescription: A\n---\n");
    write(
        dir.path(),
        "notes.txt",
        "---\nname: txt\ndescription: T\n---\n",
    );
    write(dir.path(), "README", "not a definition");
    // A directory named like a definition, and one holding definitions: neither is read.
    std::fs::create_dir_all(dir.path().join("dir.md")).unwrap();
    write(
        &dir.path().join("nested"),
        "b.md",
        "---\nname: b\ndescription: B\n---\n",
    );
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    assert!(defs.problems().is_empty(), "{:?}", defs.problems());
    let names: Vec<&str> = defs.all().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["a"]);
}

#[test]
fn a_fifo_named_md_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("x.md");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    write(dir.path(), "y.md", "---\nname: y\ndescription: Y\n---\n");
    let start = Instant::now();
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    assert!(start.elapsed() < Duration::from_secs(2));
    let problem = only_problem(&defs);
    assert_eq!(problem.path, fifo);
    assert!(problem.message.contains("FIFO"), "{problem}");
    assert!(defs.get("y").is_some());
}

#[test]
fn a_missing_directory_is_fine_and_an_unlistable_one_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let defs = Definitions::read(&[dir.path().join("nope")]);
    assert!(defs.all().is_empty());
    assert!(defs.problems().is_empty(), "{:?}", defs.problems());
    // A file where a directory should be cannot be listed.
    let file = write(dir.path(), "file", "x");
    let defs = Definitions::read(std::slice::from_ref(&file));
    assert_eq!(only_problem(&defs).path, file);
}

#[test]
fn default_dirs_are_the_flags_then_pi_then_claude() {
    let cwd = Path::new("/repo");
    assert_eq!(
        Definitions::default_dirs(cwd, &[PathBuf::from("/abs"), PathBuf::from("rel")]),
        [
            PathBuf::from("/abs"),
            PathBuf::from("/repo/rel"),
            PathBuf::from("/repo/.pi/agents"),
            PathBuf::from("/repo/.claude/agents"),
        ]
    );
    assert_eq!(
        Definitions::default_dirs(cwd, &[]),
        [
            PathBuf::from("/repo/.pi/agents"),
            PathBuf::from("/repo/.claude/agents"),
        ]
    );
}

#[test]
fn no_input_panics() {
    let inputs = [
        "",
        "---",
        "---\n---",
        "\u{feff}---\r\nname: a\r\ndescription: D\r\n---\r\nBody\r\n",
        "---\n: x\n---\n",
        "---\nname: \"unclosed\n---\n",
        "---\ntools:\n  -\n  - #\n  x: y\nname: a\ndescription: D\n---\n",
        "---\nname: a\ndescription: é # ü\ntools: [,]\n---\n",
        "---\nname: a\ndescription: D\ntools: |\n  Read\n  Bash\n---\n",
        "---\nname: a\ndescription: D\nmax-turns: 99999999999999999999\n---\n",
    ];
    for text in inputs {
        let _ = parse(text, Path::new("x.md"));
    }
    let crlf = parse(inputs[3], Path::new("x.md")).unwrap();
    assert_eq!(
        (crlf.name.as_str(), crlf.instructions.as_str()),
        ("a", "Body")
    );
    let block = parse(inputs[8], Path::new("x.md")).unwrap();
    assert_eq!(block.tools, Some(vec!["read".into(), "bash".into()]));
}

#[test]
fn an_output_schema_is_read_beside_the_definition_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("verdict.json"),
        r#"{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.json"), r#"{"type": 7}"#).unwrap();
    std::fs::write(
        dir.path().join("judge.md"),
        "---\nname: judge\ndescription: Says yes or no\noutput-schema: verdict.json\n---\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.md"),
        "---\nname: bad\ndescription: Broken schema\noutput-schema: broken.json\n---\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lost.md"),
        "---\nname: lost\ndescription: No schema file\noutput-schema: nowhere.json\n---\n",
    )
    .unwrap();
    let defs = Definitions::read(&[dir.path().to_path_buf()]);
    let judge = defs.get("judge").unwrap();
    assert_eq!(
        judge.output_schema.as_ref().unwrap()["required"],
        serde_json::json!(["ok"])
    );
    assert!(defs.get("bad").is_none() && defs.get("lost").is_none());
    let messages: Vec<&str> = defs.problems().iter().map(|p| p.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("output-schema broken.json: not a valid JSON Schema")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("output-schema nowhere.json: cannot read")),
        "{messages:?}"
    );
}
