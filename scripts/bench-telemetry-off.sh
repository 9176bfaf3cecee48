#!/usr/bin/env bash
# Compares the default build (telemetry compiled in, switched off at run time) with a build
# without the `otel` feature: `--version` and the replayed 3-turn run, interleaved in one
# benchmark process. Telemetry that is not asked for should cost nothing measurable.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --no-default-features --target-dir target/no-otel
WORKER_BASELINE_BIN="$PWD/target/no-otel/release/worker" cargo bench --locked -- run
