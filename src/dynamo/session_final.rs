//! The end-of-session marker (`--session-final`): after the run's last answer, Dynamo is told
//! the session is over, so the router can release the session's worker affinity.
//!
//! Dynamo reads the marker from the `x-dynamo-session-final: true` header of a request, and a
//! request is the only way to send it. The cheapest request it accepts is a one-character
//! prompt with `max_tokens: 1`, not streamed: one prefill of a few tokens and one decode
//! step, on the session's own worker. It carries the session's identity as every request
//! does (headers, or Dynamo 1.2.x's body field), and its `x-request-id` is the run's last
//! request id plus `:final`. It gets
//! [`SESSION_FINAL_TIMEOUT`]; a failure is reported in `trace_summary.sessionFinal`, never a
//! failed run.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;

use crate::events::SessionFinal;
use crate::llm::{Request, Transport};

/// How long the marker request may take, answer read through, before it is reported as
/// unanswered.
pub const SESSION_FINAL_TIMEOUT: Duration = Duration::from_secs(2);

/// The marker request for the session whose last request was `last_request_id`, before the
/// identity is added.
pub fn request(model: &str, tenant: Option<&str>, last_request_id: &str) -> Request {
    let mut headers = vec![
        (
            "x-request-id".to_string(),
            format!("{last_request_id}:final"),
        ),
        ("x-dynamo-session-final".to_string(), "true".to_string()),
    ];
    if let Some(tenant) = tenant {
        headers.push(("x-tenant-id".to_string(), tenant.to_string()));
    }
    Request {
        body: json!({
            "model": model,
            "messages": [{"role": "user", "content": "."}],
            "max_tokens": 1,
            "stream": false,
        }),
        spliced: crate::llm::Spliced::default(),
        headers,
    }
}

/// Sends the marker and reads the answer through, within the timeout.
pub async fn send(transport: Arc<dyn Transport>, request: Request) -> SessionFinal {
    let request_id = request
        .header("x-request-id")
        .unwrap_or_default()
        .to_string();
    let exchange = async {
        let response = transport.send(&request).await?;
        let mut body = response.body;
        while let Some(chunk) = body.next().await {
            chunk?;
        }
        Ok::<u16, crate::llm::TransportError>(response.status)
    };
    match tokio::time::timeout(SESSION_FINAL_TIMEOUT, exchange).await {
        Ok(Ok(status)) => SessionFinal {
            request_id,
            status: Some(status),
            error: None,
        },
        Ok(Err(err)) => SessionFinal {
            request_id,
            status: None,
            error: Some(crate::http::error_chain(&err)),
        },
        Err(_) => SessionFinal {
            request_id,
            status: None,
            error: Some(format!(
                "no answer within {} s",
                SESSION_FINAL_TIMEOUT.as_secs()
            )),
        },
    }
}

#[cfg(test)]
mod tests;
