#!/usr/bin/env bash
# worker against codex and Pi on the same scripted 3-turn task (benches/peers.rs, docs/PEERS.md).
#
#   scripts/bench-peers.sh      (or `just bench-peers`)
#
#   BENCH_PAIRS=10              pairs of (worker, peer) runs per peer
#   BENCH_PEERS=codex,pi        a subset of codex, pi, pi-0.73 (default: all three)
#   WORKER_PEERS_DIR=DIR        where the peers are installed (default ~/.cache/worker-peers)
#
# Installs the pinned peers if they are missing (scripts/peers-install.sh), builds everything,
# then runs the benchmark. As root with `ip`, it runs inside a fresh network namespace that has
# only loopback, whose resolv.conf points at the benchmark's stub DNS on 127.0.0.1 (no packet
# leaves the machine, and a name lookup fails at once); the namespace and its resolv.conf are
# removed on exit, whatever happens. Otherwise it runs on plain loopback and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

export BENCH_PAIRS=${BENCH_PAIRS:-10}
export BENCH_PEERS=${BENCH_PEERS:-}
export WORKER_PEERS_DIR=${WORKER_PEERS_DIR:-$HOME/.cache/worker-peers}

bash scripts/peers-install.sh "$WORKER_PEERS_DIR"
cargo build --release --locked
# Everything the benchmark needs is built here: cargo cannot reach the network in the namespace.
cargo bench --locked --no-run

ns=
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  ns=worker-peers-$$
  cleanup() {
    [ -n "$ns" ] || return 0
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  }
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if ! { mkdir -p "/etc/netns/$ns" \
      && echo "nameserver 127.0.0.1" > "/etc/netns/$ns/resolv.conf" \
      && ip netns add "$ns" && ip -n "$ns" link set lo up; }; then
    cleanup
    ns=
    echo "bench-peers: could not create a network namespace here" >&2
  fi
fi
if [ -n "$ns" ]; then
  echo "bench-peers: in network namespace $ns (loopback only; DNS: the benchmark's stub on 127.0.0.1:53)"
  # Ahead of background jobs (a build, say): the same for worker and the peers.
  ip netns exec "$ns" nice -n -10 cargo bench --offline --locked -- peers
else
  echo "bench-peers: no network namespace (needs root and \`ip\`): running on plain loopback with" \
       "the system resolver (a harness that looks names up may wait on it)"
  cargo bench --offline --locked -- peers
fi
echo "bench-peers: done in ${SECONDS}s"
