//! The one way to define a tool: a [`ToolSpec`], a typed argument struct, and `run`.
//!
//! The argument struct is the single source of truth for what the model may send: its JSON
//! Schema (the `parameters` the model reads) is derived from it with `schemars`, and the same
//! type is what `serde` parses the call's arguments into, so the two cannot drift. Field doc
//! comments become the parameter descriptions. Lenient scalars (a number sent as `"10"`) use
//! the types in [`super::args`], which carry their schema and their coercion together.
//!
//! [`TypedTool`] is what a tool implements; every `TypedTool` is also a [`Tool`], the
//! object-safe face the registry and the loop use.

use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Tool, ToolContext, ToolError, ToolFuture};
use crate::events::ToolResult;

/// What the model is told about a tool besides its parameters.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The name the model calls the tool by (`read`, `github_get_issue`).
    pub name: &'static str,
    /// What the model reads to decide when and how to call the tool.
    pub description: &'static str,
    /// The system prompt's one line for the tool; `None`: the description's first sentence.
    pub snippet: Option<&'static str>,
    /// The tool never changes anything; a batch of read-only calls runs concurrently.
    pub read_only: bool,
}

impl ToolSpec {
    /// The system prompt's line for the tool: `snippet`, else the description up to its first
    /// `. `.
    pub fn snippet(&self) -> &'static str {
        self.snippet.unwrap_or_else(|| {
            self.description
                .split_once(". ")
                .map_or(self.description, |(first, _)| first)
        })
    }
}

/// A tool with typed arguments. Implement this; the registry sees it as a [`Tool`].
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments the model sends: parsed with serde, and their JSON Schema is the tool's
    /// `parameters`.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// The tool's name, description, prompt line and read-only flag.
    fn spec(&self) -> &ToolSpec;

    /// Runs one call with its parsed arguments; an `Err` becomes an `isError: true` result.
    fn run(
        &self,
        args: Self::Args,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolResult, ToolError>> + Send;

    /// How long `run` needs, once [`ToolContext::cancel`] fires, to stop what it started and
    /// return what it has. A tool that keeps no processes (the default) is dropped at once.
    fn stop_grace(&self) -> Duration {
        Duration::ZERO
    }

    /// The problem reported for a required argument that is missing. Tool families keep the
    /// wording their models and prompts already know.
    fn missing_field(&self, field: &str, _schema: &Value) -> String {
        format!("missing field `{field}`")
    }
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        self.spec().name
    }

    fn description(&self) -> &str {
        self.spec().description
    }

    fn parameters(&self) -> Value {
        parameters_of::<T::Args>()
    }

    fn parameters_text(&self) -> Cow<'_, str> {
        match super::stored::text(std::any::type_name::<T::Args>()) {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(derive_parameters::<T::Args>().to_string()),
        }
    }

    fn prompt_snippet(&self) -> &str {
        self.spec().snippet()
    }

    fn is_read_only(&self) -> bool {
        self.spec().read_only
    }

    fn stop_grace(&self) -> Duration {
        TypedTool::stop_grace(self)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let parsed = parse_args::<T::Args>(self.spec().name, &args, |field| {
                self.missing_field(field, &parameters_of::<T::Args>())
            })?;
            self.run(parsed, ctx).await
        })
    }
}

/// The JSON Schema of an argument type, shaped as tool `parameters`: one inline object
/// schema, no titles or formats, optional fields without `null`, and `required` always present.
/// The built-in tools' schemas are read from their stored copy ([`super::stored`]), which a test
/// keeps identical to what [`derive_parameters`] makes; any other type's is derived.
pub fn parameters_of<A: JsonSchema>() -> Value {
    super::stored::parameters(std::any::type_name::<A>()).unwrap_or_else(derive_parameters::<A>)
}

/// [`parameters_of`], derived from the type with `schemars` rather than read.
pub(super) fn derive_parameters<A: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft07();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    tidy(&mut value);
    if let Value::Object(root) = &mut value {
        root.remove("description");
        root.entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
    value
}

/// Drops what schemars adds that the model gains nothing from, everywhere in the schema.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(schema) => {
            schema.remove("title");
            schema.remove("format");
            schema.remove("$schema");
            strip_null(schema);
            for (key, child) in schema.iter_mut() {
                match (key.as_str(), child) {
                    // Keys of `properties` are parameter names, not schema keywords.
                    ("properties", Value::Object(properties)) => {
                        properties.values_mut().for_each(tidy);
                    }
                    (_, child) => tidy(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// `"type": ["string", "null"]` and a `null` in `enum` (how schemars marks an `Option`) are
/// dropped: an absent argument is how the model says "none".
fn strip_null(schema: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// Parses a tool's arguments, or explains to the model what was wrong with them: the field
/// (when the problem is inside one) and the arguments as received.
pub fn parse_args<A: DeserializeOwned>(
    tool: &str,
    args: &Value,
    missing_field: impl Fn(&str) -> String,
) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(args).map_err(|err| {
        let field = err.path().to_string();
        let inner = plain_enum_error(err.into_inner().to_string());
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'));
        let problem = match (field.as_str(), missing) {
            (".", Some(name)) => missing_field(name),
            (".", None) => inner,
            _ => format!("{field}: {inner}"),
        };
        invalid_args(tool, &problem, args)
    })
}

/// serde's "unknown variant `x`, expected one of `a`, `b`" as "expected one of a, b, got "x"".
fn plain_enum_error(message: String) -> String {
    let Some((variant, expected)) = message
        .strip_prefix("unknown variant `")
        .and_then(|rest| rest.split_once("`, expected one of "))
    else {
        return message;
    };
    format!(
        "expected one of {}, got {}",
        expected.replace('`', ""),
        Value::String(variant.to_string())
    )
}

/// The validation failure the model reads, for checks beyond the argument types.
pub fn invalid_args(tool: &str, problem: &str, args: &Value) -> ToolError {
    let received = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    ToolError::new(format!(
        "Validation failed for tool \"{tool}\":\n  - {problem}\n\nReceived arguments:\n{received}"
    ))
}
