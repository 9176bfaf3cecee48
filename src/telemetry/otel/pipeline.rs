//! Export on the run's own runtime, with no thread of its own.
//!
//! The SDK's batch span processor and periodic metric reader each start a thread, and the
//! blocking HTTP client a third with a runtime of its own; for a short run, starting them
//! and handing every export across them cost more than everything else telemetry does. Here
//! ended spans wait in a bounded queue ([`SpanQueue`]) and leave in batches: when a batch is
//! full, every schedule delay, and at the end. Metrics are collected by a manual reader
//! ([`MetricPipe`]) and sent every export interval and at the end. The periodic sends run as
//! tasks of the run's runtime, started with the run; the final ones are awaited by the run's
//! end, bounded by the flush limit.
//!
//! The batching settings are [`Batching`]'s. A span ended while the queue is full is dropped
//! and counted, as the SDK does, and the run's end says how many.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::sync::LockExt;
use crate::telemetry::Batching;

/// The span processor: ended spans wait here until a batch leaves.
#[derive(Debug)]
pub(super) struct SpanQueue<E>(Arc<SpanShared<E>>);

impl<E> Clone for SpanQueue<E> {
    fn clone(&self) -> Self {
        SpanQueue(self.0.clone())
    }
}

#[derive(Debug)]
struct SpanShared<E> {
    batching: Batching,
    waiting: Mutex<Vec<SpanData>>,
    /// Held while a batch is exported: batches leave one at a time, in order.
    exporter: tokio::sync::Mutex<E>,
    /// A task sending full batches is on its way.
    sending: AtomicBool,
    dropped: AtomicU64,
    /// The run's runtime, known once the run starts.
    runtime: OnceLock<Handle>,
}

impl<E: SpanExporter + 'static> SpanQueue<E> {
    pub(super) fn new(exporter: E, batching: Batching) -> SpanQueue<E> {
        SpanQueue(Arc::new(SpanShared {
            batching,
            waiting: Mutex::new(Vec::new()),
            exporter: tokio::sync::Mutex::new(exporter),
            sending: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            runtime: OnceLock::new(),
        }))
    }

    /// Starts sending on the current runtime: full batches as they fill, and whatever waits
    /// every schedule delay. The handle stops the periodic task.
    pub(super) fn start(&self) -> Option<AbortHandle> {
        let runtime = Handle::try_current().ok()?;
        let runtime = self.0.runtime.get_or_init(|| runtime);
        let queue = self.clone();
        Some(every(runtime, self.0.batching.span_delay, move || {
            let queue = queue.clone();
            async move { queue.send_waiting().await }
        }))
    }

    /// Sends every span waiting, a batch at a time, after any export on its way.
    pub(super) async fn send_waiting(&self) {
        let exporter = self.0.exporter.lock().await;
        loop {
            let batch = {
                let mut waiting = self.0.waiting.lock_or_recover();
                let take = waiting.len().min(self.0.batching.max_batch);
                waiting.drain(..take).collect::<Vec<_>>()
            };
            if batch.is_empty() {
                return;
            }
            // The outcome is the exporter's to report (see `Tapped`).
            let _ = exporter.export(batch).await;
        }
    }

    /// The spans dropped because the queue was full.
    pub(super) fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    fn send_full_batches(&self) {
        let Some(runtime) = self.0.runtime.get() else {
            return;
        };
        if self.0.sending.swap(true, Ordering::AcqRel) {
            return;
        }
        let queue = self.clone();
        runtime.spawn(async move {
            queue.send_waiting().await;
            queue.0.sending.store(false, Ordering::Release);
        });
    }
}

impl<E: SpanExporter + 'static> SpanProcessor for SpanQueue<E> {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let full = {
            let mut waiting = self.0.waiting.lock_or_recover();
            if waiting.len() >= self.0.batching.max_queue {
                self.0.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            waiting.push(span);
            waiting.len() >= self.0.batching.max_batch
        };
        if full {
            self.send_full_batches();
        }
    }

    /// Nothing to wait for here: the run's end sends what waits ([`SpanQueue::send_waiting`]),
    /// on the runtime this may be called from.
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Called while the provider is built, before any export can hold the exporter.
        if let Ok(mut exporter) = self.0.exporter.try_lock() {
            exporter.set_resource(resource);
        }
    }
}

/// The metric reader the provider collects into, and the exporter its collections go to.
#[derive(Debug)]
pub(super) struct MetricPipe<E>(Arc<MetricShared<E>>);

impl<E> Clone for MetricPipe<E> {
    fn clone(&self) -> Self {
        MetricPipe(self.0.clone())
    }
}

#[derive(Debug)]
struct MetricShared<E> {
    reader: ManualReader,
    exporter: tokio::sync::Mutex<E>,
    interval: Duration,
}

impl<E: PushMetricExporter + 'static> MetricPipe<E> {
    pub(super) fn new(exporter: E, batching: Batching) -> MetricPipe<E> {
        let reader = ManualReader::builder()
            .with_temporality(exporter.temporality())
            .build();
        MetricPipe(Arc::new(MetricShared {
            reader,
            exporter: tokio::sync::Mutex::new(exporter),
            interval: batching.metric_interval,
        }))
    }

    /// The reader to register with the meter provider.
    pub(super) fn reader(&self) -> SharedReader<E> {
        SharedReader(MetricPipe(self.0.clone()))
    }

    /// Starts sending every export interval on the current runtime; the handle stops it.
    pub(super) fn start(&self) -> Option<AbortHandle> {
        let runtime = Handle::try_current().ok()?;
        let pipe = self.clone();
        Some(every(&runtime, self.0.interval, move || {
            let pipe = pipe.clone();
            async move {
                let _ = pipe.send().await;
            }
        }))
    }

    /// Collects the metrics and sends them, after any export on its way. An export's own
    /// failure is the exporter's to report (see `Tapped`); a failed collection is returned.
    pub(super) async fn send(&self) -> OTelSdkResult {
        let exporter = self.0.exporter.lock().await;
        let mut metrics = ResourceMetrics::default();
        self.0.reader.collect(&mut metrics)?;
        exporter.export(&metrics).await
    }
}

/// A task on `runtime` that runs `tick` every `period`, until aborted.
fn every<F, T>(runtime: &Handle, period: Duration, tick: F) -> AbortHandle
where
    F: Fn() -> T + Send + 'static,
    T: std::future::Future<Output = ()> + Send + 'static,
{
    runtime
        .spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                tick().await;
            }
        })
        .abort_handle()
}

/// [`MetricPipe`]'s reader, as the meter provider holds it.
#[derive(Debug)]
pub(super) struct SharedReader<E>(MetricPipe<E>);

impl<E: PushMetricExporter + std::fmt::Debug + 'static> MetricReader for SharedReader<E> {
    fn register_pipeline(&self, pipeline: std::sync::Weak<Pipeline>) {
        self.0.0.reader.register_pipeline(pipeline);
    }

    fn collect(&self, metrics: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.0.reader.collect(metrics)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.0.reader.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.0.reader.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.0.reader.temporality(kind)
    }
}

#[cfg(test)]
mod tests;
