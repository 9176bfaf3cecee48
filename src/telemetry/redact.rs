//! The last pass every span takes before export: every string in it (name, attribute
//! values, event names and attributes, link attributes, the status description) goes through
//! the run's redactor. Content attributes are also redacted before they are cut to
//! [`CONTENT_LIMIT`](super::CONTENT_LIMIT), so a cut cannot keep half a secret; this pass
//! catches everything else (an error status that quotes a server's body, a tool call id).

use std::borrow::Cow;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::SpanData;

use crate::secrets::Secrets;

/// Redacts every span of a batch about to be exported.
pub(super) fn redact_spans(secrets: &Secrets, batch: &mut [SpanData]) {
    if !secrets.is_empty() {
        for span in batch.iter_mut() {
            redact_span(secrets, span);
        }
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
                for t in texts.iter_mut() {
                    redact_string(secrets, t);
                }
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
