"""An MCP server for the client's fault and sandbox end-to-end tests, on the official Python SDK.

    $CACHE/venv/bin/python tests/mcp/fault_server.py              # stdio
    $CACHE/venv/bin/python tests/mcp/fault_server.py --http PORT  # streamable HTTP, http://127.0.0.1:PORT/mcp

(`scripts/mcp-install.sh` makes $CACHE/venv.) With `--http 0` the OS picks the port. Once
serving, one line goes to stderr: `fault_server: ready on stdio` or
`fault_server: listening on http://127.0.0.1:PORT/mcp` (with the real port).

Environment:
  FAULT_START_DELAY_MS  sleep that long before serving (a slow start)
  FAULT_INVALID_SCHEMA  =1: also list `bad_schema`, whose inputSchema is not a valid JSON Schema
  FAULT_CANCEL_LOG      path: a tools/call that the client cancels (notifications/cancelled)
                        appends `cancelled <tool name>` to it
  FAULT_SECRET          what the `secret` tool prints

Tools: echo, add, fail, crash, hang, slow, huge, image, resource, secret, add_tool (then `late`),
env, write_file, read_file, pid, connect. See TOOLS below. Tool errors are results with
isError: true; an unknown tool is a JSON-RPC error (-32602). The tool list is per process:
after `add_tool`, every session of an HTTP server lists `late`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import struct
import sys
import zlib
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError


def _tiny_png() -> bytes:
    """A real 2x2 RGB PNG (red, green / blue, white)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"\x00\xff\x00\x00\x00\xff\x00" + b"\x00\x00\x00\xff\xff\xff\xff"
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


TINY_PNG_BASE64 = base64.b64encode(_tiny_png()).decode()


def _obj(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


TOOLS: list[types.Tool] = [
    types.Tool(
        name="echo",
        description="Returns the given text unchanged.",
        input_schema=_obj({"text": _str("Text to echo back")}, ["text"]),
    ),
    types.Tool(
        name="add",
        description="Adds two numbers; returns 'a+b=SUM' and structured content {sum}.",
        input_schema=_obj(
            {"a": {"type": "number", "description": "First addend"}, "b": {"type": "number", "description": "Second addend"}},
            ["a", "b"],
        ),
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "number", "description": "a + b"}},
            "required": ["sum"],
        },
    ),
    types.Tool(
        name="fail",
        description="Returns a tool error (isError: true) carrying the message.",
        input_schema=_obj({"message": _str("Error message to return")}, ["message"]),
    ),
    types.Tool(
        name="crash",
        description="Kills the server process (exit code 3) in the middle of the call.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="hang",
        description="Never returns; only a cancellation ends it.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="slow",
        description="Sleeps for the given number of milliseconds, then returns 'slept MS'.",
        input_schema=_obj({"ms": {"type": "integer", "minimum": 0, "description": "Milliseconds to sleep"}}, ["ms"]),
    ),
    types.Tool(
        name="huge",
        description="Returns one text content of exactly the given number of bytes.",
        input_schema=_obj({"bytes": {"type": "integer", "minimum": 0, "description": "Size of the text in bytes"}}, ["bytes"]),
    ),
    types.Tool(
        name="image",
        description="Returns a tiny PNG image content and a text content.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="resource",
        description="Returns an embedded text resource (file:///fault/notes.txt).",
        input_schema=_obj(),
    ),
    types.Tool(
        name="secret",
        description="Prints the secret the server was started with.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="add_tool",
        description="Adds the tool 'late' and sends notifications/tools/list_changed.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="env",
        description="Returns the server process's whole environment as a JSON object.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="write_file",
        description="Writes text to a file; returns 'wrote PATH' or the OS error.",
        input_schema=_obj({"path": _str("File to write"), "text": _str("Text to write")}, ["path", "text"]),
    ),
    types.Tool(
        name="read_file",
        description="Returns a file's text, or the OS error.",
        input_schema=_obj({"path": _str("File to read")}, ["path"]),
    ),
    types.Tool(
        name="pid",
        description="Returns the server's process id.",
        input_schema=_obj(),
    ),
    types.Tool(
        name="connect",
        description="Opens a TCP connection (2 s timeout); returns 'connected' or the error.",
        input_schema=_obj(
            {"host": _str("Host name or address"), "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "TCP port"}},
            ["host", "port"],
        ),
    ),
]

LATE_TOOL = types.Tool(name="late", description="Appears after add_tool; returns 'late tool'.", input_schema=_obj())
BAD_SCHEMA_TOOL = types.Tool(
    name="bad_schema", description="Its inputSchema is not a valid JSON Schema.", input_schema={"type": 12}
)

state = {"late": False}


def invalid_schema() -> bool:
    return os.environ.get("FAULT_INVALID_SCHEMA") == "1"


def current_tools() -> list[types.Tool]:
    """The tools with valid schemas; `bad_schema` is added to the wire result by BadSchemaMiddleware."""
    return [*TOOLS, LATE_TOOL] if state["late"] else list(TOOLS)


def find_tool(name: str) -> types.Tool | None:
    tools = current_tools() + ([BAD_SCHEMA_TOOL] if invalid_schema() else [])
    return next((t for t in tools if t.name == name), None)


def text(s: str) -> types.TextContent:
    return types.TextContent(text=s)


