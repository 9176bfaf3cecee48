#!/usr/bin/env bash
# The end-to-end suite against real Dynamo (frontend + CPU mocker), versions 1.2.1 and 1.6.1.
#
#   scripts/dynamo-e2e.sh          (cache: $WORKER_DYNAMO_CACHE, default ~/.cache/worker-dynamo-e2e)
#
# Installs both versions from PyPI into cached virtualenvs, builds the test binary, and runs
# the ignored tests of tests/it/dynamo_e2e.rs inside a fresh network namespace that has only loopback, so no packet
# can leave the machine. The test starts and stops every Dynamo process itself (by process
# group) and fails on any failed check; so does this script.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${WORKER_DYNAMO_CACHE:-$HOME/.cache/worker-dynamo-e2e}
bash scripts/dynamo-install.sh "$cache"

build_log=$(cargo test --locked --test it --no-run 2>&1) || { printf '%s\n' "$build_log" >&2; exit 1; }
bin=$(printf '%s\n' "$build_log" | sed -n 's/.*Executable tests\/it\/main.rs (\(.*\))$/\1/p' | tail -n 1)
[ -x "$bin" ] || { echo "dynamo-e2e: test binary not found in cargo output" >&2; exit 1; }

# Only the ignored tests of the dynamo_e2e module; a filter that matched none would pass
# silently, so the count is checked.
tests=(dynamo_e2e:: --ignored --test-threads=1 --nocapture)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if unshare -n true 2>/dev/null; then
  echo "dynamo-e2e: running in a loopback-only network namespace"
  unshare -n -- bash -c 'ip link set lo up && WORKER_DYNAMO_E2E="$1" exec "${@:2}"' _ "$cache" "$bin" "${tests[@]}" | tee "$log"
else
  echo "dynamo-e2e: cannot create a network namespace here (needs CAP_SYS_ADMIN);" \
       "running on loopback addresses instead" >&2
  WORKER_DYNAMO_E2E="$cache" "$bin" "${tests[@]}" | tee "$log"
fi
grep -q '^test result: ok\. 2 passed' "$log" || { echo "dynamo-e2e: expected 2 passing tests" >&2; exit 1; }
