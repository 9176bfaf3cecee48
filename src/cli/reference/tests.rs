use super::*;

#[test]
fn the_readme_flag_table_is_the_one_clap_describes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README.md lacks the flag table marker")
        + BEGIN.len();
    let end = readme
        .find(END)
        .expect("README.md lacks the flag table end marker");
    let expected = format!("\n\n{}\n", flag_table());
    let updated = format!("{}{expected}{}", &readme[..start], &readme[end..]);
    if crate::bless::bless(env!("CARGO_MANIFEST_DIR").as_ref(), "README.md", &updated)
        .unwrap_or_else(|err| panic!("{err}"))
    {
        return;
    }
    assert!(
        readme[start..end] == expected,
        "README.md's flag table differs from the flags; run WORKER_BLESS=README.md cargo test --lib flag_table and review the diff it prints:\n{expected}"
    );
}

#[test]
fn defaults_come_from_the_constants() {
    let table = flag_table();
    let row = |flag: &str| {
        table
            .lines()
            .find(|line| line.starts_with(&format!("| `{flag}")))
            .unwrap()
            .to_string()
    };
    use crate::config::{FlagDuration, defaults};
    let cell = |value: String| format!("| `{value}` |");
    assert!(
        row("--idle-timeout").contains(&cell(FlagDuration(defaults::IDLE_TIMEOUT).to_string())),
        "{table}"
    );
    assert!(
        row("--bash-timeout").contains(&cell(FlagDuration(defaults::BASH_TIMEOUT_MAX).to_string())),
        "{table}"
    );
    assert!(
        // Stated in the help (Pi's settings.json comes between the flag and the default).
        row("--max-retries").contains(&format!("| {} |", defaults::MAX_RETRIES)),
        "{table}"
    );
    assert!(row("-m, --model").contains("| required |"), "{table}");
}
