"""The floor: the least a Trio server can do per call, as a yardstick for trimcp.

Not an MCP implementation: it checks nothing, negotiates nothing and keeps no state beyond
what the workloads need. It answers the benchmark's requests (``initialize``, ``ping``,
``tools/list``, ``tools/call`` of ``echo``/``sleep``/``stats``/fillers) the way the
plainest correct Trio program would, so that the suite can say how far above that floor a
framework's own work puts it:

- **stdio: the Trio task-per-request bound.** One reader task splits stdin into lines
  (Trio's ``FdStream``), decodes each with orjson, and starts a task per request, each in
  its own cancel scope (``notifications/cancelled`` cancels it: nothing is answered); a
  writer task writes the answers, every answer ready at once in one write. Both eras: a
  2026-07-28 request (``_meta`` envelope, no ``initialize``) is answered like any other.
- **HTTP (``--http PORT``): the h11 bound.** One task per connection, h11 parsing each
  request, the answer (SSE, or JSON with ``--json-response``) built and written in the
  connection's task with a ``Content-Length``. ``initialize`` mints a session id (kept in a
  set, so that unknown ones get 404 and an idle session costs what its id costs); a
  request carrying the 2026 envelope needs none.

Follows the convention of ``benchmarks/servers/`` (``--tools N``, ``--page-size P``,
``--http PORT``, ``--json-response``, ``--check``); logs nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
from typing import Any

import h11
import orjson
import trio

EXIT_UNAVAILABLE = 3
META_VERSION = "io.modelcontextprotocol/protocolVersion"


class Tools:
    """The tool set and the counts the ``stats`` tool reports (the cancellation storm's)."""

    def __init__(self, fillers: int, page_size: int | None) -> None:
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        names = ["echo", "sleep", "stats", *(f"tool_{i}" for i in range(fillers))]
        self.listing = [{"name": n, "description": n, "inputSchema": schema} for n in names]
        self.fillers = set(names[3:])
        self.page_size = page_size
        self.started = self.finished = self.cancelled = 0

    def list_page(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.page_size is None:
            return {"tools": self.listing}
        start = int(params.get("cursor") or 0)
        end = start + self.page_size
        page: dict[str, Any] = {"tools": self.listing[start:end]}
        if end < len(self.listing):
            page["nextCursor"] = str(end)
        return page

    async def call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "stats":
            live = self.started - self.finished
            counts = {"live": live, "started": self.started, "finished": self.finished}
            return _text(orjson.dumps(counts | {"cancelled": self.cancelled}).decode())
        self.started += 1
        done = False
        try:
            if name == "sleep":
                await trio.sleep(float(arguments.get("ms", 0)) / 1000.0)
                done = True
                return _text("slept")
            done = True
            return _text(str(arguments.get("text", "")))
        finally:
            self.finished += 1
            if not done:
                self.cancelled += 1


def _text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


async def answer(tools: Tools, message: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC response object for one request."""
    method = message.get("method")
    params = message.get("params") or {}
    result: dict[str, Any]
    if method == "tools/call":
        result = await tools.call(params)
    elif method == "tools/list":
        result = tools.list_page(params)
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bound", "version": "1"},
        }
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message.get("id"), "error": error}
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


# ----------------------------------------------------------------------------- stdio


async def serve_stdio(tools: Tools) -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    send, receive = trio.open_memory_channel[bytes](math.inf)
    scopes: dict[Any, trio.CancelScope] = {}

    async def write_answers() -> None:
        async with receive:
            async for data in receive:
                batch = [data]
                while True:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await stdout.send_all(b"".join(batch))

    async def run(message: dict[str, Any]) -> None:
        request_id = message["id"]
        with trio.CancelScope() as scope:
            scopes[request_id] = scope
            try:
                response = await answer(tools, message)
            finally:
                del scopes[request_id]
        if not scope.cancelled_caught:
            send.send_nowait(orjson.dumps(response) + b"\n")

    async with trio.open_nursery() as writer:
        writer.start_soon(write_answers)
        async with send, trio.open_nursery() as requests:
            rest = b""
            while data := await stdin.receive_some(65536):
                *lines, rest = (rest + data).split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    message = orjson.loads(line)
                    if "id" in message and "method" in message:
                        requests.start_soon(run, message)
                    elif message.get("method") == "notifications/cancelled":
                        scope = scopes.get((message.get("params") or {}).get("requestId"))
                        if scope is not None:
                            scope.cancel()


# ----------------------------------------------------------------------------- HTTP


async def serve_http(tools: Tools, port: int, json_response: bool) -> None:
    sessions: set[str] = set()
    kind = b"application/json" if json_response else b"text/event-stream"

    async def respond(
        conn: h11.Connection,
        stream: trio.SocketStream,
        status: int,
        body: bytes = b"",
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        head = [(b"content-length", str(len(body)).encode()), *headers]
        out = conn.send(h11.Response(status_code=status, headers=head))
        out += conn.send(h11.Data(data=body)) if body else b""
        out += conn.send(h11.EndOfMessage())
        await stream.send_all(out)

    async def serve(
        conn: h11.Connection, stream: trio.SocketStream, request: h11.Request, body: bytes
    ) -> None:
        session = dict(request.headers).get(b"mcp-session-id")
        if request.method == b"DELETE":
            sessions.discard((session or b"").decode())
            await respond(conn, stream, 200)
            return
        message = orjson.loads(body)
        params = message.get("params")
        modern = type(params) is dict and META_VERSION in (params.get("_meta") or {})
        new_session = None
        if message.get("method") == "initialize":
            new_session = secrets.token_hex(16)
            sessions.add(new_session)
        elif not modern and (session is None or session.decode() not in sessions):
            await respond(conn, stream, 404 if session else 400)
            return
        if "id" not in message:
            await respond(conn, stream, 202)
            return
        data = orjson.dumps(await answer(tools, message))
        if not json_response:
            data = b"event: message\ndata: " + data + b"\n\n"
        headers = [(b"content-type", kind)]
        if new_session is not None:
            headers.append((b"mcp-session-id", new_session.encode()))
        await respond(conn, stream, 200, data, tuple(headers))

    async def connection(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    conn.receive_data(data)
                    if not data and conn.their_state is not h11.DONE:
                        return
                elif isinstance(event, h11.Request):
                    request, body = event, b""
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    assert request is not None
                    await serve(conn, stream, request, body)
                    if conn.our_state is h11.MUST_CLOSE:
                        return
                    conn.start_next_cycle()
                else:  # ConnectionClosed
                    return
        except (h11.RemoteProtocolError, trio.BrokenResourceError):
            return
        finally:
            await stream.aclose()

    await trio.serve_tcp(connection, port, host="127.0.0.1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=0, help="filler tools to register")
    parser.add_argument("--page-size", type=int, default=None, help="paginate tools/list")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve HTTP/1.1 (h11)")
    parser.add_argument("--json-response", action="store_true", help="JSON answers over HTTP")
    parser.add_argument("--check", action="store_true", help="only check availability")
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if opts.check:
        return 0
    tools = Tools(opts.tools, opts.page_size)
    if opts.http is not None:
        trio.run(serve_http, tools, opts.http, opts.json_response)
    else:
        trio.run(serve_stdio, tools)
    return 0


if __name__ == "__main__":
    sys.exit(main())
