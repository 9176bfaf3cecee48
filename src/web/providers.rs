//! The search APIs: Tavily (`POST /search`, `POST /extract`), Exa (`POST /search`,
//! `POST /contents`) and Brave (`GET /res/v1/web/search`; no extract endpoint, so its pages
//! are fetched locally). Results are normalized to title, URL, snippet, full page text where
//! the provider sent it, score and published date; Tavily's `answer` is kept. Domain filters
//! are sent to the provider and also applied to what comes back, by host, subdomains
//! included, so that every provider honours them alike.
//!
//! Transient failures (transport errors, 408, 429, 5xx) are retried with the run's retry
//! policy, `Retry-After` included; what is left is an error carrying the HTTP status, whether
//! it was transient, and a hint for the model.

use std::time::Duration;

use serde_json::{Value, json};

use super::Provider;
use crate::http::{RetryPolicy, error_chain, retry_after, transient_status};
use crate::text::excerpt;

/// Every provider request is bounded by this.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Whatever `max_results` says.
pub(super) const MAX_RESULTS: usize = 10;

/// Where a provider's API is, and its key.
#[derive(Debug, Clone)]
pub struct Account {
    /// The search API.
    pub provider: Provider,
    /// Where its API is: the provider's base-URL variable (`TAVILY_BASE_URL`), else its
    /// public API.
    pub base_url: String,
    /// The API key.
    pub key: String,
}

impl Provider {
    /// The provider's public API base.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::Tavily => "https://api.tavily.com",
            Provider::Exa => "https://api.exa.ai",
            Provider::Brave => "https://api.search.brave.com",
        }
    }

    /// The variable that points the provider at another host (tests, proxies).
    pub fn base_url_var(self) -> &'static str {
        match self {
            Provider::Tavily => "TAVILY_BASE_URL",
            Provider::Exa => "EXA_BASE_URL",
            Provider::Brave => "BRAVE_SEARCH_BASE_URL",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(super) struct SearchRequest {
    pub query: String,
    pub max_results: usize,
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
    /// `basic` or `advanced` (Tavily's depth; Exa maps advanced to its deeper search).
    pub search_depth: Option<String>,
    /// Ask for page text with each result, where the provider can.
    pub include_content: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit {
    pub title: String,
    pub url: String,
    /// The provider's short excerpt (Tavily's `content`, Exa's highlights, Brave's
    /// description).
    pub snippet: String,
    /// The page's text, where the provider sent it (Tavily's `raw_content`, Exa's `text`).
    pub content: Option<String>,
    pub score: Option<f64>,
    pub published: Option<String>,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Found {
    /// The provider's own summary answer (Tavily).
    pub answer: Option<String>,
    pub hits: Vec<Hit>,
}

/// A page as a provider extracted it.
#[derive(Debug, Clone)]
pub(super) struct Extracted {
    pub title: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone)]
pub(super) struct ProviderError {
    pub provider: Provider,
    pub status: Option<u16>,
    pub message: String,
    pub transient: bool,
}

impl ProviderError {
    /// What the model should do about it.
    pub(super) fn hint(&self) -> &'static str {
        match self.status {
            Some(401 | 403) => "The search API key was rejected: check the provider's API key.",
            Some(429) => "The search provider is rate limiting: wait before searching again.",
            _ if self.transient => "A transient failure; it was retried. Try again later.",
            _ => "The request was rejected; change the query or its parameters.",
        }
    }
}

pub(super) async fn search(
    client: &reqwest::Client,
    account: &Account,
    request: &SearchRequest,
    retry: &RetryPolicy,
) -> Result<Found, ProviderError> {
    let max = request.max_results.clamp(1, MAX_RESULTS);
    let base = account.base_url.trim_end_matches('/');
    let body = match account.provider {
        Provider::Tavily => {
            let mut body = json!({
                "query": request.query,
                "max_results": max,
                "search_depth": request.search_depth.as_deref().unwrap_or("basic"),
                "include_answer": true,
                "include_raw_content": request.include_content,
            });
            if !request.include_domains.is_empty() {
                body["include_domains"] = json!(request.include_domains);
            }
            if !request.exclude_domains.is_empty() {
                body["exclude_domains"] = json!(request.exclude_domains);
            }
            Some(body)
        }
        Provider::Exa => {
            let mut body = json!({
                "query": request.query,
                "numResults": max,
                "type": if request.search_depth.as_deref() == Some("advanced") { "neural" } else { "auto" },
                "contents": if request.include_content { json!({"text": true}) } else { json!({"highlights": true}) },
            });
            if !request.include_domains.is_empty() {
                body["includeDomains"] = json!(request.include_domains);
            }
            if !request.exclude_domains.is_empty() {
                body["excludeDomains"] = json!(request.exclude_domains);
            }
            Some(body)
        }
        Provider::Brave => None,
    };
    let answer = match account.provider {
        Provider::Brave => {
            // Brave has no domain filters; they become `site:` operators of the query.
            let mut query = request.query.clone();
            for domain in &request.include_domains {
                query.push_str(&format!(" site:{domain}"));
            }
            for domain in &request.exclude_domains {
                query.push_str(&format!(" -site:{domain}"));
            }
            let mut url =
                reqwest::Url::parse(&format!("{base}/res/v1/web/search")).map_err(|err| {
                    ProviderError {
                        provider: account.provider,
                        status: None,
                        message: format!("bad base URL {base}: {err}"),
                        transient: false,
                    }
                })?;
            url.query_pairs_mut()
                .append_pair("q", &query)
                .append_pair("count", &max.to_string());
            send(account, retry, || {
                authorized(client.get(url.clone()), account).header("accept", "application/json")
            })
            .await?
        }
        Provider::Tavily | Provider::Exa => {
            let body = body.unwrap_or_default();
            let url = format!("{base}/search");
            send(account, retry, || {
                authorized(client.post(&url), account).json(&body)
            })
            .await?
        }
    };
    let mut hits = parse_hits(account.provider, &answer);
    hits.retain(|hit| {
        (request.include_domains.is_empty()
            || request
                .include_domains
                .iter()
                .any(|d| host_matches(&hit.url, d)))
            && !request
                .exclude_domains
                .iter()
                .any(|d| host_matches(&hit.url, d))
    });
    hits.truncate(max);
    Ok(Found {
        answer: answer["answer"]
            .as_str()
            .filter(|a| !a.trim().is_empty())
            .map(str::to_string),
        hits,
    })
}

/// Whether `url`'s host is `domain` or below it (`docs.foo.com` is under `foo.com`); a URL
/// without a host matches nothing.
fn host_matches(url: &str, domain: &str) -> bool {
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let Some(host) = reqwest::Url::parse(url).ok().and_then(|u| {
        u.host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
    }) else {
        return false;
    };
    !domain.is_empty()
        && (host == domain
            || host
                .strip_suffix(&domain)
                .is_some_and(|rest| rest.ends_with('.')))
}

/// The page at `url` through the provider's extract endpoint; `None` where there is none.
pub(super) async fn extract(
    client: &reqwest::Client,
    account: &Account,
    url: &str,
    retry: &RetryPolicy,
) -> Result<Option<Extracted>, ProviderError> {
    let base = account.base_url.trim_end_matches('/');
    let (endpoint, body) = match account.provider {
        Provider::Tavily => (format!("{base}/extract"), json!({"urls": [url]})),
        Provider::Exa => (
            format!("{base}/contents"),
            json!({"urls": [url], "text": true}),
        ),
        Provider::Brave => return Ok(None),
    };
    let answer = send(account, retry, || {
        authorized(client.post(&endpoint), account).json(&body)
    })
    .await?;
    let first = &answer["results"][0];
    let text = first["raw_content"]
        .as_str()
        .or_else(|| first["text"].as_str())
        .unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(Extracted {
        title: first["title"].as_str().map(str::to_string),
        text: text.to_string(),
    }))
}

