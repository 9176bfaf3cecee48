use super::*;

#[test]
fn relative_paths_join_the_cwd_and_at_prefixes_are_dropped() {
    let cwd = Path::new("/work");
    assert_eq!(
        resolve(cwd, "a/b.rs").unwrap(),
        PathBuf::from("/work/a/b.rs")
    );
    assert_eq!(
        resolve(cwd, "@a/b.rs").unwrap(),
        PathBuf::from("/work/a/b.rs")
    );
    assert_eq!(resolve(cwd, "/etc/x").unwrap(), PathBuf::from("/etc/x"));
    assert_eq!(
        resolve(cwd, "my\u{00A0}file.txt").unwrap(),
        PathBuf::from("/work/my file.txt")
    );
}

#[test]
fn tilde_means_home() {
    // The test environment has a HOME; read it independently of the code under test.
    let home = PathBuf::from(std::env::var_os("HOME").expect("tests run with HOME set"));
    assert_eq!(home_dir(), Some(home.clone()));
    assert_eq!(resolve(Path::new("/w"), "~/x").unwrap(), home.join("x"));
    assert_eq!(resolve(Path::new("/w"), "~").unwrap(), home.join(""));
    assert_eq!(
        resolve(Path::new("/w"), "~x").unwrap(),
        PathBuf::from("/w/~x")
    );
}

#[test]
fn nul_bytes_and_empty_paths_are_refused_with_a_message() {
    assert_eq!(
        resolve(Path::new("/w"), "a\0b").unwrap_err().message,
        "Invalid path \"a\\0b\": paths cannot contain a NUL byte"
    );
    assert_eq!(
        resolve(Path::new("/w"), "@").unwrap_err().message,
        "Invalid path: the path is empty"
    );
}

#[test]
fn relative_posix_paths() {
    assert_eq!(relative_posix(Path::new("/a"), Path::new("/a/b/c")), "b/c");
    assert_eq!(relative_posix(Path::new("/a"), Path::new("/a")), ".");
    assert_eq!(relative_posix(Path::new("/a"), Path::new("/x/y")), "x/y");
    assert_eq!(
        relative_posix(Path::new("/a"), Path::new("../up/./x")),
        "../up/x"
    );
}

#[test]
fn an_empty_or_missing_home_names_no_directory() {
    assert_eq!(home_from(None), None);
    assert_eq!(home_from(Some("".into())), None);
    assert_eq!(home_from(Some("/h".into())), Some(PathBuf::from("/h")));
}
