//! How the model server served each request: `turn_end.serving` per turn and
//! `usage_snapshot.stats.serving` for the run.
//!
//! Everything here is what the server reported (Dynamo's response `nvext.worker_id` and
//! `nvext.timing`, the usage's cached-token count) plus the `x-request-id` worker sent, which
//! joins a turn to the server's own trace. An orchestrator reading thousands of phases can
//! tell a slow model (ITL) from queueing (queue time, TTFT) from cache misses (cached tokens)
//! without opening Dynamo's trace.

use schemars::JsonSchema;
use serde::Serialize;

/// One request's serving report. Only the fields the server reported are present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Serving {
    /// The `x-request-id` of the request that produced this message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The worker that decoded the response, as a decimal string (Dynamo's worker ids
    /// exceed what a JSON number holds exactly in JavaScript).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    /// The decoding worker's data-parallel rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_rank: Option<u64>,
    /// The prefill worker, only when prefill ran on another worker than decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_worker_id: Option<String>,
    /// The prefill worker's data-parallel rank, only when prefill ran on another worker than
    /// decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_dp_rank: Option<u64>,
    /// Time to first token, measured by the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Mean inter-token latency: the server's figure, or its total time after the first
    /// token divided by the tokens that followed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<f64>,
    /// Time the request waited before prefill started (queueing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<f64>,
    /// Prompt tokens served from the prefix cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// The router's estimate of the prompt already cached on the chosen worker (0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_hit_rate: Option<f64>,
    /// Requests waiting in the router's queue when this one arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router_queue_depth: Option<u64>,
}

/// The run's serving totals, over the requests that had a serving report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServingTotals {
    /// Requests with a serving report.
    pub requests: u32,
    /// Prompt tokens of the requests that reported a cached-token count.
    pub prompt_tokens: u64,
    /// Prompt tokens served from the prefix cache, over the same requests as `promptTokens`.
    pub cached_tokens: u64,
    /// `cachedTokens / promptTokens` (0 when nothing was reported).
    pub cached_ratio: f64,
    /// The mean time to first token the server measured, in milliseconds, over the requests that
    /// reported one; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_ttft_ms: Option<f64>,
    /// The mean time requests waited before prefill, in milliseconds, over the requests that
    /// reported one; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_queue_ms: Option<f64>,
    /// Distinct decoding workers seen.
    pub workers: u32,
    #[serde(skip)]
    ttft_sum: f64,
    #[serde(skip)]
    ttft_count: u32,
    #[serde(skip)]
    queue_sum: f64,
    #[serde(skip)]
    queue_count: u32,
    #[serde(skip)]
    seen_workers: Vec<String>,
}

impl ServingTotals {
    /// Counts one request; `prompt_tokens` is its prompt size as the server counted it.
    pub fn add(&mut self, serving: &Serving, prompt_tokens: u64) {
        self.requests += 1;
        if let Some(cached) = serving.cached_tokens {
            self.cached_tokens += cached;
            self.prompt_tokens += prompt_tokens;
        }
        if self.prompt_tokens > 0 {
            self.cached_ratio = round4(self.cached_tokens as f64 / self.prompt_tokens as f64);
        }
        if let Some(ttft) = serving.ttft_ms {
            self.ttft_sum += ttft;
            self.ttft_count += 1;
            self.mean_ttft_ms = Some(round4(self.ttft_sum / f64::from(self.ttft_count)));
        }
        if let Some(queue) = serving.queue_ms {
            self.queue_sum += queue;
            self.queue_count += 1;
            self.mean_queue_ms = Some(round4(self.queue_sum / f64::from(self.queue_count)));
        }
        if let Some(worker) = &serving.worker_id
            && !self.seen_workers.contains(worker)
        {
            self.seen_workers.push(worker.clone());
            self.workers += 1;
        }
    }
}

fn round4(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests;
