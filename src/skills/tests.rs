use super::*;

fn skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
    )
    .unwrap();
}

#[test]
fn project_global_and_explicit_skills_are_found_nearest_first() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    let cwd = repo.join("pkg");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let home = root.path().join("home");
    skill(&cwd.join(".pi/skills/near"), "near", "Nearest.");
    skill(
        &repo.join(".agents/skills/shared"),
        "shared",
        "From the repo root.",
    );
    skill(&home.join(".pi/agent/skills/shared"), "shared", "Shadowed.");
    skill(&home.join(".agents/skills/global"), "global", "Global.");
    // Above the git root: not looked at.
    skill(&root.path().join(".pi/skills/outside"), "outside", "No.");
    let extra = root.path().join("extra");
    skill(&extra.join("one"), "one", "Explicit.");

    let settings = Settings {
        paths: vec![extra.clone(), PathBuf::from("missing")],
        no_discovery: false,
        home: Some(home),
    };
    let skills = Skills::discover(&settings, &cwd);
    let names: Vec<&str> = skills.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["one", "near", "shared", "global"]);
    assert_eq!(skills.status.status, SkillsState::Configured);
    assert_eq!(skills.status.discovered, 4);
    assert_eq!(skills.status.mapped_paths, [extra.display().to_string()]);
    let problems: Vec<&str> = skills
        .status
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(problems, ["another skill named 'shared' was found first"]);
    assert_eq!(
        skills.warnings,
        ["skills: skill path not found, ignoring: missing"]
    );
    let section = skills.prompt_section().unwrap();
    assert!(section.contains("<name>near</name>\n    <description>Nearest.</description>"));
    assert!(section.contains(&format!(
        "<location>{}</location>",
        cwd.join(".pi/skills/near/SKILL.md").display()
    )));
}

#[test]
fn no_skills_keeps_explicit_paths_and_bad_frontmatter_is_a_problem_not_a_failure() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path();
    skill(&cwd.join(".pi/skills/found"), "found", "Discovered.");
    let one = cwd.join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::write(
        one.join("SKILL.md"),
        "---\nname: one\n---\nno description\n",
    )
    .unwrap();
    let single = cwd.join("single.md");
    std::fs::write(
        &single,
        "---\ndescription: A file given directly.\ndisable-model-invocation: true\n---\n",
    )
    .unwrap();

    let settings = Settings {
        paths: vec![one, single.clone()],
        no_discovery: true,
        home: None,
    };
    let skills = Skills::discover(&settings, cwd);
    assert_eq!(skills.skills().len(), 1);
    assert!(!skills.skills()[0].model_invocable);
    assert_eq!(skills.skills()[0].file, single);
    assert_eq!(
        skills.status.problems[0].message,
        "invalid frontmatter: no description"
    );
    // Not model-invocable: not in the prompt.
    assert!(skills.prompt_section().is_none());

    let none = Skills::discover(
        &Settings {
            no_discovery: true,
            ..Settings::default()
        },
        cwd,
    );
    assert_eq!(none.status.status, SkillsState::Disabled);
    assert_eq!(none.status.discovered, 0);
}
