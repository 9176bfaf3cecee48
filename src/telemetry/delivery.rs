//! Knowing why telemetry did not arrive.
//!
//! The OTLP exporters report a failed export to the SDK, which only logs it; and the HTTP
//! exporter reduces every transport error to a bare "network error". An operator whose
//! collector is down needs the cause ("connection refused", "operation timed out") on
//! stderr, so each signal gets a [`Failure`] slot fed from both ends: [`RecordingClient`]
//! notes the transport error behind a failed request, [`Tapped`] notes the export error and
//! joins the two.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::extension::StatusLine;
use crate::http::error_chain;
use crate::secrets::Secrets;
use crate::sync::LockExt;

/// Why the last export of one signal failed.
#[derive(Debug, Default)]
pub(super) struct Failure {
    last: Mutex<Option<String>>,
    transport: Mutex<Option<String>>,
}

impl Failure {
    /// The reason of the last failed export, if the last export failed.
    pub(super) fn take(&self) -> Option<String> {
        lock(&self.last).take()
    }

    fn exported(&self, result: &OTelSdkResult) {
        let transport = lock(&self.transport).take();
        *lock(&self.last) = match (result, transport) {
            (Ok(()), _) => None,
            (Err(err), Some(cause)) => Some(format!("{err} ({cause})")),
            (Err(err), None) => Some(err.to_string()),
        };
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock_or_recover()
}

/// The exporters' HTTP client, noting the cause of each transport error.
#[derive(Debug)]
pub(super) struct RecordingClient {
    inner: SharedClient,
    failure: Arc<Failure>,
}

/// The exporters' HTTP client; `timeout` bounds each request. One serves both signals (one
/// connection pool).
///
/// It is async and runs on the run's own runtime, like the export itself: the blocking
/// client would start a runtime thread of its own. It is built by a task as the run starts
/// (or at the first export, whichever comes first), so neither the run's first request nor
/// its end waits for it; for a plain `http` collector no CA certificate is loaded.
#[derive(Debug, Clone)]
pub(super) struct SharedClient(Arc<ClientCell>);

#[derive(Debug)]
struct ClientCell {
    timeout: Duration,
    tls: bool,
    built: OnceLock<Result<reqwest::Client, String>>,
}

impl SharedClient {
    /// A client built when first used.
    pub(super) fn new(timeout: Duration, tls: bool) -> SharedClient {
        SharedClient(Arc::new(ClientCell {
            timeout,
            tls,
            built: OnceLock::new(),
        }))
    }

    /// Builds the client now, if it is not built yet.
    pub(super) fn build(&self) {
        let _ = self.get();
    }

    /// The client, built now if need be.
    fn get(&self) -> Result<&reqwest::Client, String> {
        let cell = &self.0;
        cell.built
            .get_or_init(|| {
                let mut builder = crate::http::client_builder().timeout(cell.timeout);
                if !cell.tls {
                    builder = builder.tls_certs_only(std::iter::empty());
                }
                builder.build().map_err(|err| error_chain(&err))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl RecordingClient {
    pub(super) fn new(inner: SharedClient, failure: Arc<Failure>) -> RecordingClient {
        RecordingClient { inner, failure }
    }
}

#[async_trait::async_trait]
impl HttpClient for RecordingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = match self.inner.get() {
            Ok(client) => client,
            Err(err) => {
                *lock(&self.failure.transport) = Some(err.clone());
                return Err(err.into());
            }
        };
        let result = client.send_bytes(request).await;
        if let Err(err) = &result {
            *lock(&self.failure.transport) = Some(error_chain(err.as_ref()));
        }
        result
    }
}

/// An exporter that reports each export's outcome to its signal's [`Failure`]; spans are
/// redacted on their way through (metrics carry no text of the run's).
#[derive(Debug)]
pub(super) struct Tapped<E> {
    pub inner: E,
    pub failure: Arc<Failure>,
    pub secrets: Secrets,
}

impl<E: SpanExporter> SpanExporter for Tapped<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        super::redact::redact_spans(&self.secrets, &mut batch);
        let result = self.inner.export(batch).await;
        self.failure.exported(&result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Tapped<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.failure.exported(&result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The stderr warnings of the final export: `sent` is the metric send's result, `None`
/// when the flush limit ran out first; `dropped` the spans a full queue could not hold; the
/// failures those each signal's exporter noted.
pub(super) fn delivery_warnings(
    sent: Option<OTelSdkResult>,
    dropped: u64,
    traces: Option<String>,
    metrics: Option<String>,
) -> Vec<StatusLine> {
    let mut warnings = Vec::new();
    if dropped > 0 {
        warnings.push(format!(
            "telemetry: {dropped} spans were dropped: more were waiting than the queue holds (OTEL_BSP_MAX_QUEUE_SIZE)"
        ));
    }
    match sent {
        Some(collected) => {
            if let Some(err) = traces {
                warnings.push(format!(
                    "telemetry: could not deliver traces to the collector: {err}"
                ));
            }
            let metrics = match (metrics, collected) {
                (Some(err), _) => Some(err),
                (None, Err(err)) => Some(err.to_string()),
                (None, Ok(())) => None,
            };
            if let Some(err) = metrics {
                warnings.push(format!(
                    "telemetry: could not deliver metrics to the collector: {err}"
                ));
            }
        }
        None => warnings.push(format!(
            "telemetry: the collector did not take the data within {} s; it was dropped",
            super::FLUSH_LIMIT.as_secs()
        )),
    }
    warnings.into_iter().map(StatusLine::Warning).collect()
}

#[cfg(test)]
mod tests;
