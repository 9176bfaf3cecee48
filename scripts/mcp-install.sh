#!/usr/bin/env bash
# Installs the MCP servers that the MCP end-to-end tests run against, pinned:
#   - the official Python MCP SDK (PyPI `mcp`) in a virtualenv, which runs tests/mcp/fault_server.py;
#   - the reference server `@modelcontextprotocol/server-everything` from npm.
#
#   scripts/mcp-install.sh [cache-dir]     (default: $WORKER_MCP_CACHE or ~/.cache/worker-mcp-e2e)
#
# Layout of the cache:
#   $CACHE/venv/bin/python                                   runs tests/mcp/fault_server.py
#   $CACHE/node/node_modules/.bin/mcp-server-everything      `[stdio|streamableHttp|sse]`
# A stamp file names the pinned versions; with it present and matching, this returns at once.
set -euo pipefail

MCP_PY_VERSION=2.3.0
EVERYTHING_VERSION=2026.8.31

CACHE=${1:-${WORKER_MCP_CACHE:-$HOME/.cache/worker-mcp-e2e}}
PYTHON=${PYTHON:-python3}
STAMP=$CACHE/.complete
WANT="mcp==$MCP_PY_VERSION @modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
EVERYTHING_BIN=$CACHE/node/node_modules/.bin/mcp-server-everything
mkdir -p "$CACHE"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && [ -x "$CACHE/venv/bin/python" ] && [ -x "$EVERYTHING_BIN" ]; then
  echo "ready: $WANT in $CACHE (cached)"
  exit 0
fi
rm -f "$STAMP"

# Python SDK. Reinstalled from scratch only when the venv is missing or has another version.
if [ "$("$CACHE/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" \
  != "$MCP_PY_VERSION" ]; then
  echo "mcp $MCP_PY_VERSION: installing into $CACHE/venv"
  rm -rf "$CACHE/venv"
  "$PYTHON" -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_PY_VERSION"
fi
"$CACHE/venv/bin/python" -c 'import mcp.server.lowlevel, mcp.server.stdio, uvicorn'

# server-everything. npm pins it exactly in $CACHE/node/package.json.
if [ "$(node -p "require('$CACHE/node/node_modules/@modelcontextprotocol/server-everything/package.json').version" \
  2>/dev/null)" != "$EVERYTHING_VERSION" ]; then
  echo "server-everything $EVERYTHING_VERSION: installing into $CACHE/node"
  mkdir -p "$CACHE/node"
  npm install --prefix "$CACHE/node" --no-audit --no-fund --save-exact --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi
[ -x "$EVERYTHING_BIN" ] || { echo "missing $EVERYTHING_BIN" >&2; exit 1; }

echo "$WANT" > "$STAMP"
echo "ready: $WANT in $CACHE (python: $CACHE/venv/bin/python, server-everything: $EVERYTHING_BIN)"
