//! `GET <base>/models`: which model a `dynamo/default` run uses.

use std::time::Duration;

use serde::Deserialize;

use super::transport::error_chain;

#[derive(Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
    /// The context window, as vLLM (and so Dynamo) report it.
    #[serde(default)]
    max_model_len: Option<u64>,
}

/// A model the server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    pub id: String,
    pub context_window: Option<u64>,
}

/// Why discovery failed; `transient` failures (no answer, refused, 408/429/5xx) are worth
/// another try, like a failed chat request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryError {
    pub message: String,
    pub transient: bool,
}

/// The first model the server lists. Errors name the URL and say what went wrong.
pub async fn first_model(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<ListedModel, DiscoveryError> {
    let url = format!("{base_url}/models");
    let failure = |reason: String, transient: bool| DiscoveryError {
        message: format!("model discovery failed: GET {url}: {reason}"),
        transient,
    };
    let fail = |reason: String| failure(reason, false);
    let mut request = client.get(&url).timeout(timeout);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|err| {
        if err.is_timeout() {
            failure(
                format!("no answer within {} s", timeout.as_secs_f64()),
                true,
            )
        } else {
            failure(error_chain(&err), true)
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        let code = status.as_u16();
        return Err(failure(
            format!("HTTP {code}"),
            matches!(code, 408 | 429 | 500..=599),
        ));
    }
    let list: ModelList = response
        .json()
        .await
        .map_err(|err| fail(format!("unexpected response ({})", error_chain(&err))))?;
    list.data
        .into_iter()
        .find(|m| !m.id.is_empty())
        .map(|m| ListedModel {
            id: m.id,
            context_window: m.max_model_len,
        })
        .ok_or_else(|| fail("the server lists no models".to_string()))
}
