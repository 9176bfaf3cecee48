//! git over HTTPS for `github_clone_repo` and `github_refresh_git_auth`.
//!
//! The token never appears on a command line or in a URL: git reads it from a credential-store
//! file (directory 0700, file 0600, replaced atomically so git never sees half a file), named
//! by `credential.helper` in the clone's config. The store holds URLs, which git
//! percent-decodes, so the token is written percent-encoded: any token works (GitHub's are
//! `[A-Za-z0-9_]`, but an installation token or a proxy's may carry `/`, `+`, `=` or `@`),
//! and no byte of it can end the line or the URL's userinfo. Clones run without a terminal prompt and with
//! a timeout, so a wrong URL or a missing credential fails instead of hanging.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::config::Env;

/// How long `git clone` may run before it is killed.
pub const CLONE_TIMEOUT: Duration = Duration::from_secs(120);
/// The web host git talks to, when it is not derived from the API base.
pub const SERVER_URL_VAR: &str = "GITHUB_SERVER_URL";
/// What it may be: a GitHub server, or a local mirror git reads as a path.
pub const SERVER_SCHEMES: [&str; 3] = ["https", "http", "file"];

/// Why the credential store could not be written, or git failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The token to store is empty.
    #[error("refusing to write an empty token to the git credentials file")]
    EmptyToken,
    /// The credential-store path has whitespace, which `credential.helper` cannot carry.
    #[error("the git credentials path may not contain whitespace: {0}")]
    WhitespaceInPath(PathBuf),
    /// The credential store's directory could not be created.
    #[error("cannot create {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The credential store's new directory could not be made private (0700).
    #[error("cannot restrict {path}: {source}")]
    RestrictDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The credential store could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The credential-store file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No absolute directory of `PATH` has a `git` (relative ones are not searched:
    /// [`git_program`]).
    #[error("cannot run git: no directory of PATH has it (relative entries are not searched)")]
    NotInPath,
    /// git could not be started.
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    /// git ran past its time limit and was killed.
    #[error("git {command} timed out after {} s", .timeout.as_secs())]
    TimedOut {
        /// The git subcommand (`clone`, `config`), or empty when there is none.
        command: String,
        /// The time limit.
        timeout: Duration,
    },
    /// Waiting for git failed.
    #[error("git failed: {0}")]
    Wait(#[source] std::io::Error),
    /// git exited unsuccessfully.
    #[error("git exited with {}: {stderr}", exit_code(*.code))]
    Exited {
        /// The exit code; `None` when a signal ended git.
        code: Option<i32>,
        /// What git wrote to stderr, trimmed.
        stderr: String,
    },
}

/// An exit code as [`GitError::Exited`] says it.
fn exit_code(code: Option<i32>) -> String {
    code.map_or("a signal".to_string(), |c| c.to_string())
}

/// Where the credential-store file lives: `WORKER_GIT_CREDENTIALS`, else
/// `$HOME/.config/worker/git-credentials`.
pub fn credentials_path(env: &dyn Env) -> PathBuf {
    if let Some(path) = env.get("WORKER_GIT_CREDENTIALS") {
        return PathBuf::from(path);
    }
    match env.get("HOME") {
        Some(home) => Path::new(&home).join(".config/worker/git-credentials"),
        None => {
            std::env::temp_dir().join(format!("worker-{}/git-credentials", nix::unistd::getpid()))
        }
    }
}

/// The web host git talks to: `GITHUB_SERVER_URL`, else derived from the API base
/// (`https://api.github.com` → `https://github.com`, `https://ghe/api/v3` → `https://ghe`).
pub fn server_url(env: &dyn Env, api_base: &str) -> String {
    if let Some(url) = env.get(SERVER_URL_VAR) {
        return url.trim_end_matches('/').to_string();
    }
    let base = api_base.trim_end_matches('/');
    if base == "https://api.github.com" {
        return "https://github.com".to_string();
    }
    if let Some(stripped) = base.strip_suffix("/api/v3") {
        return stripped.to_string();
    }
    match base.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", rest.split('/').next().unwrap_or(rest)),
        None => base.to_string(),
    }
}

