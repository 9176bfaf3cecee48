#!/usr/bin/env bash
# Mutation testing of the modules where a silent bug costs most (docs/TESTING.md, "Mutation
# testing"). cargo-mutants changes the code one small way at a time (a function returns a default,
# `<` becomes `<=`, a `!` disappears) and runs the tests: a mutant the tests do not catch is a
# behaviour no test pins.
#
#   scripts/mutants.sh baseline [GROUP...]   every mutant of the named groups (default: all)
#   scripts/mutants.sh diff [BASE]           only mutants on lines changed since BASE
#                                            (default: the commit in docs/mutants-base);
#                                            assumes the suite passes unmutated
#
# Each group is mutated with the tests that guard it (a filter over the unit tests and the
# integration suite), so a mutant costs one incremental build and seconds of tests, not the
# whole suite. The baseline runs in two stages: the unit tests alone (one small test binary to
# rebuild per mutant), then the unit and integration tests for the mutants that survived the
# first. Mutants are applied in place, one at a time, and the tree is restored after each (and
# on exit); the source tree must be clean. Results land in mutants.out/GROUP/.
#
# Exit status: 0 when every mutant was caught or is listed as equivalent in docs/TESTING.md, 1
# otherwise (the survivors are printed), 2 on a usage error, 3 when the diff pass outran its
# time box (MUTANTS_TIME_BOX seconds, default 900): then run the baseline and move the base.
set -euo pipefail
cd "$(dirname "$0")/.."

version=27.1.0
tools=${WORKER_TOOLS:-$HOME/.cache/worker-tools}
mutants=$tools/cargo-mutants-$version/bin/cargo-mutants

# name | files (globs) | test filters (a test runs when its path contains one of them)
groups=(
  "secrets|src/secrets.rs src/cli/credentials.rs|secret credential redact"
  "paths|src/tools/access.rs src/tools/confined.rs src/tools/paths.rs|tools::access tools::confined tools::paths tools::write tools::edit attacks::files permissions hidden"
  "sandbox|src/sandbox/view.rs src/sandbox/seccomp.rs src/sandbox/proxy/allow.rs|sandbox standby attacks::host attacks::egress"
  "budgets|src/agent/budget.rs src/cli/limits.rs|budget limit max_ promises::"
  "exit|src/exit.rs|exit process:: attacks::validation promises::"
  "ssrf|src/net/*.rs src/web/guard.rs|net:: guard ssrf"
  "compaction|src/agent/compaction.rs|compaction"
  "sessions|src/session/*.rs src/ids/mod.rs|session"
)

die() { echo "mutants: $*" >&2; exit 2; }

install() {
  [[ -x $mutants ]] && return
  echo "mutants: installing cargo-mutants $version into $tools" >&2
  cargo install --quiet --locked "cargo-mutants@$version" --root "$tools/cargo-mutants-$version"
}

# Runs one group. $1 group line, $2 the test targets ("--lib" or "--lib --test=it"), $3..
# extra cargo-mutants options.
run_group() {
  local name files filters
  IFS='|' read -r name files filters <<<"$1"
  local stage=$2
  local -a targets=()
  for t in $stage; do targets+=("--cargo-arg=$t"); done
  shift 2
  local -a file_args=()
  for f in $files; do file_args+=(-f "$f"); done
  echo "==> mutants: $name ($files) with $stage"
  mkdir -p "mutants.out/$name"
  local status=0
  "${limit[@]}" "$mutants" mutants --in-place --no-shuffle --minimum-test-timeout 60 --output "mutants.out/$name" \
    "${targets[@]}" "${file_args[@]}" "$@" -- -- $filters || status=$?
  # 0: all caught; 2: some missed; 3: some timed out (a mutant that hangs is caught by the
  # budget in real use, but is reported here so it can be looked at).
  case $status in
    0 | 2 | 3) ;;
    124) echo "mutants: the diff pass outran its time box (MUTANTS_TIME_BOX=${MUTANTS_TIME_BOX:-900} s); run scripts/mutants.sh baseline and commit its commit to docs/mutants-base" >&2; exit 3 ;;
    *) echo "mutants: cargo-mutants failed for $name (exit $status)" >&2; exit 1 ;;
  esac
}

# A mutant's name without its line (`src/x.rs:12:27: replace | with & in f` ->
# `src/x.rs:27: replace | with & in f`): a listing survives edits above it, while the column
# still tells two mutants of one line apart.
key() { sed -E 's/^([^:]+):[0-9]+:([0-9]+):/\1:\2:/'; }

# The survivors not listed as equivalent in docs/TESTING.md (a listing is a table row whose
# first cell is the mutant's name in backticks, with `|` written `\|` as tables need).
unexplained() {
  local out=mutants.out
  [[ -d $out ]] || return 0
  local listed
  listed=$(grep -oE '^\| `src/[^`]+`' docs/TESTING.md | sed -E 's/^\| `//; s/`$//; s/\\\|/|/g' | key)
  find "$out" -path "*/mutants.out/missed.txt" -exec cat {} + | sort -u | while IFS= read -r line; do
    [[ -z $line ]] && continue
    grep -qxF -- "$(key <<<"$line")" <<<"$listed" || echo "$line"
  done
}

restore() { git checkout --quiet -- src; }

# A property that fails under a mutant is expected: no shrinking, no regression file.
export PROPTEST_DISABLE_FAILURE_PERSISTENCE=1 PROPTEST_MAX_SHRINK_ITERS=0

[[ $# -ge 1 ]] || die "usage: scripts/mutants.sh baseline [GROUP...] | diff [BASE]"
mode=$1
shift
[[ -z $(git status --porcelain -- src) ]] || die "src/ has uncommitted changes; mutants are applied in place"
install
trap restore EXIT
rm -rf mutants.out
limit=()

case $mode in
  baseline)
    for g in "${groups[@]}"; do
      name=${g%%|*}
      if [[ $# -eq 0 ]] || [[ " $* " == *" $name "* ]]; then
        run_group "$g" --lib
        run_group "$g" "--lib --test=it" --iterate
      fi
    done
    ;;
  diff)
    base=${1:-$(cat docs/mutants-base)}
    deadline=$((SECONDS + ${MUTANTS_TIME_BOX:-900}))
    for g in "${groups[@]}"; do
      IFS='|' read -r name files _ <<<"$g"
      # shellcheck disable=SC2086 # the globs are meant to expand
      diff=$(git diff "$base" -- $files)
      [[ -z $diff ]] && continue
      diff_file=$(mktemp)
      printf '%s\n' "$diff" >"$diff_file"
      limit=(timeout "$((deadline > SECONDS ? deadline - SECONDS : 1))")
      # The suite has just passed unmutated (CI runs it first): no baseline run per group.
      run_group "$g" "--lib --test=it" --in-diff "$diff_file" --baseline skip --timeout 120
    done
    ;;
  *) die "unknown mode: $mode" ;;
esac

survivors=$(unexplained)
if [[ -n $survivors ]]; then
  echo "mutants: survivors not shown equivalent in docs/TESTING.md:" >&2
  printf '  %s\n' "$survivors" >&2
  exit 1
fi
echo "mutants: every mutant caught or shown equivalent"
