//! The run's metric instruments: GenAI's two metrics under their own names, worker's under
//! its namespace.

use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry_sdk::metrics::{Instrument, Stream};

use super::super::names::{gen_ai, own};

/// One of each metric the run records.
pub(super) struct Instruments {
    pub(super) token_usage: Histogram<u64>,
    pub(super) operation_duration: Histogram<f64>,
    pub(super) cost: Histogram<f64>,
    pub(super) tool_duration: Histogram<f64>,
    pub(super) tool_invocations: Counter<u64>,
    pub(super) tool_failures: Counter<u64>,
    pub(super) turns: Counter<u64>,
}

impl Instruments {
    /// GenAI's two metrics under their own names, worker's under its namespace.
    pub(super) fn new(
        meter: &opentelemetry::metrics::Meter,
        names: &super::super::names::Names,
    ) -> Instruments {
        let name = |own: &str| names.get(own);
        Instruments {
            token_usage: meter
                .u64_histogram(gen_ai::TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Tokens used per model request, by gen_ai.token.type")
                .build(),
            operation_duration: meter
                .f64_histogram(gen_ai::OPERATION_DURATION)
                .with_unit("s")
                .with_description("Duration of model requests")
                .build(),
            cost: meter
                .f64_histogram(name(own::COST))
                .with_unit("{usd}")
                .with_description("Estimated cost per model request in USD")
                .build(),
            tool_duration: meter
                .f64_histogram(name(own::TOOL_DURATION))
                .with_unit("s")
                .build(),
            tool_invocations: meter
                .u64_counter(name(own::TOOL_INVOCATIONS))
                .with_unit("{call}")
                .build(),
            tool_failures: meter
                .u64_counter(name(own::TOOL_FAILURES))
                .with_unit("{call}")
                .build(),
            turns: meter
                .u64_counter(name(own::TURNS))
                .with_unit("{turn}")
                .build(),
        }
    }
}

/// The attribute sets one metric keeps in a run; measurements with a further set are counted
/// under the SDK's overflow set (`otel.metric.overflow`). A run's sets number a handful (a
/// model, four token types) plus one per tool name, and a request offers at most 128 tools.
/// The SDK sizes each metric's table for its limit up front: at its default of 2,000 that is a
/// 136 KiB mapping per metric, mapped and unmapped in every run.
const ATTRIBUTE_SETS: usize = 256;

/// The view every metric is recorded through: the default stream, with at most
/// [`ATTRIBUTE_SETS`] attribute sets.
pub(super) fn bounded_attribute_sets(_: &Instrument) -> Option<Stream> {
    Stream::builder()
        .with_cardinality_limit(ATTRIBUTE_SETS)
        .build()
        .ok()
}
