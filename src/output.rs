//! Structured final output (`--output-schema`): the model works with its tools as usual, and
//! its final answer must be one JSON value valid against the caller's JSON Schema.
//!
//! The system prompt asks for it; the answer is parsed (a fenced ```json block is accepted)
//! and validated with `boon`; an invalid answer gets one corrective turn listing the problems,
//! sent with `response_format: json_schema` where the server takes it (chat completions; not
//! on earlier turns, where a forced JSON format would rule out tool calls). Still invalid, the
//! run fails with `fatal_error{kind:"output_schema"}`.

use serde_json::Value;

/// A compiled output schema.
pub struct OutputSchema {
    schema: Value,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish()
    }
}

const RESOURCE: &str = "urn:worker:output-schema";

/// Why a schema was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema could not be taken in as a document.
    #[error(transparent)]
    Resource(Box<boon::CompileError>),
    /// The schema is not a valid JSON Schema.
    #[error("not a valid JSON Schema: {0}")]
    Invalid(#[source] Box<boon::CompileError>),
}

/// What is wrong with a final answer; the text is the corrective turn's list of problems.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The answer is not one JSON value.
    #[error("the answer is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// The value does not satisfy the schema.
    #[error("{problems}")]
    Invalid {
        /// The validator's findings, one line, separated by `; `.
        problems: String,
    },
}

impl OutputSchema {
    /// Compiles a schema; an invalid one is an error to report before the run.
    pub fn new(schema: Value) -> Result<OutputSchema, SchemaError> {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(RESOURCE, schema.clone())
            .map_err(|err| SchemaError::Resource(Box::new(err)))?;
        let index = compiler
            .compile(RESOURCE, &mut schemas)
            .map_err(|err| SchemaError::Invalid(Box::new(err)))?;
        Ok(OutputSchema {
            schema,
            schemas,
            index,
        })
    }

    /// The JSON Schema as the caller gave it.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The system prompt's instructions.
    pub fn prompt_section(&self) -> String {
        format!(
            "When you have finished the task, give your final answer as a single JSON value that is valid against this JSON Schema, and nothing else (no prose around it):\n\n{}",
            serde_json::to_string_pretty(&self.schema).unwrap_or_default()
        )
    }

    /// The final answer as a valid JSON value, or what is wrong with it.
    pub fn check(&self, answer: &str) -> Result<Value, AnswerError> {
        let text = unfence(answer.trim());
        let value: Value = serde_json::from_str(text).map_err(AnswerError::NotJson)?;
        self.validate(&value).map(|()| value)
    }

    /// Whether `value` is valid against the schema, and if not, what is wrong with it.
    pub fn validate(&self, value: &Value) -> Result<(), AnswerError> {
        match self.schemas.validate(value, self.index) {
            Ok(()) => Ok(()),
            // One line: the validator's first line names only the schema.
            Err(err) => Err(AnswerError::Invalid {
                problems: format!("{err:#}")
                    .lines()
                    .skip(1)
                    .map(|line| line.trim().trim_start_matches("- ").to_string())
                    .filter(|line| !line.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            }),
        }
    }

    /// The message for the corrective turn.
    pub fn correction(&self, problems: &str) -> String {
        format!(
            "Your final answer is not valid against the required JSON Schema:\n{problems}\n\nReply with only the corrected JSON value."
        )
    }
}

/// The content of a ```json … ``` (or ``` … ```) block that is the whole answer.
fn unfence(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let inner = inner.strip_suffix("```").unwrap_or(inner);
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.trim()
}

#[cfg(test)]
mod tests;
