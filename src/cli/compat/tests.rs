use super::*;

fn args(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

#[test]
fn retry_base_delay_ms_becomes_a_duration_in_both_spellings() {
    assert_eq!(
        normalize(args(&["worker", "run", "--retry-base-delay-ms", "250"])).unwrap(),
        args(&["worker", "run", "--retry-base-delay", "250ms"])
    );
    assert_eq!(
        normalize(args(&["run", "--retry-base-delay-ms=5"])).unwrap(),
        args(&["run", "--retry-base-delay", "5ms"])
    );
    assert_eq!(
        normalize(args(&["run", "--retry-base-delay-ms", "0"]))
            .unwrap_err()
            .to_string(),
        "--retry-base-delay-ms must be a positive integer (got '0')"
    );
    assert_eq!(
        normalize(args(&["run", "--retry-base-delay-ms"]))
            .unwrap_err()
            .to_string(),
        "--retry-base-delay-ms requires a value"
    );
    assert_eq!(
        normalize(args(&["run", "--model", "m"])).unwrap(),
        args(&["run", "--model", "m"])
    );
}

#[test]
fn the_program_name_follows_argv0() {
    let name = |s: &str| program_name(Some(&OsString::from(s)));
    assert_eq!(name("/usr/local/bin/agentic-pi"), "agentic-pi");
    assert_eq!(name("./worker"), "worker");
    assert_eq!(name("something-else"), "worker");
    assert_eq!(program_name(None), "worker");
}
