//! Fetching a page ourselves, inside agentic-pi's rails and behind the SSRF guard:
//! http(s) only; 15 s for the whole request; at most 3 redirects, each target checked again
//! (scheme and address), and the address the answer came from checked last; a text-like content type (`text/*`, `application/xhtml+xml`,
//! `application/xml`, `application/json`); at most 1 MiB read, streamed and abandoned past
//! it. HTML becomes markdown or plain text, as asked; the text handed to the model is capped
//! at 200 KiB.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::guard::{GuardError, GuardedResolver, MARKER, Policy};
use super::{FetchFormat, WebError, html};
use crate::http::error_chain;

pub(super) const TIMEOUT: Duration = Duration::from_secs(15);
pub(super) const MAX_BYTES: usize = 1024 * 1024;
pub(super) const MAX_REDIRECTS: usize = 3;
/// The most text a fetch hands to the model.
pub(super) const MAX_TEXT: usize = 200 * 1024;

#[derive(Debug)]
pub(super) struct Fetched {
    pub final_url: String,
    pub content_type: String,
    pub bytes: usize,
    pub title: Option<String>,
    pub text: String,
}

#[derive(Debug)]
pub(super) enum FetchError {
    /// The SSRF guard refused the URL or an address it resolved to.
    Blocked(String),
    /// Anything else, said plainly.
    Failed(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Blocked(message) | FetchError::Failed(message) => f.write_str(message),
        }
    }
}

pub(super) struct Fetcher {
    client: reqwest::Client,
    policy: Arc<Policy>,
}

impl Fetcher {
    pub(super) fn new(policy: Arc<Policy>) -> Result<Fetcher, WebError> {
        Self::with_timeout(policy, TIMEOUT)
    }

    /// [`Fetcher::new`] with another overall time limit (tests).
    pub(super) fn with_timeout(
        policy: Arc<Policy>,
        timeout: Duration,
    ) -> Result<Fetcher, WebError> {
        let redirect_policy = policy.clone();
        let client = crate::http::client_builder()
            .dns_resolver(Arc::new(GuardedResolver::new(policy.clone())))
            // A proxy would resolve names itself, out of the guard's sight.
            .no_proxy()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > MAX_REDIRECTS {
                    return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
                }
                match redirect_policy.check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(refused) => attempt.error(refused),
                }
            }))
            .build()
            .map_err(WebError::FetchClient)?;
        Ok(Fetcher { client, policy })
    }

    pub(super) async fn fetch(
        &self,
        raw: &str,
        format: FetchFormat,
    ) -> Result<Fetched, FetchError> {
        let url = reqwest::Url::parse(raw.trim())
            .map_err(|err| FetchError::Failed(format!("not a URL ({err}): {raw}")))?;
        self.policy.check_url(&url).map_err(refused)?;
        let response = self
            .client
            .get(url)
            .header(
                "accept",
                "text/html,application/xhtml+xml,application/xml;q=0.9,text/*;q=0.8,application/json;q=0.8",
            )
            .send()
            .await
            .map_err(|err| classify_text(error_chain(&err)))?;
        // The address the answer came from, whatever led there: nothing unchecked is read.
        let peer = response
            .remote_addr()
            .map(|addr| addr.ip())
            .ok_or_else(|| {
                FetchError::Blocked(format!(
                    "{MARKER}: the address {} was fetched from is unknown",
                    response.url()
                ))
            })?;
        self.policy
            .check_peer(response.url(), peer)
            .map_err(|err| FetchError::Blocked(err.to_string()))?;
        let final_url = response.url().to_string();
        let status = response.status();
        if status.is_redirection() {
            // A redirect reqwest would not follow: to a scheme other than http(s).
            let target = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let refused = response
                .url()
                .join(&target)
                .map_err(|err| err.to_string())
                .and_then(|url| self.policy.check_url(&url).map_err(|err| err.to_string()))
                .err()
                .unwrap_or_else(|| "not followed".to_string());
            return Err(classify_text(format!(
                "{final_url} redirects to {target}: {refused}"
            )));
        }
        if !status.is_success() {
            return Err(FetchError::Failed(format!(
                "HTTP {status} from {final_url}"
            )));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let kind = text_kind(&content_type).ok_or_else(|| {
            FetchError::Failed(format!(
                "{final_url} is {}, not text: only text/*, HTML, XML and JSON are fetched",
                if content_type.is_empty() {
                    "of no declared content type"
                } else {
                    &content_type
                }
            ))
        })?;
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|err| FetchError::Failed(error_chain(&err)))?;
            if body.len() + chunk.len() > MAX_BYTES {
                return Err(FetchError::Failed(format!(
                    "{final_url} is larger than {} KiB; not read further",
                    MAX_BYTES / 1024
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let bytes = body.len();
        let text = String::from_utf8_lossy(&body);
        let (title, text) = match kind {
            Kind::Html => {
                let page = match format {
                    FetchFormat::Markdown => html::to_markdown(&text),
                    FetchFormat::Text => html::to_text(&text),
                };
                (page.title, page.text)
            }
            Kind::Json => (
                None,
                serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| serde_json::to_string_pretty(&v).ok())
                    .unwrap_or_else(|| text.into_owned()),
            ),
            Kind::Text => (None, text.into_owned()),
        };
        Ok(Fetched {
            final_url,
            content_type,
            bytes,
            title,
            text,
        })
    }
}

enum Kind {
    Html,
    Json,
    Text,
}

/// The content-type gate.
fn text_kind(content_type: &str) -> Option<Kind> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "application/json" => Some(Kind::Json),
        "application/xml" => Some(Kind::Text),
        other if other.starts_with("text/") => Some(Kind::Text),
        _ => None,
    }
}

/// A refusal of the guard's, told apart from a URL it cannot check.
fn refused(err: GuardError) -> FetchError {
    if err.is_blocked() {
        FetchError::Blocked(err.to_string())
    } else {
        FetchError::Failed(err.to_string())
    }
}

/// The guard's own words when it refused, wherever in an error chain they are.
fn classify_text(message: String) -> FetchError {
    match message.find(MARKER) {
        Some(at) => FetchError::Blocked(message[at..].to_string()),
        None => FetchError::Failed(message),
    }
}

/// At most [`MAX_TEXT`] bytes (on a character boundary), and whether it was cut.
pub(super) fn cap_text(text: &str) -> (&str, bool) {
    if text.len() <= MAX_TEXT {
        return (text, false);
    }
    (
        &text[..crate::text::floor_char_boundary(text, MAX_TEXT)],
        true,
    )
}

#[cfg(test)]
mod tests;