fn authorized(builder: reqwest::RequestBuilder, account: &Account) -> reqwest::RequestBuilder {
    match account.provider {
        Provider::Tavily => builder.bearer_auth(&account.key),
        Provider::Exa => builder.header("x-api-key", &account.key),
        Provider::Brave => builder.header("x-subscription-token", &account.key),
    }
}

/// Sends (again, after transient failures) and reads a JSON answer.
async fn send(
    account: &Account,
    retry: &RetryPolicy,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<Value, ProviderError> {
    let mut attempt = 0;
    loop {
        let (error, hint) = match build().timeout(REQUEST_TIMEOUT).send().await {
            Ok(response) if response.status().is_success() => {
                return response.json::<Value>().await.map_err(|err| ProviderError {
                    provider: account.provider,
                    status: None,
                    message: format!("unreadable answer: {}", error_chain(&err)),
                    transient: false,
                });
            }
            Ok(response) => {
                let status = response.status().as_u16();
                let after = retry_after(response.headers());
                let body = response.text().await.unwrap_or_default();
                let error = ProviderError {
                    provider: account.provider,
                    status: Some(status),
                    message: format!("HTTP {status}: {}", excerpt(&body, 300)),
                    transient: transient_status(status),
                };
                (error, after)
            }
            Err(err) => (
                ProviderError {
                    provider: account.provider,
                    status: None,
                    message: error_chain(&err),
                    transient: true,
                },
                None,
            ),
        };
        let Some(wait) = retry.next_wait(attempt, error.transient, hint) else {
            return Err(error);
        };
        attempt += 1;
        tokio::time::sleep(wait).await;
    }
}

fn parse_hits(provider: Provider, answer: &Value) -> Vec<Hit> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let results = match provider {
        Provider::Brave => &answer["web"]["results"],
        Provider::Tavily | Provider::Exa => &answer["results"],
    };
    results
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| match provider {
            Provider::Tavily => Hit {
                title: text(&r["title"]),
                url: text(&r["url"]),
                snippet: text(&r["content"]),
                content: full_text(&r["raw_content"]),
                score: r["score"].as_f64(),
                published: r["published_date"].as_str().map(str::to_string),
            },
            Provider::Exa => Hit {
                title: text(&r["title"]),
                url: text(&r["url"]),
                snippet: r["highlights"]
                    .as_array()
                    .map(|h| {
                        h.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(" … ")
                    })
                    .unwrap_or_default(),
                content: full_text(&r["text"]),
                score: r["score"].as_f64(),
                published: r["publishedDate"].as_str().map(str::to_string),
            },
            Provider::Brave => Hit {
                title: text(&r["title"]),
                url: text(&r["url"]),
                snippet: text(&r["description"]),
                content: None,
                score: None,
                published: r["page_age"]
                    .as_str()
                    .or_else(|| r["age"].as_str())
                    .map(str::to_string),
            },
        })
        .filter(|hit| !hit.url.is_empty())
        .collect()
}

/// A page text field, when it has any text.
fn full_text(value: &Value) -> Option<String> {
    value
        .as_str()
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests;
