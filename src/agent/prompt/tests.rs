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

#[test]
fn a_large_context_file_is_cut_at_its_cap_without_splitting_a_character() {
    let dir = tempfile::tempdir().unwrap();
    let cap = InputKind::ContextFile.max_bytes() as usize;
    // 'é' is two bytes: the cap falls inside one.
    let text = format!("{}{}", "a", "é".repeat(cap));
    std::fs::write(dir.path().join("AGENTS.md"), &text).unwrap();
    let found = context_files(dir.path());
    let (_, kept) = found.files.last().unwrap();
    assert!(kept.starts_with(&text[..cap - 1]));
    assert!(kept.ends_with(&format!(
        "\n[... cut at {} of {} bytes; read the file for the rest]",
        cap - 1,
        text.len()
    )));
    let cut = found.cuts.last().unwrap();
    assert_eq!(cut.reason, TruncationReason::FileCap);
    assert_eq!(
        (cut.kept_bytes, cut.dropped_bytes, cut.cap_bytes),
        (
            (cap - 1) as u64,
            (text.len() - cap + 1) as u64,
            Some(cap as u64)
        )
    );
}

#[test]
fn nested_context_files_share_a_total_cap_and_the_nearest_are_kept() {
    let root = tempfile::tempdir().unwrap();
    let mut dir = root.path().to_path_buf();
    let each = 8 * 1024;
    for depth in 0..12 {
        dir = dir.join(format!("d{depth}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("AGENTS.md"), "x".repeat(each)).unwrap();
    }
    let found = context_files(&dir);
    let ours: Vec<&(PathBuf, String)> = found
        .files
        .iter()
        .filter(|(path, _)| path.starts_with(root.path()))
        .collect();
    assert_eq!(ours.len(), 12, "every file is named to the model");
    // The eight nearest fill the 64 KiB; the four farthest are cut to nothing.
    let whole = ours.iter().filter(|(_, text)| text.len() == each).count();
    assert_eq!(whole, 8);
    assert!(
        ours[..4]
            .iter()
            .all(|(_, t)| t.starts_with("\n[... cut at 0 of 8192"))
    );
    let cuts: Vec<_> = found
        .cuts
        .iter()
        .filter(|c| c.path.starts_with(&root.path().display().to_string()))
        .collect();
    assert_eq!(cuts.len(), 4);
    for (cut, (path, _)) in cuts.iter().zip(&ours) {
        assert_eq!(cut.path, path.display().to_string());
        assert_eq!(cut.reason, TruncationReason::TotalCap);
        assert_eq!((cut.kept_bytes, cut.dropped_bytes), (0, each as u64));
        assert_eq!(cut.cap_bytes, Some(CONTEXT_FILES_TOTAL_MAX_BYTES));
    }
}
