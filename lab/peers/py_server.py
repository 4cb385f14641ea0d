"""Real MCP server built on the official Python SDK (mcp, pinned in lab/requirements.txt).

Usage: python py_server.py --transport streamable|legacy-sse|stdio [--port N] [--json] [--stateless] [--mrtr]
      [--agent-tools] [--host H] [--h2 [--certfile F --keyfile F]]
--h2 serves the same Streamable HTTP app under hypercorn, which speaks HTTP/2: cleartext h2c (prior
knowledge or Upgrade: h2c) without a certificate, h2 over TLS (ALPN h2) with --certfile/--keyfile.
Loopback only by default. Tools: read_note, delete_file, fail_tool, slow_progress (same as ts_server.mjs).
--mrtr adds confirm_delete, whose `confirm` parameter is filled by an elicitation (Resolve + Elicit):
on a 2026-07-28 request the SDK answers round 1 with resultType "input_required" (inputRequests +
requestState) and runs the tool when the client retries with inputResponses and the same requestState.
--agent-tools adds the long-session tools: list_notes, search_notes (read-only), write_note (idempotent write),
sync_notes (non-idempotent write that reports progress), as in ts_server.mjs.
"""
import argparse
import asyncio
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel
from mcp.types import CallToolResult, TextContent, ToolAnnotations

ap = argparse.ArgumentParser()
ap.add_argument("--transport", default="streamable")
ap.add_argument("--port", type=int, default=18082)
ap.add_argument("--json", action="store_true")
ap.add_argument("--stateless", action="store_true")
ap.add_argument("--mrtr", action="store_true")
ap.add_argument("--agent-tools", action="store_true")
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--h2", action="store_true")
ap.add_argument("--certfile")
ap.add_argument("--keyfile")
args = ap.parse_args()

mcp = MCPServer("lab-py-server", version="1.0.0", log_level="WARNING")
deletions = 0


@mcp.tool(description="Read a note by name (read-only).",
          annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False))
def read_note(name: str) -> str:
    return f"note {name}: remember the milk"


@mcp.tool(description="Delete a file (destructive, not idempotent). Simulated: nothing is deleted.",
          annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False))
def delete_file(path: str) -> str:
    global deletions
    deletions += 1
    return f"deleted {path} (deletion #{deletions} in this server process)"


@mcp.tool(description="Always fails with a tool-level error (isError: true).",
          annotations=ToolAnnotations(read_only_hint=True))
def fail_tool(reason: str = "no reason") -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"fail_tool failed: {reason}")], is_error=True)


@mcp.tool(description="Sends notifications/progress (when the caller gave a progressToken) before its result.",
          annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False))
async def slow_progress(steps: int, delay_ms: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await asyncio.sleep(delay_ms / 1000)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"slow_progress done after {steps} steps"


class Confirmation(BaseModel):
    confirm: bool


def ask_confirmation(path: str) -> Elicit[Confirmation]:
    return Elicit(f"Really delete {path}?", Confirmation)


if args.mrtr:
    @mcp.tool(description="Delete a file after asking the user to confirm (elicitation; MRTR on 2026-07-28). "
                          "Simulated: nothing is deleted.",
              annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False))
    def confirm_delete(path: str, answer: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
        global deletions
        if not answer.confirm:
            return f"kept {path} (not confirmed)"
        deletions += 1
        return f"deleted {path} after confirmation (deletion #{deletions} in this server process)"


if args.agent_tools:
    # plain text results (no structuredContent copy): the long sessions' captures stay small
    NOTES = {"groceries": "remember the milk", "todo": "call the plumber"}
    SYNCS = [0]

    @mcp.tool(description="List note names (read-only).",
              annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False), structured_output=False)
    def list_notes() -> str:
        return ", ".join(sorted(NOTES))

    @mcp.tool(description="Names of notes whose text contains the query (read-only).",
              annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False), structured_output=False)
    def search_notes(query: str) -> str:
        return ", ".join(k for k, v in NOTES.items() if query in v) or "none"

    @mcp.tool(description="Create or replace a note (a write; idempotent: the same arguments leave the same state).",
              annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, destructive_hint=False), structured_output=False)
    def write_note(name: str, text: str) -> str:
        NOTES[name] = text
        return f"wrote {name}"

    @mcp.tool(description="Push all notes to a target (a write, not idempotent: each call makes a new sync). "
                          "Sends notifications/progress (when the caller gave a progressToken) before its result.",
              annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=False), structured_output=False)
    async def sync_notes(target: str, ctx: Context) -> str:
        for i in (1, 2):
            await asyncio.sleep(0.02)
            await ctx.report_progress(i, 2)
        SYNCS[0] += 1
        return f"synced {len(NOTES)} notes to {target} (sync #{SYNCS[0]})"


print(f"[py_server] {args.transport} port={args.port} json={args.json}", file=sys.stderr, flush=True)
if args.transport == "stdio":
    mcp.run("stdio")
elif args.transport == "streamable" and args.h2:
    # uvicorn (what mcp.run uses) speaks only HTTP/1.1; hypercorn serves the same ASGI app over HTTP/2.
    from hypercorn.asyncio import serve
    from hypercorn.config import Config as HyperConfig
    cfg = HyperConfig()
    cfg.bind = [f"{args.host}:{args.port}"]
    cfg.alpn_protocols = ["h2"]  # over TLS: h2 only, so the capture cannot fall back to HTTP/1.1
    if args.certfile:
        cfg.certfile, cfg.keyfile = args.certfile, args.keyfile
    cfg.loglevel = "WARNING"
    app = mcp.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
    asyncio.run(serve(app, cfg))
elif args.transport == "streamable":
    mcp.run("streamable-http", host=args.host, port=args.port, json_response=args.json, stateless_http=args.stateless)
elif args.transport == "legacy-sse":
    mcp.run("sse", host=args.host, port=args.port)
else:
    sys.exit(f"unknown transport {args.transport}")
