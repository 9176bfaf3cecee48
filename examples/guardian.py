#!/usr/bin/env python3
"""A guardian for one live worker phase (`worker run --control stdin`).

It starts the run, sends the prompt as the first command, and then reads the event stream while
the agent works:

- a write or edit outside the allowed directory gets one steer, telling the agent to keep to it;
- every approval (`--approve-tools bash`) is decided: `git push` is denied, anything else allowed;
- when the cost the run reports passes the budget, the run is aborted, and its last line still
  carries the real cost.

Every command carries an id, and every answer (`control_ack`) is matched to it. The guardian
prints one line per decision on stderr and exits with worker's exit code (5 after an abort).

Usage:
    guardian.py --prompt "Fix the failing test" --budget-usd 0.50 --scope src/ -- \\
        worker run -m dynamo/default --control stdin --approve-tools bash

Standard library only; Python 3.8 or later.
"""

import argparse
import itertools
import json
import subprocess
import sys


class Guardian:
    def __init__(self, process, budget_usd, scope):
        self.process = process
        self.budget_usd = budget_usd
        self.scope = scope.rstrip("/") + "/"
        self.ids = itertools.count(1)
        self.waiting = {}  # command id -> what it was, until its control_ack
        self.spent = 0.0
        self.steered = False
        self.aborted = False

    def send(self, command):
        """Writes one command; stdin stays open for the next."""
        if "id" not in command:
            command["id"] = "g{}".format(next(self.ids))
        self.waiting[command["id"]] = command["type"]
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            self.note("worker has exited; {} not sent".format(command["type"]))

    def note(self, text):
        print("guardian: " + text, file=sys.stderr, flush=True)

    def on_event(self, event):
        kind = event.get("type")
        if kind == "approval_requested":
            self.decide(event)
        elif kind == "tool_execution_start":
            self.watch_scope(event)
        elif kind == "message_end" and event["message"].get("role") == "assistant":
            self.count_cost(event["message"])
        elif kind == "control_ack":
            what = self.waiting.pop(event.get("id"), event.get("command"))
            if not event.get("ok"):
                self.note("{} was refused: {}".format(what, event.get("error")))
        elif kind == "usage_snapshot":
            self.note("the run spent ${:.4f}".format(event["stats"]["cost"]))

    def decide(self, request):
        command = str(request.get("input", {}).get("command", ""))
        if "git push" in command:
            reason = "pushing is the orchestrator's job, not the agent's"
            self.note("deny {}: {}".format(request["id"], command))
            self.send({"type": "decide", "id": request["id"], "allow": False, "reason": reason})
        else:
            self.note("allow {}: {}".format(request["id"], command))
            self.send({"type": "decide", "id": request["id"], "allow": True})

    def watch_scope(self, start):
        if start["toolName"] not in ("write", "edit", "hashline_edit") or self.steered:
            return
        path = str(start.get("args", {}).get("path", ""))
        if path.startswith(self.scope) or path.startswith("./" + self.scope):
            return
        self.steered = True
        self.note("steer: {} is outside {}".format(path, self.scope))
        self.send({
            "type": "steer",
            "message": "Only change files under {}. Leave {} as it was.".format(self.scope, path),
        })

    def count_cost(self, message):
        self.spent += message.get("usage", {}).get("cost", {}).get("total", 0.0)
        if self.spent > self.budget_usd and not self.aborted:
            self.aborted = True
            self.note("abort: ${:.4f} is over the ${:.2f} budget".format(self.spent, self.budget_usd))
            self.send({"type": "abort", "reason": "over the ${:.2f} budget".format(self.budget_usd)})


def main():
    parser = argparse.ArgumentParser(description="Drive a worker run with --control stdin.")
    parser.add_argument("--prompt", required=True, help="the task")
    parser.add_argument("--budget-usd", type=float, default=1.0, help="abort past this cost")
    parser.add_argument("--scope", default="src/", help="where the agent may write")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- worker run ... --control stdin")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the worker command line after --")
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, universal_newlines=True, bufsize=1
    )
    guardian = Guardian(process, args.budget_usd, args.scope)
    guardian.send({"type": "prompt", "message": args.prompt})
    for line in process.stdout:
        print(line, end="", flush=True)
        guardian.on_event(json.loads(line))
    try:
        process.stdin.close()
    except BrokenPipeError:
        pass
    return process.wait()


if __name__ == "__main__":
    sys.exit(main())
