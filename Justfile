# Developer shortcuts (https://github.com/casey/just); every recipe is a plain command.

# The README's offline quickstart.
quickstart:
    echo "List the files here and read the README, then summarize the project in one sentence." \
      | cargo run --release -- run --model replay/fixtures/quickstart/model.jsonl --cwd fixtures/quickstart/workspace

test:
    cargo test

# Everything CI runs.
ci:
    bash .ci/run

# Against real Dynamo 1.2.1 and 1.6.1 (installs them into ~/.cache on first use).
e2e-dynamo:
    bash scripts/dynamo-e2e.sh

# Against real MCP servers: server-everything and the fault server (installs them into ~/.cache).
e2e-mcp:
    bash scripts/mcp-e2e.sh

# Every benchmark, or the one named: `just bench run` (benches/suite.rs lists them).
bench *name:
    cargo bench -- {{name}}

# worker against codex and Pi on one scripted task (installs them into ~/.cache; docs/PEERS.md).
bench-peers:
    bash scripts/bench-peers.sh

# Rewrite fixtures/*/expected.jsonl from the current binary; review the diff before committing.
bless:
    WORKER_BLESS=fixtures cargo test --test it golden

# Mutation testing of the critical modules (docs/TESTING.md); `just mutants secrets` for one group.
mutants *groups:
    bash scripts/mutants.sh baseline {{groups}}

# Only the mutants on lines changed since docs/mutants-base, as CI runs it.
mutants-diff:
    bash scripts/mutants.sh diff
