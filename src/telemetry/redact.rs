//! The last pass every span takes before export: every string in it (name, attribute
//! values, event names and attributes, link attributes, the status description) goes through
//! the run's redactor. Content attributes are also redacted before they are cut to
//! [`CONTENT_LIMIT`](super::CONTENT_LIMIT), so a cut cannot keep half a secret; this pass
//! catches everything else (an error status that quotes a server's body, a tool call id).

use std::borrow::Cow;
use std::time::Duration;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::secrets::Secrets;

/// A span exporter that redacts each batch before passing it on.
#[derive(Debug)]
pub struct Redacted<E> {
    pub inner: E,
    pub secrets: Secrets,
}

impl<E: SpanExporter> SpanExporter for Redacted<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        if !self.secrets.is_empty() {
            batch
                .iter_mut()
                .for_each(|span| redact_span(&self.secrets, span));
        }
        self.inner.export(batch).await
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

fn redact_span(secrets: &Secrets, span: &mut SpanData) {
    redact_cow(secrets, &mut span.name);
    redact_attributes(secrets, &mut span.attributes);
    for event in &mut span.events.events {
        redact_cow(secrets, &mut event.name);
        redact_attributes(secrets, &mut event.attributes);
    }
    for link in &mut span.links.links {
        redact_attributes(secrets, &mut link.attributes);
    }
    if let Status::Error { description } = &mut span.status {
        redact_cow(secrets, description);
    }
}

fn redact_cow(secrets: &Secrets, text: &mut Cow<'static, str>) {
    if let Cow::Owned(clean) = secrets.redact(text) {
        *text = Cow::Owned(clean);
    }
}

fn redact_attributes(secrets: &Secrets, attributes: &mut [KeyValue]) {
    for attribute in attributes {
        match &mut attribute.value {
            Value::String(text) => redact_string(secrets, text),
            Value::Array(Array::String(texts)) => {
                texts.iter_mut().for_each(|t| redact_string(secrets, t));
            }
            _ => {}
        }
    }
}

fn redact_string(secrets: &Secrets, text: &mut StringValue) {
    if let Cow::Owned(clean) = secrets.redact(text.as_str()) {
        *text = StringValue::from(clean);
    }
}
