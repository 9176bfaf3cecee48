use super::*;
use crate::tools::ToolSet;

#[test]
fn context_files_come_root_first_one_per_directory() {
    let root = tempfile::tempdir().unwrap();
    let deep = root.path().join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(root.path().join("AGENTS.md"), "top").unwrap();
    std::fs::write(root.path().join("a/CLAUDE.md"), "middle").unwrap();
    std::fs::write(deep.join("AGENTS.md"), "deep").unwrap();
    std::fs::write(deep.join("CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
    let found: Vec<String> = context_files(&deep)
        .files
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let ours: Vec<&str> = found
        .iter()
        .map(String::as_str)
        .filter(|t| ["top", "middle", "deep"].contains(t))
        .collect();
    assert_eq!(ours, vec!["top", "middle", "deep"]);
}

#[test]
fn the_prompt_lists_tools_then_context_then_date_and_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let tools = ToolSet::select(ToolSet::all_builtin(), None).unwrap();
    let (prompt, _) = build(
        &PromptConfig::default(),
        &tools,
        dir.path(),
        "2026-11-22",
        &[],
    );
    assert!(prompt.starts_with("You are worker, an autonomous coding agent."));
    assert!(prompt.contains("\n- read: Read file contents\n"));
    let instructions = format!(
        "<project_instructions path=\"{}\">\nUse tabs.\n</project_instructions>",
        dir.path().join("AGENTS.md").display()
    );
    assert!(prompt.contains(&instructions), "{prompt}");
    assert!(prompt.ends_with(&format!(
        "Current date: 2026-11-22\nCurrent working directory: {}",
        dir.path().display()
    )));
}

#[test]
fn a_custom_prompt_replaces_the_preamble_and_context_files_can_be_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let config = PromptConfig {
        system: Some("Custom.".into()),
        append: Some("Extra.".into()),
        context_files: false,
    };
    let (prompt, _) = build(&config, &ToolSet::default(), dir.path(), "2026-11-22", &[]);
    assert_eq!(
        prompt,
        format!(
            "Custom.\n\nExtra.\n\nCurrent date: 2026-11-22\nCurrent working directory: {}",
            dir.path().display()
        )
    );
}
