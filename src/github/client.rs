//! Talking to the GitHub REST API through octocrab.
//!
//! Requests go through octocrab's raw routes (`_get`, `_post`, ...) and come back as JSON
//! values or text: the tools return what GitHub said, trimmed, rather than octocrab's typed
//! models, which lag behind the API (and GitHub Enterprise) and fail to parse what they don't
//! know. Raw routes also expose the status and headers that retries need.
//!
//! Transient failures (408, 429, 5xx, a 403 with the rate limit spent, connection errors) are
//! retried with exponential backoff, honouring `Retry-After` and the rate-limit reset. With a
//! GitHub App, the installation token is minted at the configured API base (so GitHub
//! Enterprise works), cached, refreshed five minutes before it expires, and re-minted once
//! when GitHub answers 401. Every token the client knows is redacted from what it returns.

use std::time::{Duration, SystemTime};

use http::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use octocrab::Octocrab;
use serde_json::{Value, json};

use super::auth::Credentials;
use crate::http::{RetryPolicy, retry_after, transient_status};
use crate::secrets::Secrets;

/// Tokens are refreshed this long before they expire.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);
/// The longest wait a rate-limit reset or `Retry-After` can ask for.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// The longest scheduled wait between tries.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Tries after the first (agentic-pi's three).
const MAX_RETRIES: u32 = 3;
const JSON: &str = "application/vnd.github+json";

/// The HTTP method of a REST call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST` (an absent body is sent as `{}`).
    Post,
    /// `PATCH` (an absent body is sent as `{}`).
    Patch,
    /// `PUT` (an absent body is sent as `{}`).
    Put,
    /// `DELETE`.
    Delete,
}

/// A failed API call, as the model sees it (`{error, status, transient, hint}`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// GitHub's `message` with the details of its `errors` list (else the start of the body),
    /// or what failed before an answer came.
    pub message: String,
    /// The HTTP status; `None` when no response came (a transport error) or the failure was
    /// local.
    pub status: Option<u16>,
    /// Whether the failure may pass (408, 429, 5xx, rate limit spent, transport error); such
    /// calls were already retried.
    pub transient: bool,
    /// The `code` of each entry of GitHub's `errors` list (`already_exists`, `missing_field`).
    pub codes: Vec<String>,
}

impl ApiError {
    fn local(message: impl Into<String>) -> Self {
        ApiError {
            message: message.into(),
            status: None,
            transient: false,
            codes: Vec::new(),
        }
    }

    /// A 422 saying the thing to create is already there (a label, a branch).
    pub fn already_exists(&self) -> bool {
        self.status == Some(422) && self.codes.iter().any(|code| code == "already_exists")
    }

    /// The JSON the model reads: `{error, status, transient, hint}`, the hint saying what the
    /// status usually means.
    pub fn payload(&self) -> Value {
        let hint = if self.transient {
            Some(
                "This is a transient error. The request was retried automatically but still failed. Wait and try again.",
            )
        } else {
            match self.status {
                Some(401) => Some(
                    "Authentication failed: the token is invalid, expired or lacks access to this resource.",
                ),
                Some(403) => {
                    Some("Forbidden: the credentials lack the permission this call needs.")
                }
                Some(404) => Some(
                    "Not found: check owner, repo, number and path; private repositories need a token with access.",
                ),
                Some(409) => Some(
                    "Conflict: the resource changed meanwhile (e.g. the branch moved); fetch it again and retry.",
                ),
                Some(422) => {
                    Some("Validation failed: check the parameters against the message above.")
                }
                _ => None,
            }
        };
        json!({"error": self.message, "status": self.status, "transient": self.transient, "hint": hint})
    }
}

/// A token and when it stops working (static tokens: never, as far as we know).
#[derive(Clone)]
pub struct Token {
    /// The token itself.
    pub value: String,
    /// When it expires (an installation token); `None` for a static token, or when GitHub
    /// stated no expiry.
    pub expires_at: Option<SystemTime>,
}

/// A successful (2xx) answer to a REST call.
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The body, secrets redacted.
    pub body: String,
}

/// A GitHub REST/GraphQL client: one set of credentials, its tokens, retries and redaction.
pub struct GitHub {
    api_base: String,
    credentials: Credentials,
    retry: RetryPolicy,
    state: tokio::sync::Mutex<Option<(Token, Octocrab)>>,
    secrets: Secrets,
}

impl GitHub {
    /// Every token it uses is added to `secrets` (the run's shared set).
    pub fn new(
        api_base: &str,
        credentials: Credentials,
        retry_base: Duration,
        secrets: Secrets,
    ) -> Self {
        if let Credentials::Token(token) = &credentials {
            remember(&secrets, token);
        }
        GitHub {
            api_base: api_base.trim_end_matches('/').to_string(),
            credentials,
            retry: RetryPolicy {
                max_retries: MAX_RETRIES,
                base_delay: retry_base,
                max_delay: MAX_BACKOFF,
                max_server_delay: MAX_WAIT,
            },
            state: tokio::sync::Mutex::new(None),
            secrets,
        }
    }

