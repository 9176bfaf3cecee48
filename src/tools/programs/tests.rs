use super::*;

fn path_of(command: &std::process::Command) -> Option<Option<OsString>> {
    command
        .get_envs()
        .find(|(key, _)| *key == "PATH")
        .map(|(_, value)| value.map(OsStr::to_os_string))
}

#[test]
fn relative_and_empty_entries_are_dropped_and_the_rest_kept_in_order() {
    let mut command = std::process::Command::new(POSIX_SHELL);
    command.env("PATH", "bin::/usr/local/bin:./x:/usr/bin:node_modules/.bin");
    absolute_path_only(&mut command);
    assert_eq!(
        path_of(&command),
        Some(Some(OsString::from("/usr/local/bin:/usr/bin")))
    );
}

#[test]
fn a_path_of_absolute_entries_or_none_at_all_is_left_as_it_is() {
    let mut command = std::process::Command::new(POSIX_SHELL);
    command.env("PATH", "/usr/bin:/bin");
    absolute_path_only(&mut command);
    assert_eq!(
        path_of(&command),
        Some(Some(OsString::from("/usr/bin:/bin")))
    );
    let mut removed = std::process::Command::new(POSIX_SHELL);
    removed.env_remove("PATH");
    absolute_path_only(&mut removed);
    assert_eq!(path_of(&removed), Some(None));
}

#[test]
fn absolute_dirs_keep_the_order_of_path() {
    let dirs: Vec<PathBuf> = absolute_dirs(OsStr::new("/b:a:/a:")).collect();
    assert_eq!(dirs, vec![PathBuf::from("/b"), PathBuf::from("/a")]);
}
