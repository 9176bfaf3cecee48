use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

fn replace(path: &Path, policy: Option<&PathPolicy>, bytes: &[u8]) -> Result<(), String> {
    let target = WriteTarget::open(path, policy, true, "f").map_err(|e| e.to_string())?;
    target.replace(bytes).map_err(|e| e.to_string())
}

#[test]
fn keeps_the_mode_of_an_existing_file_and_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.sh");
    fs::write(&path, "old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
    replace(&path, None, b"new").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("script.sh")]);
}

#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
    let file = dir.path().join("f");
    fs::write(&file, "x").unwrap();
    let policy = PathPolicy::new(&[dir.path().to_path_buf()], &[]);
    for policy in [None, Some(&policy)] {
        let started = std::time::Instant::now();
        let target = WriteTarget::open(&fifo, policy, false, "pipe").unwrap();
        let err = target.read_regular("pipe", "edit").unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(
            err.message,
            "pipe is a FIFO, not a regular file; edit only works on regular files. Use bash for pipes and devices."
        );
        let target = WriteTarget::open(&file, policy, false, "f").unwrap();
        assert_eq!(target.read_regular("f", "edit").unwrap(), b"x");
        let target = WriteTarget::open(&dir.path().join("nope"), policy, false, "nope").unwrap();
        assert_eq!(
            target.read_regular("nope", "edit").unwrap_err().message,
            "File not found: nope"
        );
    }
}

#[test]
fn what_is_not_a_regular_file_is_named_by_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let block = block_device(dir.path());
    let cases = [
        (dir.path().join("sub"), "Path is a directory: x"),
        (
            fifo,
            "x is a FIFO, not a regular file; write only works on regular files. Use bash for pipes and devices.",
        ),
        (
            socket,
            "x is a socket, not a regular file; write only works on regular files. Use bash for pipes and devices.",
        ),
        (
            PathBuf::from("/dev/null"),
            "x is a character device, not a regular file; write only works on regular files. Use bash for pipes and devices.",
        ),
        (
            block,
            "x is a block device, not a regular file; write only works on regular files. Use bash for pipes and devices.",
        ),
    ];
    for (path, message) in cases {
        let target = WriteTarget::open(&path, None, false, "x").unwrap();
        let err = target.refuse_irregular("x", "write").unwrap_err();
        assert_eq!(err.message, message, "{}", path.display());
    }
    let file = dir.path().join("f");
    fs::write(&file, "x").unwrap();
    let target = WriteTarget::open(&file, None, false, "f").unwrap();
    assert!(target.refuse_irregular("f", "write").is_ok());
}

/// A block device to test with: one made in `dir` (as root), else one of the machine's.
fn block_device(dir: &Path) -> PathBuf {
    use nix::sys::stat::{SFlag, makedev, mknod};
    let made = dir.join("blk");
    if mknod(
        &made,
        SFlag::S_IFBLK,
        Mode::from_bits_truncate(0o600),
        makedev(7, 200),
    )
    .is_ok()
    {
        return made;
    }
    fs::read_dir("/dev")
        .unwrap()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| {
            use std::os::unix::fs::FileTypeExt;
            fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_block_device())
        })
        .expect("no block device: run as root (mknod) or on a machine with one in /dev")
}

#[test]
fn missing_directories_are_made_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let policy = PathPolicy::new(&[dir.path().to_path_buf()], &[]);
    let path = dir.path().join("a/b/f");
    let Err(err) = WriteTarget::open(&path, Some(&policy), false, "f") else {
        panic!("a missing directory was walked into");
    };
    assert_eq!(err.message, "File not found: f");
    assert!(
        !dir.path().join("a").exists(),
        "nothing made when not asked"
    );
    let target = WriteTarget::open(&path, Some(&policy), true, "f").unwrap();
    target.replace(b"x").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "x");
}

#[test]
fn an_opened_directory_is_listed_through_its_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("only.txt"), "x").unwrap();
    let fd = nix::fcntl::open(dir.path(), dir_flags(), Mode::empty()).unwrap();
    let names: Vec<_> = fs::read_dir(fd_path(&fd))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["only.txt"]);
}

#[test]
fn a_new_file_is_never_made_through_a_planted_link_or_over_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let aim = outside.path().join("aim");
    symlink(&aim, dir.path().join(".f.planted.tmp")).unwrap();
    fs::write(dir.path().join(".f.taken.tmp"), "old").unwrap();
    let target = WriteTarget::open(&dir.path().join("f"), None, false, "f").unwrap();
    for name in [".f.planted.tmp", ".f.taken.tmp"] {
        assert_eq!(
            target.create_new(OsStr::new(name)).unwrap_err(),
            Errno::EEXIST,
            "{name}"
        );
    }
    assert!(!aim.exists(), "nothing was made through the link");
    assert_eq!(
        fs::read_to_string(dir.path().join(".f.taken.tmp")).unwrap(),
        "old"
    );
    assert!(target.create_new(OsStr::new(".f.free.tmp")).is_ok());
}

