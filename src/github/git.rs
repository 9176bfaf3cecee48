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
pub fn write_credentials(path: &Path, server_url: &str, token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("refusing to write an empty token to the git credentials file".into());
    }
    if path.to_string_lossy().chars().any(char::is_whitespace) {
        return Err(format!(
            "the git credentials path may not contain whitespace: {}",
            path.display()
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::create_dir_all(dir)
            .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|err| format!("cannot restrict {}: {err}", dir.display()))?;
    }
    let host = server_url
        .split_once("://")
        .map_or(server_url, |(_, rest)| rest);
    let host = host
        .split('/')
        .next()
        .filter(|h| !h.is_empty())
        .unwrap_or("localhost");
    let mut tmp = tempfile::Builder::new()
        .prefix(".git-credentials.")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    writeln!(tmp, "https://x-access-token:{}@{host}", stored_token(token))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    tmp.persist(path)
        .map_err(|err| format!("cannot write {}: {}", path.display(), err.error))?;
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
) -> Result<(), String> {
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

async fn run_git(args: &[String], timeout: Duration) -> Result<String, String> {
    let mut command = tokio::process::Command::new("git");
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|err| format!("cannot run git: {err}"))?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(format!(
            "git {} timed out after {} s",
            args.iter()
                .find(|a| !a.starts_with('-') && !a.contains('='))
                .map_or("", String::as_str),
            timeout.as_secs()
        )),
        Ok(Err(err)) => Err(format!("git failed: {err}")),
        Ok(Ok(output)) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        Ok(Ok(output)) => Err(format!(
            "git exited with {}: {}",
            output
                .status
                .code()
                .map_or("a signal".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

#[cfg(test)]
mod tests;
