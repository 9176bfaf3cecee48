//! URLs from flags, variables and files, checked once where they are read.
//!
//! Every URL worker sends requests to (a model server, the GitHub API, a search provider, an
//! OTLP collector) must be `http://` or `https://` with a host. Anything else is refused before
//! the run starts, naming where it came from, rather than failing — and being retried — at the
//! first request: `ftp://` would never work, and a URL without a scheme (`gw.example/v1`) is a
//! typo, not a request to guess.

/// `raw` as an http(s) URL with a host; `source` (a flag, a variable, a field of a file) names
/// it in the error. A password in the URL is not repeated in the error.
pub fn http_url(source: &str, raw: &str) -> Result<url::Url, String> {
    url_with_scheme(source, raw, &["http", "https"])
}

/// [`http_url`] for a URL that may also have one of a few other schemes (a git server may be
/// a `file://` mirror); only http(s) URLs need a host.
pub fn url_with_scheme(source: &str, raw: &str, schemes: &[&str]) -> Result<url::Url, String> {
    let text = raw.trim();
    let expected = match schemes {
        ["http", "https"] => "an http:// or https:// URL".to_string(),
        _ => {
            let listed: Vec<String> = schemes.iter().map(|s| format!("{s}://")).collect();
            format!("a URL starting with {}", listed.join(", "))
        }
    };
    if !text.contains("://") {
        return Err(format!(
            "{source} '{text}' has no scheme; expected {expected}"
        ));
    }
    let mut url = url::Url::parse(text)
        .map_err(|err| format!("{source} '{}' is not a URL: {err}", hide_password(text)))?;
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    let scheme = url.scheme();
    if !schemes.contains(&scheme) {
        return Err(format!(
            "{source} '{url}': unsupported scheme '{scheme}'; expected {expected}"
        ));
    }
    if matches!(scheme, "http" | "https") && url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{source} '{url}' has no host"));
    }
    Ok(url)
}

/// `scheme://user:password@rest` with the password replaced, for a URL that did not parse.
fn hide_password(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
