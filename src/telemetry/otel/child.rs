//! A child run's telemetry: its session span hangs under the parent's span of the call that
//! started it (a `task` call), and it exports through the parent's providers, which only the
//! parent flushes and shuts down.

use std::sync::Mutex;

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;

use super::{Instruments, Otel, SCOPE, State};
use crate::extension::{ChildOf, ToolJoins};

impl Otel {
    /// The telemetry of a child run: its session span under the parent's span of the call
    /// that started it, over the parent's providers; `None` when nothing is exported.
    pub(super) fn child_otel(&self, child: ChildOf<'_>) -> Option<Otel> {
        if self.tracer.is_none() && self.meter.is_none() {
            return None;
        }
        let parent = {
            let state = self.state();
            state
                .tools
                .get(child.call_id)
                .map(|(cx, _)| cx.clone())
                .or_else(|| state.session.clone())
                .unwrap_or_default()
        };
        let mut settings = self.settings.clone();
        settings.session_id = crate::ids::SessionId::parse(child.session_id).ok()?;
        settings.identity =
            self.settings
                .identity
                .clone()
                .map(|identity| crate::telemetry::AgentIdentity {
                    trajectory_id: child.session_id.to_string(),
                    parent_trajectory_id: Some(identity.trajectory_id.clone()),
                    ..identity
                });
        Some(Otel {
            tracer: self.tracer.as_ref().map(|(provider, _)| {
                let tracer = BoxedTracer::new(Box::new(provider.tracer(SCOPE)));
                (provider.clone(), tracer)
            }),
            meter: self.meter.as_ref().map(|(provider, _)| {
                let instruments = Instruments::new(&provider.meter(SCOPE), &settings.names);
                (provider.clone(), instruments)
            }),
            settings,
            status: self.status.clone(),
            trace_failure: self.trace_failure.clone(),
            metric_failure: self.metric_failure.clone(),
            parent,
            state: Mutex::new(State::default()),
            joins: ToolJoins::default(),
            export: None,
        })
    }
}
