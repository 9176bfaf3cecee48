//! Knowing why telemetry did not arrive.
//!
//! The OTLP exporters report a failed export to the SDK, which only logs it; and the HTTP
//! exporter reduces every transport error to a bare "network error". An operator whose
//! collector is down needs the cause ("connection refused", "operation timed out") on
//! stderr, so each signal gets a [`Failure`] slot fed from both ends: [`RecordingClient`]
//! notes the transport error behind a failed request, [`Tapped`] notes the export error and
//! joins the two.

use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
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
    inner: SharedClient,
    failure: Arc<Failure>,
}

/// The exporters' HTTP client; `timeout` bounds each request. One serves both signals (it is
/// a handle to one connection pool and one runtime thread).
///
/// It is built on a thread of its own while the run starts, and the first export waits for
/// it: it owns a runtime, which may not be created on a thread that runs async tasks, and
/// for an `https` collector it loads the system's CA certificates, milliseconds the run's
/// first request used to wait for. For a plain `http` collector no certificate is loaded.
#[derive(Debug, Clone)]
pub(super) struct SharedClient(Arc<ClientCell>);

#[derive(Debug)]
struct ClientCell {
    building: Mutex<Option<JoinHandle<Result<reqwest::blocking::Client, reqwest::Error>>>>,
    built: OnceLock<Result<reqwest::blocking::Client, String>>,
}

impl SharedClient {
    /// Starts building the client.
    pub(super) fn start(timeout: Duration, tls: bool) -> Result<SharedClient, TelemetryError> {
        let building = std::thread::Builder::new()
            .name("otlp-client".into())
            .spawn(move || {
                let mut builder = reqwest::blocking::Client::builder().timeout(timeout);
                if !tls {
                    builder = builder.tls_certs_only(std::iter::empty());
                }
                builder.build()
            })
            .map_err(TelemetryError::ClientThread)?;
        Ok(SharedClient(Arc::new(ClientCell {
            building: Mutex::new(Some(building)),
            built: OnceLock::new(),
        })))
    }

    /// The client, once built.
    fn get(&self) -> Result<&reqwest::blocking::Client, String> {
        self.0
            .built
            .get_or_init(|| match lock(&self.0.building).take() {
                Some(building) => match building.join() {
                    Ok(built) => built.map_err(|err| error_chain(&err)),
                    Err(_) => Err("the OTLP client could not be built".to_string()),
                },
                None => Err("the OTLP client could not be built".to_string()),
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

#[cfg(test)]
mod tests;
