//! Knowing why telemetry did not arrive.
//!
//! The OTLP exporters report a failed export to the SDK, which only logs it; and the HTTP
//! exporter reduces every transport error to a bare "network error". An operator whose
//! collector is down needs the cause ("connection refused", "operation timed out") on
//! stderr, so each signal gets a [`Failure`] slot fed from both ends: [`RecordingClient`]
//! notes the transport error behind a failed request, [`Tapped`] notes the export error and
//! joins the two.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::TelemetryError;
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

/// The exporters' blocking HTTP client, noting the cause of each transport error.
#[derive(Debug)]
pub(super) struct RecordingClient {
    inner: reqwest::blocking::Client,
    failure: Arc<Failure>,
}

/// The exporters' HTTP client; `timeout` bounds each request. One serves both signals (it
/// is a handle to one connection pool and one runtime thread). It owns a runtime of its own,
/// which may not be created on a thread that runs async tasks, so it is built on a helper.
pub(super) fn blocking_client(
    timeout: Duration,
) -> Result<reqwest::blocking::Client, TelemetryError> {
    std::thread::Builder::new()
        .name("otlp-client".into())
        .spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .map_err(TelemetryError::ClientThread)?
        .join()
        .map_err(|_| TelemetryError::ClientThreadPanicked)?
        .map_err(TelemetryError::Client)
}

impl RecordingClient {
    pub(super) fn new(inner: reqwest::blocking::Client, failure: Arc<Failure>) -> RecordingClient {
        RecordingClient { inner, failure }
    }
}

#[async_trait::async_trait]
impl HttpClient for RecordingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let result = self.inner.send_bytes(request).await;
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

#[cfg(test)]
mod tests;
