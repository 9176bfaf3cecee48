//! worker: a one-shot, headless coding agent.
//!
//! An orchestrator runs `worker run --model <provider>/<id>` once per task, pipes the prompt
//! into stdin and reads a JSONL event stream from stdout until the process exits. This crate
//! is that program as a library: [`run`] takes a [`RunConfig`], the prompt and an
//! [`EventSink`], drives the model/tool loop, and returns a [`RunResult`]. It never writes to
//! stdout or stderr itself; the binary (`main.rs`) decides where events and warnings go.
//!
//! Subsystems, one folder each: `events` (the wire schema), `llm` (the model client),
//! `agent` (the loop), `tools` (what the model can do), `dynamo` (the trace bridge), `github`
//! (GitHub tools by permission profile), `telemetry` (OpenTelemetry export), `net` (the
//! addresses worker never connects to on another's behalf), `config` and `cli`.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod bless;
pub mod cli;
pub mod config;
pub mod control;
pub mod dynamo;
pub mod events;
pub mod exit;
pub mod extension;
pub mod file_search;
pub mod github;
pub mod http;
pub mod ids;
pub mod input_file;
pub mod live;
pub mod llm;
pub mod mcp;
pub mod net;
pub mod output;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod skills;
pub mod subagents;
pub mod sync;
pub mod telemetry;
pub mod text;
pub mod tools;
pub mod web;

pub use agent::{AbortReason, RunControl, RunResult, run};
pub use config::RunConfig;
pub use events::{CollectorSink, EventSink, StdoutSink};
pub use exit::ExitStatus;
