//! URLs from flags, variables and files, checked once where they are read.
//!
//! Every URL worker sends requests to (a model server, the GitHub API, a search provider, an
//! OTLP collector) must be `http://` or `https://` with a host. Anything else is refused before
//! the run starts, naming where it came from, rather than failing — and being retried — at the
//! first request: `ftp://` would never work, and a URL without a scheme (`gw.example/v1`) is a
//! typo, not a request to guess.

/// Why a URL was refused; each message names where it came from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UrlError {
    /// No `scheme://` at all.
    #[error("{origin} '{text}' has no scheme; expected {}", expected(.schemes))]
    NoScheme {
        /// The flag, variable or field of a file the URL came from.
        origin: String,
        /// The URL as given (trimmed).
        text: String,
        /// The schemes that would do.
        schemes: Vec<String>,
    },
    /// Not a URL; a password in it is shown as `***`.
    #[error("{origin} '{text}' is not a URL: {source}")]
    NotAUrl {
        /// The flag, variable or field of a file the URL came from.
        origin: String,
        /// The URL as given (trimmed), its password hidden.
        text: String,
        /// Why it did not parse.
        #[source]
        source: url::ParseError,
    },
    /// A scheme other than the ones that would do.
    #[error("{origin} '{url}': unsupported scheme '{scheme}'; expected {}", expected(.schemes))]
    UnsupportedScheme {
        /// The flag, variable or field of a file the URL came from.
        origin: String,
        /// The URL, its password hidden.
        url: String,
        /// Its scheme.
        scheme: String,
        /// The schemes that would do.
        schemes: Vec<String>,
    },
    /// An http(s) URL without a host.
    #[error("{origin} '{url}' has no host")]
    NoHost {
        /// The flag, variable or field of a file the URL came from.
        origin: String,
        /// The URL, its password hidden.
        url: String,
    },
}

/// What the error says would do: `an http:// or https:// URL`, or the schemes listed.
fn expected(schemes: &[String]) -> String {
    match schemes {
        [http, https] if http == "http" && https == "https" => {
            "an http:// or https:// URL".to_string()
        }
        _ => {
            let listed: Vec<String> = schemes.iter().map(|s| format!("{s}://")).collect();
            format!("a URL starting with {}", listed.join(", "))
        }
    }
}

/// `raw` as an http(s) URL with a host; `source` (a flag, a variable, a field of a file) names
/// it in the error. A password in the URL is not repeated in the error.
pub fn http_url(source: &str, raw: &str) -> Result<url::Url, UrlError> {
    url_with_scheme(source, raw, &["http", "https"])
}

/// [`http_url`] for a URL that may also have one of a few other schemes (a git server may be
/// a `file://` mirror); only http(s) URLs need a host.
pub fn url_with_scheme(source: &str, raw: &str, schemes: &[&str]) -> Result<url::Url, UrlError> {
    let text = raw.trim();
    let origin = || source.to_string();
    let listed = || {
        schemes
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
    };
    if !text.contains("://") {
        return Err(UrlError::NoScheme {
            origin: origin(),
            text: text.to_string(),
            schemes: listed(),
        });
    }
    let mut url = url::Url::parse(text).map_err(|source| UrlError::NotAUrl {
        origin: origin(),
        text: hide_password(text),
        source,
    })?;
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    let scheme = url.scheme();
    if !schemes.contains(&scheme) {
        return Err(UrlError::UnsupportedScheme {
            origin: origin(),
            url: url.to_string(),
            scheme: scheme.to_string(),
            schemes: listed(),
        });
    }
    if matches!(scheme, "http" | "https") && url.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost {
            origin: origin(),
            url: url.to_string(),
        });
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