def ok(s: str) -> types.CallToolResult:
    return types.CallToolResult(content=[text(s)])


def error(s: str) -> types.CallToolResult:
    return types.CallToolResult(content=[text(s)], is_error=True)


def log_cancel(tool: str) -> None:
    path = os.environ.get("FAULT_CANCEL_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"cancelled {tool}\n")
            f.flush()


def client_cancelled(ctx: Any) -> bool:
    """Whether the peer sent notifications/cancelled for this request (vs. a shutdown)."""
    event = getattr(getattr(ctx.session, "_request_outbound", None), "cancel_requested", None)
    return event is None or event.is_set()


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=current_tools())


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = params.name
    tool = find_tool(name)
    if tool is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
    args = params.arguments or {}
    if tool is not BAD_SCHEMA_TOOL:
        try:
            jsonschema.validate(args, tool.input_schema)
        except jsonschema.ValidationError as e:
            return error(f"invalid arguments for {name}: {e.message}")
    try:
        return await run_tool(ctx, name, args)
    except anyio.get_cancelled_exc_class():
        if client_cancelled(ctx):
            log_cancel(name)
        raise


async def run_tool(ctx: Any, name: str, args: dict[str, Any]) -> types.CallToolResult:
    if name == "echo":
        return ok(args["text"])
    if name == "add":
        total = args["a"] + args["b"]
        return types.CallToolResult(content=[text(f"{args['a']}+{args['b']}={total}")], structured_content={"sum": total})
    if name == "fail":
        return error(args["message"])
    if name == "crash":
        sys.stderr.flush()
        os._exit(3)
    if name == "hang":
        await anyio.sleep_forever()
    if name == "slow":
        await anyio.sleep(args["ms"] / 1000)
        return ok(f"slept {args['ms']}")
    if name == "huge":
        size, parts, n, total = args["bytes"], [], 0, 0
        while total < size:
            line = f"line {n}\n"
            parts.append(line)
            total += len(line)
            n += 1
        return ok("".join(parts)[:size])
    if name == "image":
        return types.CallToolResult(
            content=[types.ImageContent(data=TINY_PNG_BASE64, mime_type="image/png"), text("a 2x2 PNG image")]
        )
    if name == "resource":
        return types.CallToolResult(
            content=[
                types.EmbeddedResource(
                    resource=types.TextResourceContents(
                        uri="file:///fault/notes.txt", mime_type="text/plain", text="resource body"
                    )
                )
            ]
        )
    if name == "secret":
        return ok(f"the secret is {os.environ.get('FAULT_SECRET', '')}")
    if name == "add_tool":
        state["late"] = True
        # Sent on this request's stream (on HTTP: the POST's SSE response), so a client that has
        # no standalone GET stream open receives it too.
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        return ok("added")
    if name == "late":
        return ok("late tool")
    if name == "bad_schema":
        return ok("bad_schema called")
    if name == "env":
        return ok(json.dumps(dict(os.environ), sort_keys=True))
    if name == "write_file":
        try:
            with open(args["path"], "w") as f:
                f.write(args["text"])
        except OSError as e:
            return error(str(e))
        return ok(f"wrote {args['path']}")
    if name == "read_file":
        try:
            with open(args["path"]) as f:
                return ok(f.read())
        except (OSError, UnicodeDecodeError) as e:
            return error(str(e))
    if name == "pid":
        return ok(str(os.getpid()))
    if name == "connect":
        def attempt() -> None:
            socket.create_connection((args["host"], args["port"]), timeout=2).close()

        try:
            await anyio.to_thread.run_sync(attempt, abandon_on_cancel=True)
        except OSError as e:  # socket.timeout is an OSError: "timed out"
            return error(f"connect to {args['host']}:{args['port']} failed: {e}")
        return ok("connected")
    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")


class BadSchemaMiddleware:
    """Appends `bad_schema` to the serialized tools/list result.

    The SDK validates every result against the protocol's schema before sending it, and a tool
    whose inputSchema has `"type": 12` fails that, so the tool is added after serialization.
    """

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and ctx.request_id is not None and invalid_schema() and isinstance(result, dict):
            bad = BAD_SCHEMA_TOOL.model_dump(by_alias=True, mode="json", exclude_none=True)
            result = {**result, "tools": [*result.get("tools", []), bad]}
        return result


class FaultServer(Server):
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # The streamable HTTP manager calls this without options: always declare tools.listChanged.
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


server = FaultServer("fault-server", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
server.middleware.append(BadSchemaMiddleware())


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        print("fault_server: ready on stdio", file=sys.stderr, flush=True)
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp")
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    http = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        print(f"fault_server: cannot listen on 127.0.0.1:{port}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    bound = sock.getsockname()[1]

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"fault_server: listening on http://127.0.0.1:{bound}/mcp", file=sys.stderr, flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await http.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description="MCP fault server (stdio by default)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    opts = parser.parse_args()
    delay_ms = int(os.environ.get("FAULT_START_DELAY_MS", "0") or 0)
    if delay_ms > 0:
        import time

        time.sleep(delay_ms / 1000)
    if opts.http is not None:
        anyio.run(serve_http, opts.http)
    else:
        anyio.run(serve_stdio)


if __name__ == "__main__":
    main()