    /// The API base without a trailing `/` (`https://api.github.com`).
    pub fn api_base(&self) -> &str {
        &self.api_base
    }

    /// Replaces every known token in `text` with `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text).into_owned()
    }

    /// The token at hand without waiting: the configured one, or the App's installation
    /// token if one has been minted.
    pub fn cached_token(&self) -> Option<String> {
        match &self.credentials {
            Credentials::Token(value) => Some(value.clone()),
            Credentials::App { .. } => self
                .state
                .try_lock()
                .ok()
                .and_then(|state| state.as_ref().map(|(token, _)| token.value.clone())),
        }
    }

    /// A valid token (minting one in App mode when the cached one is near expiry).
    pub async fn token(&self) -> Result<Token, ApiError> {
        Ok(self.client().await?.0)
    }

    async fn client(&self) -> Result<(Token, Octocrab), ApiError> {
        let mut state = self.state.lock().await;
        let fresh = state
            .as_ref()
            .is_some_and(|(token, _)| match token.expires_at {
                None => true,
                Some(expiry) => SystemTime::now() + REFRESH_BEFORE_EXPIRY < expiry,
            });
        if !fresh {
            let token = match &self.credentials {
                Credentials::Token(value) => Token {
                    value: value.clone(),
                    expires_at: None,
                },
                Credentials::App {
                    app_id,
                    installation_id,
                    key,
                } => self.mint(*app_id, *installation_id, key).await?,
            };
            remember(&self.secrets, &token.value);
            let client = self.build(Some(&token.value))?;
            *state = Some((token, client));
        }
        state
            .clone()
            .ok_or_else(|| ApiError::local("no GitHub client"))
    }

    fn build(&self, token: Option<&str>) -> Result<Octocrab, ApiError> {
        // octocrab's own rustls setup needs a process-wide crypto provider.
        crate::http::install_tls();
        let mut builder = Octocrab::builder()
            .base_uri(self.api_base.as_str())
            .map_err(|err| {
                ApiError::local(format!("invalid GitHub API URL {}: {err}", self.api_base))
            })?
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .set_write_timeout(Some(Duration::from_secs(60)));
        if let Some(token) = token {
            builder = builder.personal_token(token.to_string());
        }
        builder
            .build()
            .map_err(|err| ApiError::local(format!("cannot build the GitHub client: {err}")))
    }

    /// Exchanges a fresh App JWT for an installation token at the configured API base.
    async fn mint(
        &self,
        app_id: u64,
        installation_id: u64,
        key: &octocrab::EncodingKey,
    ) -> Result<Token, ApiError> {
        let jwt = octocrab::auth::create_jwt(app_id.into(), key)
            .map_err(|err| ApiError::local(format!("cannot sign the GitHub App JWT: {err}")))?;
        let client = self.build(None)?;
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(JSON));
        if let Ok(value) = HeaderValue::from_str(&format!("Bearer {jwt}")) {
            headers.insert(AUTHORIZATION, value);
        }
        let path = format!("/app/installations/{installation_id}/access_tokens");
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri(&path);
        let request = headers.iter().fold(request, |r, (k, v)| r.header(k, v));
        let request = client
            .build_request(request, Some(&json!({})))
            .map_err(|err| ApiError::local(err.to_string()))?;
        let response = client.execute(request).await.map_err(transport)?;
        let status = response.status().as_u16();
        let body = client.body_to_string(response).await.map_err(transport)?;
        if !(200..300).contains(&status) {
            let mut error = status_error(status, &body, &HeaderMap::new());
            error.message = format!(
                "failed to get an installation token ({status}): {}",
                error.message
            );
            return Err(error);
        }
        let parsed: Value = serde_json::from_str(&body).map_err(|err| {
            ApiError::local(format!("unexpected installation token response: {err}"))
        })?;
        let value = parsed["token"]
            .as_str()
            .ok_or_else(|| ApiError::local("the installation token response has no token"))?
            .to_string();
        let expires_at = parsed["expires_at"]
            .as_str()
            .and_then(|t| humantime::parse_rfc3339(t).ok());
        Ok(Token { value, expires_at })
    }

    /// GET/POST/... `path` (relative to the API base, query included), returning the body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        accept: &str,
    ) -> Result<Response, ApiError> {
        let mut reminted = false;
        let mut attempt = 0;
        loop {
            let (_, client) = self.client().await?;
            let outcome = send_once(&client, &method, path, body, accept).await;
            let (error, wait) = match outcome {
                Ok((status, _, body)) if (200..300).contains(&status) => {
                    return Ok(Response {
                        status,
                        body: self.redact(&body),
                    });
                }
                Ok((401, headers, text))
                    if !reminted && matches!(self.credentials, Credentials::App { .. }) =>
                {
                    // The token may have been revoked early: mint a new one, once.
                    let _ = (headers, text);
                    reminted = true;
                    *self.state.lock().await = None;
                    continue;
                }
                Ok((status, headers, text)) => {
                    let error = status_error(status, &text, &headers);
                    let wait = server_wait(&headers);
                    (error, wait)
                }
                Err(error) => (error, None),
            };
            let Some(wait) = self.retry.next_wait(attempt, error.transient, wait) else {
                return Err(ApiError {
                    message: self.redact(&error.message),
                    ..error
                });
            };
            attempt += 1;
            tokio::time::sleep(wait).await;
        }
    }

    /// A JSON call; an empty success body (204) is `null`.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let response = self.send(method, path, body, JSON).await?;
        if response.body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&response.body).map_err(|err| {
            ApiError::local(format!(
                "GitHub answered {} with a body that is not JSON: {err}",
                response.status
            ))
        })
    }

    /// A GraphQL call (`POST /graphql` at the API base): GitHub's whole answer, `data` and
    /// `errors` both, since GraphQL reports failures with a 200.
    pub async fn graphql(&self, query: &str, variables: Value) -> Result<Value, ApiError> {
        let body = json!({"query": query, "variables": variables});
        self.json(Method::Post, "/graphql", Some(&body)).await
    }
}

