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
}

/// The first model the server lists. Errors name the URL and say what went wrong.
pub async fn first_model(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<String, String> {
    let url = format!("{base_url}/models");
    let fail = |reason: String| format!("model discovery failed: GET {url}: {reason}");
    let mut request = client.get(&url).timeout(timeout);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|err| {
        if err.is_timeout() {
            fail(format!("no answer within {} s", timeout.as_secs_f64()))
        } else {
            fail(error_chain(&err))
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("HTTP {}", status.as_u16())));
    }
    let list: ModelList = response
        .json()
        .await
        .map_err(|err| fail(format!("unexpected response ({})", error_chain(&err))))?;
    list.data
        .into_iter()
        .map(|m| m.id)
        .find(|id| !id.is_empty())
        .ok_or_else(|| fail("the server lists no models".to_string()))
}
