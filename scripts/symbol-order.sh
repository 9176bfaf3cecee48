#!/usr/bin/env bash
# Regenerates build/symbol-order.txt: the functions a typical run executes, which the release
# link places together at the start of .text (build.rs passes the file to the linker).
#
# Why: the kernel maps a program's code 64 KiB at a time around each page it touches, so code a
# run needs, spread over a 16 MiB .text, made a short run map about 9 MiB of it. Clustered, the
# same run maps a fraction of that, and starts faster for the page faults it no longer takes.
#
# How: the release binary runs a few typical workloads under valgrind's callgrind (every
# function executed, not a sample), and the file lists their symbols in the order first seen.
# Symbols that a later change renames are skipped by the linker, so a stale file costs memory,
# never correctness; `cargo bench -- run` shows the peak RSS it buys.
#
# Needs valgrind and python3 (a stdlib mock server). Run from anywhere: bash scripts/symbol-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

command -v valgrind > /dev/null || { echo "symbol-order: valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "symbol-order: python3 is needed" >&2; exit 2; }

work=$(mktemp -d)
mock_pid=
cleanup() {
  [ -n "$mock_pid" ] && kill "$mock_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A chat-completions server that scripts four turns: ls, bash `ls`, read README.md, answer.
cat > "$work/mock.py" << 'EOF'
import http.server, json, socketserver, sys, threading
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path.startswith("/otlp/"):
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body = json.loads(raw)
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        calls = [("ls", {}), ("bash", {"command": "ls"}), ("read", {"path": "README.md"})]
        if done < len(calls):
            name, args = calls[done]
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "c%d" % done, "type": "function",
                     "function": {"name": name, "arguments": json.dumps(args)}}]}
            events = [{"choices": [{"index": 0, "delta": delta}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
        else:
            events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "A toy project."}}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 900, "completion_tokens": 5}}]
        out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
# A ZeroMQ PULL peer for the tool-event tee (ZMTP 3.0, NULL mechanism): the greeting, READY,
# then whatever comes is read and dropped.
class Pull(socketserver.BaseRequestHandler):
    def handle(self):
        # Signature, version 3.0, mechanism, as-server and filler: 64 bytes.
        greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00")
        greeting += b"\x00" * 32
        body = b"\x05READY" + b"\x0bSocket-Type" + (4).to_bytes(4, "big") + b"PULL"
        try:
            self.request.sendall(greeting + b"\x04" + bytes([len(body)]) + body)
            while self.request.recv(65536):
                pass
        except OSError:
            pass
class PullServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
pull = PullServer(("127.0.0.1", 0), Pull)
threading.Thread(target=pull.serve_forever, daemon=True).start()
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], pull.server_address[1], flush=True)
server.serve_forever()
EOF
# `cargo bench` links this same binary (Cargo.toml gives both graphs one set of features), so
# the benchmarks measure the layout the release build ships.
cargo build --release --locked
cp target/release/worker "$work/worker-release"

coproc MOCK { exec python3 "$work/mock.py"; }
mock_pid=$MOCK_PID
read -r port zmtp_port <&"${MOCK[0]}"

mkdir -p "$work/project/src"
printf '# toy\nA toy project.\n' > "$work/project/README.md"
printf 'fn main() {}\n' > "$work/project/src/main.rs"

n=0
profile() {
  n=$((n + 1))
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$n" --dump-instr=no --compress-strings=no --demangle=no \
    "$@" > /dev/null 2> "$work/valgrind.$n" < "${PROFILE_STDIN:-/dev/null}" || {
    echo "symbol-order: workload $n failed: $*" >&2
    tail -5 "$work/valgrind.$n" >&2
    exit 1
  }
}

workloads() {
  local bin=$1
  profile "$bin" --version
  profile "$bin" "${live[@]}" --cwd "$work/project" --no-session "$prompt"
  profile "$bin" "${live[@]}" --cwd "$work/project" --session-dir "$work/sessions" "$prompt"
  profile "$bin" "${live[@]}" --cwd "$work/project" --no-session --sandbox none "$prompt"
  profile "$bin" "${live[@]}" --cwd "$work/project" --no-session \
    --otel --otel-endpoint "http://127.0.0.1:$port/otlp" "$prompt"
  DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT="tcp://127.0.0.1:$zmtp_port" \
    profile "$bin" "${live[@]}" --cwd "$work/project" --no-session "$prompt"
  DYN_AGENT_TOOL_EVENTS_ZMQ_ENDPOINT="tcp://127.0.0.1:9" \
    profile "$bin" "${live[@]}" --cwd "$work/project" --no-session "$prompt"
  # Live control: the prompt as the channel's first command, and a heartbeat.
  python3 -c 'import json, sys; print(json.dumps({"type": "prompt", "message": sys.argv[1]}))' \
    "$prompt" > "$work/control.jsonl"
  PROFILE_STDIN="$work/control.jsonl" \
    profile "$bin" "${live[@]}" --cwd "$work/project" --no-session --control stdin
  profile "$bin" "${live[@]}" --cwd "$work/project" --no-session --heartbeat 1s "$prompt"
  for fixture in quickstart tools-tour; do
    copy="$work/$fixture"
    rm -rf "$copy"
    cp -r "fixtures/$fixture/workspace" "$copy"
    args=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["args"]))' "fixtures/$fixture/scenario.json")
    mapfile -t extra <<< "$args"
    [ -z "${extra[0]}" ] && extra=()
    profile "$bin" run --model "replay/$root/fixtures/$fixture/model.jsonl" --cwd "$copy" \
      --session-dir "$work/sessions" "${extra[@]}" "$(cat "$root/fixtures/$fixture/prompt.txt")"
  done
}

prompt="List the files here and read the README, then summarize."
live=(run --model dynamo/mock-model --no-context-files)
export DYNAMO_BASE_URL="http://127.0.0.1:$port/v1"
workloads "$work/worker-release"

mkdir -p build
python3 - "$work" "$n" > build/symbol-order.txt << 'EOF'
import re, sys
work, count = sys.argv[1], int(sys.argv[2])
seen, order = set(), []
for i in range(1, count + 1):
    obj = None
    for line in open(f"{work}/cg.{i}"):
        if line.startswith("ob="):
            obj = line[3:].strip()
        elif line.startswith("fn=") and obj and obj.startswith(work + "/worker-"):
            # callgrind marks a recursive call's level with `'N`, which no symbol has; an
            # address or `(below main)` names no symbol at all.
            name = re.sub(r"'[0-9]+$", "", line[3:].strip())
            if name not in seen and not name.startswith(("0x", "(")):
                seen.add(name)
                order.append(name)
print("\n".join(order))
EOF
echo "symbol-order: $(wc -l < build/symbol-order.txt) functions from $n workloads in build/symbol-order.txt"
