//! The integration tests, one binary: each module drives the real `worker` binary (or the
//! library) against servers on 127.0.0.1 speaking the real wire formats.
//!
//! `cargo test` runs them all except `dynamo_e2e`, which needs real Dynamo and is run by
//! `scripts/dynamo-e2e.sh` (`--ignored`).

// Tests and their helpers may unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agentic_pi;
mod anthropic;
mod architecture;
mod attacks;
mod budgets;
mod cli;
mod compaction;
mod control;
mod control_records;
mod dynamo_bridge;
mod dynamo_e2e;
mod event_schema;
mod faults;
mod github_profiles;
mod github_tools;
mod golden;
mod guardian;
mod lifecycle;
mod mcp;
mod mcp_e2e;
mod model_server;
mod output_schema;
mod parity_cli;
mod parity_config;
mod parity_github;
mod parity_prices;
mod parity_skills;
mod parity_telemetry;
mod parity_web;
mod permissions;
mod prefix_cache;
mod process;
mod promises;
mod providers;
mod sandbox;
mod serving;
mod sessions;
mod standby;
mod subagents;
mod telemetry;
mod tool_definitions;
mod web;
