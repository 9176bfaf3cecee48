//! The stream's JSON Schema, generated from the types of this module, so that the published
//! schema (`docs/events.schema.json`) cannot drift from what worker prints. One schema
//! describes one line: the header, or an event with its `sessionId` and `timestamp`. Its
//! `$id` carries the event schema version. Properties are open: fields are only ever added
//! within a version, and a reader must ignore the ones it does not know.

use schemars::JsonSchema;
use serde_json::{Value, json};

use super::{EVENT_SCHEMA_VERSION, Event, SessionHeader};

/// Any line after the header.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct EventLine<'a> {
    #[serde(flatten)]
    event: Event<'a>,
    /// The header's `id`.
    session_id: String,
    /// RFC 3339, UTC, milliseconds.
    timestamp: String,
}

/// One line of the stream.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Line<'a> {
    Header(SessionHeader<'a>),
    Event(EventLine<'a>),
}

/// The schema of one line of worker's JSONL stream.
pub fn json_schema() -> Value {
    // What worker writes (serialize), not what a parser would accept: a field skipped when
    // empty is optional.
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Line>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "$id".into(),
            json!(format!("urn:worker:event-schema:{EVENT_SCHEMA_VERSION}")),
        );
        object.insert("title".into(), json!("worker event stream line"));
        object.insert(
            "description".into(),
            json!(format!(
                "One line of `worker run` stdout, event schema {EVENT_SCHEMA_VERSION}: the `session` header or an event."
            )),
        );
    }
    value
}