/// Bytes a token keeps as-is in the credential store: RFC 3986's unreserved characters.
const URL_RESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The token as the credential store holds it (percent-encoded); register it with the
/// redactor alongside the token, since a command may print the file.
pub fn stored_token(token: &str) -> String {
    utf8_percent_encode(token, URL_RESERVED).to_string()
}

/// Writes `https://x-access-token:<token, percent-encoded>@<host>` to the credential store,
/// atomically.
pub fn write_credentials(path: &Path, server_url: &str, token: &str) -> Result<(), GitError> {
    if token.is_empty() {
        return Err(GitError::EmptyToken);
    }
    if path.to_string_lossy().chars().any(char::is_whitespace) {
        return Err(GitError::WhitespaceInPath(path.to_path_buf()));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|source| GitError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| GitError::RestrictDir {
                path: dir.to_path_buf(),
                source,
            },
        )?;
    }
    let host = server_url
        .split_once("://")
        .map_or(server_url, |(_, rest)| rest);
    let host = host
        .split('/')
        .next()
        .filter(|h| !h.is_empty())
        .unwrap_or("localhost");
    let write_error = |source| GitError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".git-credentials.")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(write_error)?;
    writeln!(tmp, "https://x-access-token:{}@{host}", stored_token(token))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(write_error)?;
    tmp.persist(path).map_err(|err| write_error(err.error))?;
    Ok(())
}

/// `git clone [--branch b] <url> <dest>` with the credential store, then the store recorded
/// in the clone's config for later pushes.
pub async fn clone(
    url: &str,
    dest: &Path,
    branch: Option<&str>,
    credentials: &Path,
    timeout: Duration,
) -> Result<(), GitError> {
    let helper = format!("credential.helper=store --file={}", credentials.display());
    let mut args: Vec<String> = vec![
        "-c".into(),
        "credential.helper=".into(),
        "-c".into(),
        helper,
        "clone".into(),
    ];
    if let Some(branch) = branch {
        args.extend(["--branch".into(), branch.into()]);
    }
    args.extend(["--".into(), url.into(), dest.display().to_string()]);
    run_git(&args, timeout).await?;
    let dest_text = dest.display().to_string();
    run_git(
        &[
            "-C".into(),
            dest_text.clone(),
            "config".into(),
            "credential.helper".into(),
            format!("store --file={}", credentials.display()),
        ],
        Duration::from_secs(10),
    )
    .await?;
    if run_git(
        &[
            "-C".into(),
            dest_text.clone(),
            "config".into(),
            "user.email".into(),
        ],
        Duration::from_secs(10),
    )
    .await
    .is_err()
        && std::env::var_os("GIT_AUTHOR_EMAIL").is_none()
    {
        for (key, value) in [
            ("user.name", "worker[bot]"),
            ("user.email", "worker[bot]@users.noreply.github.com"),
        ] {
            run_git(
                &[
                    "-C".into(),
                    dest_text.clone(),
                    "config".into(),
                    key.into(),
                    value.into(),
                ],
                Duration::from_secs(10),
            )
            .await?;
        }
    }
    Ok(())
}

/// `git` as found in the absolute directories of `path` (a `PATH` value), the first that is an
/// executable file: a relative entry would be looked up in the working directory, a repository
/// that could have planted a `git` of its own to run with the credential store.
fn git_program(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    crate::tools::absolute_dirs(path?)
        .map(|dir| dir.join("git"))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

async fn run_git(args: &[String], timeout: Duration) -> Result<String, GitError> {
    let program = git_program(std::env::var_os("PATH").as_deref()).ok_or(GitError::NotInPath)?;
    let mut command = tokio::process::Command::new(program);
    // And the programs git starts (helpers, hooks) are looked up there too.
    crate::tools::absolute_path_only(command.as_std_mut());
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().map_err(GitError::Spawn)?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(GitError::TimedOut {
            command: args
                .iter()
                .find(|a| !a.starts_with('-') && !a.contains('='))
                .cloned()
                .unwrap_or_default(),
            timeout,
        }),
        Ok(Err(err)) => Err(GitError::Wait(err)),
        Ok(Ok(output)) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        Ok(Ok(output)) => Err(GitError::Exited {
            code: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests;
