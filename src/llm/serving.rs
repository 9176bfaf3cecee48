//! How the server says it served a response, read from the stream.
//!
//! Dynamo reports it in the response's `nvext` when the request asks with
//! `nvext.extra_fields: ["worker_id", "timing"]`: `worker_id` (prefill and decode worker, each
//! with its data-parallel rank) on every chunk, `timing` (TTFT, queue wait, total time, the
//! router's KV hit rate and queue depth) on the last content chunk. It is read leniently from
//! raw JSON: a shape this code does not know is ignored, never a failed response.

use serde_json::Value;

use super::wire::WireUsage;
use crate::events::Serving;

/// The raw `nvext` report, the latest of each part.
#[derive(Debug, Clone, Default)]
pub struct ServerReport {
    worker_id: Option<Value>,
    timing: Option<Value>,
}

impl ServerReport {
    /// Takes what one chunk's `nvext` says.
    pub fn push(&mut self, nvext: &Value) {
        if let Some(worker) = nvext.get("worker_id").filter(|w| w.is_object()) {
            self.worker_id = Some(worker.clone());
        }
        if let Some(timing) = nvext.get("timing").filter(|t| t.is_object()) {
            self.timing = Some(timing.clone());
        }
    }

    /// The turn's serving report: what the server said, the cached tokens of its usage, and
    /// the request id worker sent. `None` when the server said nothing at all.
    pub fn serving(&self, usage: Option<&WireUsage>, request_id: Option<&str>) -> Option<Serving> {
        let cached_tokens = usage
            .and_then(|u| u.prompt_tokens_details.as_ref())
            .and_then(|d| d.cached_tokens);
        if self.worker_id.is_none() && self.timing.is_none() && cached_tokens.is_none() {
            return None;
        }
        let worker = self.worker_id.as_ref();
        let id = |key: &str| worker.and_then(|w| w.get(key)).and_then(id_text);
        let rank = |key: &str| worker.and_then(|w| w.get(key)).and_then(Value::as_u64);
        let (decode, prefill) = (id("decode_worker_id"), id("prefill_worker_id"));
        let (decode_rank, prefill_rank) = (rank("decode_dp_rank"), rank("prefill_dp_rank"));
        let disaggregated = prefill.is_some() && prefill != decode;
        let timing = |key: &str| {
            self.timing
                .as_ref()
                .and_then(|t| t.get(key))
                .and_then(Value::as_f64)
        };
        let ttft_ms = timing("ttft_ms");
        let completion = usage.map(|u| u.completion_tokens);
        let itl_ms =
            timing("itl_ms").or_else(|| match (timing("total_time_ms"), ttft_ms, completion) {
                (Some(total), Some(ttft), Some(tokens)) if tokens > 1 && total >= ttft => {
                    Some(round3((total - ttft) / (tokens - 1) as f64))
                }
                _ => None,
            });
        Some(Serving {
            request_id: request_id.map(str::to_string),
            worker_id: decode.clone().or_else(|| prefill.clone()),
            dp_rank: decode_rank.or(prefill_rank),
            prefill_worker_id: disaggregated.then(|| prefill.clone()).flatten(),
            prefill_dp_rank: disaggregated.then_some(prefill_rank).flatten(),
            ttft_ms,
            itl_ms,
            queue_ms: timing("prefill_wait_time_ms"),
            cached_tokens,
            kv_hit_rate: timing("kv_hit_rate"),
            router_queue_depth: self
                .timing
                .as_ref()
                .and_then(|t| t.get("router_queue_depth"))
                .and_then(Value::as_u64),
        })
    }
}

/// A worker id as text, whether the server sent a number or a string.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests;
