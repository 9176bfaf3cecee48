#!/usr/bin/env bash
# The end-to-end suite of the MCP client against real servers: the reference server
# (`@modelcontextprotocol/server-everything`, npm) and the fault server on the Python MCP SDK
# (tests/mcp/fault_server.py), over stdio and streamable HTTP.
#
#   scripts/mcp-e2e.sh          (cache: $WORKER_MCP_CACHE, default ~/.cache/worker-mcp-e2e)
#
# Installs both (pinned) with scripts/mcp-install.sh, builds the test binary, and runs the
# ignored tests of tests/it/mcp_e2e/. Every test starts and stops its own servers; the script
# fails on any failed test, and when the filter ran fewer tests than the module has.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${WORKER_MCP_CACHE:-$HOME/.cache/worker-mcp-e2e}
bash scripts/mcp-install.sh "$cache"

build_log=$(cargo test --locked --test it --no-run 2>&1) || { printf '%s\n' "$build_log" >&2; exit 1; }
bin=$(printf '%s\n' "$build_log" | sed -n 's/.*Executable tests\/it\/main.rs (\(.*\))$/\1/p' | tail -n 1)
[ -x "$bin" ] || { echo "mcp-e2e: test binary not found in cargo output" >&2; exit 1; }

expected=$("$bin" mcp_e2e:: --ignored --list 2>/dev/null | grep -c ': test$' || true)
[ "$expected" -ge 10 ] || { echo "mcp-e2e: expected the mcp_e2e tests, found $expected" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
WORKER_MCP_E2E="$cache" "$bin" mcp_e2e:: --ignored --test-threads=2 | tee "$log"
grep -q "^test result: ok\. $expected passed" "$log" \
  || { echo "mcp-e2e: expected $expected passing tests" >&2; exit 1; }
