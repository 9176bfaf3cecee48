//! `GET <base>/models`: which model a `dynamo/default` run uses, and the context window the
//! server lists for the model a run names (`dynamo/<id>`).

use std::time::Duration;

use serde::Deserialize;

use crate::http::{error_chain, transient_status};

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
    /// The model id, as requests name it.
    pub id: String,
    /// The context window in tokens (`max_model_len`, as vLLM and Dynamo report it); `None` when
    /// the server lists none.
    pub context_window: Option<u64>,
}

/// Why discovery failed; `transient` failures (no answer, refused, 408/429/5xx) are worth
/// another try, like a failed chat request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryError {
    /// What failed, naming the URL (`model discovery failed: GET <url>: <reason>`).
    pub message: String,
    /// True when another try may succeed (no answer, a refused connection, 408/429/5xx).
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
    list_models(client, base_url, api_key, timeout)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| DiscoveryError {
            message: format!("model discovery failed: GET {url}: the server lists no models"),
            transient: false,
        })
}

/// The context window the server lists for model `id`, if it lists one.
pub async fn listed_window(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
    id: &str,
) -> Option<u64> {
    list_models(client, base_url, api_key, timeout)
        .await
        .ok()?
        .into_iter()
        .find(|m| m.id == id)?
        .context_window
}

/// Every model the server lists (those with an id), in its order.
async fn list_models(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Vec<ListedModel>, DiscoveryError> {
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
        return Err(failure(format!("HTTP {code}"), transient_status(code)));
    }
    let list: ModelList = response
        .json()
        .await
        .map_err(|err| fail(format!("unexpected response ({})", error_chain(&err))))?;
    Ok(list
        .data
        .into_iter()
        .filter(|m| !m.id.is_empty())
        .map(|m| ListedModel {
            id: m.id,
            context_window: m.max_model_len,
        })
        .collect())
}
