use super::*;
use crate::config::MapEnv;

fn env(vars: &[(&str, &str)]) -> MapEnv {
    MapEnv(
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

#[test]
fn the_agent_dir_is_under_home_unless_the_variable_moves_it() {
    assert_eq!(
        agent_dir(&env(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.pi/agent"))
    );
    assert_eq!(
        agent_dir(&env(&[("HOME", "/h"), (AGENT_DIR_ENV, "/etc/pi")])),
        Some(PathBuf::from("/etc/pi"))
    );
    assert_eq!(
        agent_dir(&env(&[("HOME", "/h"), (AGENT_DIR_ENV, "~/pi")])),
        Some(PathBuf::from("/h/pi"))
    );
    assert_eq!(agent_dir(&env(&[])), None);
}

fn settings_of(text: &str) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("settings.json"), text).unwrap();
    settings(dir.path()).map_err(|err| err.to_string())
}

#[test]
fn the_retry_block_is_read_field_by_field() {
    let read = settings_of(r#"{"theme":"dark","retry":{"enabled":false,"maxRetries":10,"baseDelayMs":1000,"provider":{"maxRetries":0}}}"#)
        .unwrap();
    assert_eq!(
        read.retry,
        FileRetry {
            enabled: Some(false),
            max_retries: Some(10),
            base_delay: Some(Duration::from_millis(1000)),
        }
    );
    assert!(read.warnings.is_empty());
    assert_eq!(settings_of("{}").unwrap().retry, FileRetry::default());
}

#[test]
fn a_missing_file_is_nothing_and_a_broken_one_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let none = settings(dir.path()).unwrap();
    assert_eq!(none.retry, FileRetry::default());
    assert!(none.warnings.is_empty());
    let broken = settings_of("{not json").unwrap();
    assert_eq!(broken.retry, FileRetry::default());
    assert!(
        broken.warnings[0].contains("not JSON"),
        "{:?}",
        broken.warnings
    );
}

#[test]
fn a_retry_value_of_the_wrong_type_is_refused() {
    for (block, why) in [
        (r#""yes""#, "retry must be an object"),
        (r#"{"enabled":"no"}"#, "retry.enabled must be true or false"),
        (
            r#"{"maxRetries":-1}"#,
            "retry.maxRetries must be a non-negative integer",
        ),
        (
            r#"{"maxRetries":"5"}"#,
            "retry.maxRetries must be a non-negative integer",
        ),
        (
            r#"{"baseDelayMs":0}"#,
            "retry.baseDelayMs must be a positive integer",
        ),
    ] {
        let err = settings_of(&format!(r#"{{"retry":{block}}}"#)).unwrap_err();
        assert!(err.ends_with(&format!("settings.json: {why}")), "{err}");
    }
}
