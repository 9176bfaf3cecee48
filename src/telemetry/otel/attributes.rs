//! Attribute values that need a translation from worker's own types, and the resource.

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};

use crate::events::{Serving, StopReason};
use crate::telemetry::names::{Names, own};

/// The resource every signal carries: the SDK's own attributes and OTEL_RESOURCE_ATTRIBUTES, as
/// the SDK's default builder has them, then worker's service name. The default builder's
/// service-name detector is left out: it reads the executable's path (a readlink of
/// /proc/self/exe) for a name the one set here replaces anyway.
pub(super) fn resource(service_name: &str) -> Resource {
    Resource::builder_empty()
        .with_detectors(&[
            Box::new(TelemetryResourceDetector),
            Box::new(EnvResourceDetector::new()),
        ])
        .with_service_name(service_name.to_string())
        .build()
}

/// A `chat` span's serving report, as `<namespace>.serving.*` attributes.
pub(super) fn serving_attributes(names: &Names, serving: &Serving) -> Vec<KeyValue> {
    let key = |field: &str| names.get(&format!("{}.{field}", own::SERVING));
    let mut attributes = Vec::new();
    for (field, value) in [
        ("worker_id", &serving.worker_id),
        ("prefill_worker_id", &serving.prefill_worker_id),
    ] {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key(field), value.clone()));
        }
    }
    for (field, value) in [
        ("dp_rank", serving.dp_rank),
        ("cached_tokens", serving.cached_tokens),
        ("router_queue_depth", serving.router_queue_depth),
    ] {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key(field), value.cast_signed()));
        }
    }
    for (field, value) in [
        ("ttft_ms", serving.ttft_ms),
        ("itl_ms", serving.itl_ms),
        ("queue_ms", serving.queue_ms),
        ("kv_hit_rate", serving.kv_hit_rate),
    ] {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key(field), value));
        }
    }
    attributes
}

/// The conventions' finish reason (`stop`, `length`, `tool_call`, `error`); a run worker
/// cut short is `aborted`, which the conventions' open list leaves to the instrumentation.
pub(super) fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Pending => "pending",
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_call",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}
