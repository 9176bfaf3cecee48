#!/usr/bin/env bash
# The release build and the benchmarks share compiled crates only while every crate in both
# dependency graphs has one set of features: a dev-dependency that turns on one more feature
# of a shared crate makes `cargo bench` compile that crate, and all that depend on it, again.
# Cargo.toml turns the test servers' features on in the release graph too; this names any
# crate whose features still differ, and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  cargo tree --locked -e "$1" -f '{p} [{f}]' --prefix none | sed 's/ (\*)$//' | sort -u
}
release=$(mktemp)
benches=$(mktemp)
trap 'rm -f "$release" "$benches"' EXIT
features normal >"$release"
features normal,dev >"$benches"
# A crate can be in a graph more than once (built for the host too): compare the sets.
drift=$(awk 'NR == FNR { release[$1 " " $2] = release[$1 " " $2] " " $NF; next }
  { benches[$1 " " $2] = benches[$1 " " $2] " " $NF }
  END { for (crate in benches) if (crate in release && release[crate] != benches[crate])
    print "  " crate ":" release[crate] "  →" benches[crate] }' "$release" "$benches")
if [ -n "$drift" ]; then
  echo "check-shared-features: these crates have other features in the benchmarks' graph" >&2
  echo "(release features → with the dev-dependencies); turn the extra ones on in Cargo.toml:" >&2
  echo "$drift" >&2
  exit 1
fi
echo "check-shared-features: the release and benchmark graphs share every crate's features"