/// Redacts a token in every form it is written in: as is, and as the git credential store
/// holds it.
fn remember(secrets: &Secrets, token: &str) {
    secrets.add(token);
    secrets.add(super::git::stored_token(token));
}

async fn send_once(
    client: &Octocrab,
    method: &Method,
    path: &str,
    body: Option<&Value>,
    accept: &str,
) -> Result<(u16, HeaderMap, String), ApiError> {
    let response = match method {
        Method::Get => {
            let mut headers = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_str(accept) {
                headers.insert(ACCEPT, value);
            }
            client._get_with_headers(path, Some(headers)).await
        }
        Method::Post => client._post(path, Some(body.unwrap_or(&json!({})))).await,
        Method::Patch => client._patch(path, Some(body.unwrap_or(&json!({})))).await,
        Method::Put => client._put(path, Some(body.unwrap_or(&json!({})))).await,
        Method::Delete => client._delete(path, body).await,
    }
    .map_err(transport)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = client.body_to_string(response).await.map_err(transport)?;
    Ok((status, headers, text))
}

fn transport(err: octocrab::Error) -> ApiError {
    ApiError {
        message: format!(
            "request to GitHub failed: {}",
            crate::http::error_chain(&err)
        ),
        status: None,
        transient: true,
        codes: Vec::new(),
    }
}

/// GitHub's `message` and `errors` details, or the start of the body.
fn status_error(status: u16, body: &str, headers: &HeaderMap) -> ApiError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let mut message = parsed
        .as_ref()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| crate::text::excerpt(body, 300));
    let mut codes = Vec::new();
    if let Some(errors) = parsed.as_ref().and_then(|v| v["errors"].as_array()) {
        codes = errors
            .iter()
            .filter_map(|e| e["code"].as_str().map(str::to_string))
            .collect();
        let details: Vec<String> = errors
            .iter()
            .map(|e| match e.as_str() {
                Some(text) => text.to_string(),
                None => e["message"].as_str().map_or_else(
                    || {
                        let field = e["field"].as_str().unwrap_or("?");
                        let code = e["code"].as_str().unwrap_or("invalid");
                        format!("{field}: {code}")
                    },
                    str::to_string,
                ),
            })
            .collect();
        if !details.is_empty() {
            message = format!("{message} ({})", details.join("; "));
        }
    }
    if message.is_empty() {
        message = format!("HTTP {status}");
    }
    let rate_limited =
        status == 403 && header(headers, "x-ratelimit-remaining").as_deref() == Some("0");
    ApiError {
        message,
        status: Some(status),
        transient: transient_status(status) || rate_limited,
        codes,
    }
}

/// How long the server asked us to wait: `Retry-After`, or until the rate limit resets.
fn server_wait(headers: &HeaderMap) -> Option<Duration> {
    if let Some(wait) = retry_after(headers) {
        return Some(wait);
    }
    if header(headers, "x-ratelimit-remaining").as_deref() == Some("0") {
        let reset: u64 = header(headers, "x-ratelimit-reset")?.parse().ok()?;
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_secs();
        return Some(Duration::from_secs(reset.saturating_sub(now)));
    }
    None
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests;