#[test]
fn a_path_under_a_file_is_refused_when_it_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("file.txt"), "x").unwrap();
    let Err(err) = WriteTarget::open(&dir.path().join("file.txt/child"), None, false, "x") else {
        panic!("a file was opened as a directory");
    };
    assert_eq!(
        err.message,
        "Could not write x: Not a directory (os error 20)"
    );
}

#[test]
fn a_directory_that_can_be_written_but_not_listed_takes_writes() {
    // Directories on the way are opened as paths (O_PATH), which needs no read permission.
    if crate::tools::testing::rerun_unprivileged(
        "tools::confined::tests::a_directory_that_can_be_written_but_not_listed_takes_writes",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let drop_box = dir.path().join("box");
    fs::create_dir(&drop_box).unwrap();
    fs::set_permissions(&drop_box, fs::Permissions::from_mode(0o300)).unwrap();
    assert!(
        fs::read_dir(&drop_box).is_err(),
        "the directory is listable for this user"
    );
    let policy = PathPolicy::new(&[dir.path().to_path_buf()], &[]);
    for (name, policy) in [("a", None), ("b", Some(&policy))] {
        replace(&drop_box.join(name), policy, b"x").unwrap();
    }
    fs::set_permissions(&drop_box, fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(fs::read_to_string(drop_box.join("b")).unwrap(), "x");
}

#[test]
fn writes_through_a_symlink_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.txt");
    let link = dir.path().join("link.txt");
    fs::write(&real, "old").unwrap();
    symlink(&real, &link).unwrap();
    for policy in [
        None,
        Some(PathPolicy::new(&[dir.path().to_path_buf()], &[])),
    ] {
        replace(&link, policy.as_ref(), b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }
}

/// A repository with a link out of it, and a directory outside.
struct Scene {
    _root: tempfile::TempDir,
    repo: PathBuf,
    outside: PathBuf,
    policy: PathPolicy,
}

fn scene() -> Scene {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (repo, outside) = (base.join("repo"), base.join("outside"));
    fs::create_dir_all(repo.join("sub")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    symlink(&outside, repo.join("out")).unwrap();
    let policy = PathPolicy::new(std::slice::from_ref(&repo), &[]);
    Scene {
        _root: root,
        repo,
        outside,
        policy,
    }
}

#[test]
fn a_link_then_dot_dot_through_a_missing_directory_is_refused() {
    let s = scene();
    // repo/out -> outside; outside/new does not exist; `..` would land in outside's parent.
    for rel in [
        "out/new/../x.txt",
        "out/x.txt",
        "sub/new/../../../x.txt",
        "out/deeper/new/file",
    ] {
        let err = replace(&s.repo.join(rel), Some(&s.policy), b"x").unwrap_err();
        assert!(err.starts_with("Access denied: "), "{rel}: {err}");
    }
    assert_eq!(fs::read_dir(&s.outside).unwrap().count(), 0);
    assert!(!s.outside.parent().unwrap().join("x.txt").exists());
}

#[test]
fn a_directory_swapped_for_a_symlink_after_the_check_is_not_followed() {
    let s = scene();
    let path = s.repo.join("sub/deep/file.txt");
    // Resolved while `sub/deep` is a real directory...
    fs::create_dir(s.repo.join("sub/deep")).unwrap();
    let resolved = resolve_for_write(&path).unwrap();
    let root = s.policy.writable_root_of(&resolved).unwrap().to_path_buf();
    let rel = resolved.strip_prefix(&root).unwrap();
    // ...then swapped for a link out before the write walks the path.
    fs::remove_dir(s.repo.join("sub/deep")).unwrap();
    symlink(&s.outside, s.repo.join("sub/deep")).unwrap();
    let err = WriteTarget::walk(&root, rel, true, "sub/deep/file.txt")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("symlink"), "{err}");
    // And a path that already leads out when it is resolved is refused before any walk.
    let err = replace(&path, Some(&s.policy), b"x").unwrap_err();
    assert!(err.contains("outside the sandbox's writable area"), "{err}");
    assert_eq!(fs::read_dir(&s.outside).unwrap().count(), 0);
}

#[test]
fn a_file_swapped_for_a_symlink_is_replaced_not_written_through() {
    let s = scene();
    let secret = s.outside.join("authorized_keys");
    fs::write(&secret, "ORIGINAL").unwrap();
    let path = s.repo.join("notes.txt");
    fs::write(&path, "mine").unwrap();
    let target = WriteTarget::open(&path, Some(&s.policy), true, "notes.txt").unwrap();
    fs::remove_file(&path).unwrap();
    symlink(&secret, &path).unwrap();
    // Reading refuses the planted link; replacing swaps the link itself for the new file.
    let err = target.read_regular("notes.txt", "edit").unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
    target.replace(b"new").unwrap();
    assert_eq!(fs::read_to_string(&secret).unwrap(), "ORIGINAL");
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
}

#[test]
fn an_opened_file_is_placed_by_the_kernel() {
    let s = scene();
    let hidden = s.outside.join("id_rsa");
    fs::write(&hidden, "KEY").unwrap();
    let policy = PathPolicy::new(
        std::slice::from_ref(&s.repo),
        std::slice::from_ref(&s.outside),
    );
    let file = File::open(s.repo.join("out/id_rsa")).unwrap();
    let err = verify_opened(Some(&policy), &file, "out/id_rsa").unwrap_err();
    assert!(err.to_string().contains("hidden by the sandbox"), "{err}");
    let mine = File::open(s.repo.join("sub")).unwrap();
    verify_opened(Some(&policy), &mine, "sub").unwrap();
}

mod kernel_agrees {
    //! Random trees of directories and symlinks (relative, absolute, with `..`, in and out of
    //! the writable root) and random paths: a write is allowed exactly when the kernel
    //! resolves the path's existing part inside the root, and whatever is allowed lands
    //! inside and nowhere else.
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Node {
        Dir(&'static str),
        Link(&'static str, &'static str),
    }

    const NAMES: [&str; 3] = ["a", "b", "c"];
    const TARGETS: [&str; 9] = [
        ".",
        "..",
        "../..",
        "a",
        "../outside",
        "/",
        "b/..",
        "OUT",
        "OUT",
    ];

    fn node() -> impl Strategy<Value = Node> {
        prop_oneof![
            (0..NAMES.len()).prop_map(|i| Node::Dir(NAMES[i])),
            (0..NAMES.len(), 0..TARGETS.len()).prop_map(|(i, t)| Node::Link(NAMES[i], TARGETS[t])),
        ]
    }

    fn path_part() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            (0..NAMES.len()).prop_map(|i| NAMES[i]),
            Just(".."),
            Just(".."),
            Just("."),
            Just("new"),
            Just("new"),
        ]
    }

    /// Every file under `dir`, as relative paths with their contents.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        for entry in walkdir(dir) {
            if let Ok(bytes) = fs::read(&entry) {
                files.push((entry.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            } else {
                files.push((entry.strip_prefix(dir).unwrap().to_path_buf(), Vec::new()));
            }
        }
        files.sort();
        files
    }

    fn walkdir(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir(dir) else {
            return out;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.clone());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walkdir(&path));
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        #[test]
        fn allowed_iff_inside(
            nodes in proptest::collection::vec((0..3usize, node()), 0..6),
            parts in proptest::collection::vec(path_part(), 1..6),
            absolute in any::<bool>(),
        ) {
            let base = tempfile::tempdir().unwrap();
            let base_real = base.path().canonicalize().unwrap();
            let repo = base_real.join("repo");
            let outside = base_real.join("outside");
            fs::create_dir_all(&repo).unwrap();
            fs::create_dir_all(&outside).unwrap();
            // Build the tree: each node goes in the repo, or in a directory made before it.
            let mut dirs = vec![repo.clone()];
            for (at, node) in &nodes {
                let parent = dirs[*at % dirs.len()].clone();
                match node {
                    Node::Dir(name) => {
                        if fs::create_dir(parent.join(name)).is_ok() {
                            dirs.push(parent.join(name));
                        }
                    }
                    Node::Link(name, target) => {
                        let target = if *target == "OUT" { outside.to_str().unwrap() } else { target };
                        let _ = symlink(target, parent.join(name));
                    }
                }
            }
            let rel: PathBuf = parts.iter().collect();
            let path = if absolute { repo.join(&rel) } else { repo.join(".").join(&rel) };
            let policy = PathPolicy::new(std::slice::from_ref(&repo), &[]);
            let before_outside = snapshot(&base_real);

            let allowed = policy.check(&path, super::super::super::access::Access::Write).is_ok();
            // The kernel's view: the parent must resolve (if it exists) inside the repo.
            let kernel_inside = match path.parent().map(Path::canonicalize) {
                Some(Ok(parent)) => {
                    let name = path.file_name();
                    let full = match name {
                        Some(name) => match parent.join(name).canonicalize() {
                            Ok(real) => real,
                            Err(_) => parent.join(name),
                        },
                        None => parent,
                    };
                    Some(full.starts_with(&repo))
                }
                _ => None,
            };
            if let Some(inside) = kernel_inside {
                // Where the parent exists, the decision is the kernel's: a name that is `..`
                // or `.` names a directory, which no write may replace.
                let names_a_file = path.file_name().is_some();
                if names_a_file {
                    prop_assert_eq!(allowed, inside, "path {:?}", path);
                }
            }
            let written = replace(&path, Some(&policy), b"WRITTEN");
            if written.is_ok() {
                prop_assert!(allowed, "written although refused: {:?}", path);
            }
            // Nothing changed outside the repo, whatever happened.
            let after: Vec<_> = snapshot(&base_real)
                .into_iter()
                .filter(|(p, _)| !p.starts_with("repo"))
                .collect();
            let before: Vec<_> = before_outside
                .into_iter()
                .filter(|(p, _)| !p.starts_with("repo"))
                .collect();
            prop_assert_eq!(before, after, "outside changed for {:?}", path);
            if written.is_ok() {
                let landed = snapshot(&repo).iter().any(|(_, bytes)| bytes == b"WRITTEN");
                prop_assert!(landed, "{:?} was written, but not in the repository", path);
            }
        }
    }
}
