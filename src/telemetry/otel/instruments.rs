//! The run's metric instruments: GenAI's two metrics under their own names, worker's under
//! its namespace.

use opentelemetry::metrics::{Counter, Histogram};

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
