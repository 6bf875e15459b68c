"""Micro-benchmark of trimcp's Streamable HTTP server (lean h11 engine or hypercorn).

Starts ``serve_http`` with the benchmark's ``echo`` tool in a child process (optionally
under cProfile), drives it with :mod:`benchmarks.loadgen_http` (16 sessions, one
``tools/call`` in flight each, over keep-alive connections), prints the load generator's
JSON (with the engine that served), and with ``--profile`` the server's top functions by
own time.

    python -m benchmarks.http_server_micro [-n 20000] [--sessions 16] [--json] [--profile]
        [--engine {auto,hypercorn,lean}]
    python -m benchmarks.http_server_micro --serve PORT [--json] [--engine ...]  # the server
    python -m benchmarks.http_server_micro --in-process [-n N] [--json] [--profile]
    python -m benchmarks.http_server_micro --jwt ...   # every call carries a JWT the
        # server verifies (trimcp.auth: ProtectedResource + JwtVerifier, RS256)

``--engine`` is ``serve_http``'s: ``auto`` (the default, which is the lean engine here),
``hypercorn`` or ``lean``; ``--lean`` is an alias of ``--engine lean``. ``--in-process``
drives the ASGI app directly (no sockets, no HTTP server) with 16 sessions, one call in
flight each, and reports the CPU time per call of trimcp alone: the app, the routing
transport, the engine and the low-level server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pstats
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import trio

from benchmarks.loadgen_http import run_calls
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.transports.http_server import HttpServerConfig, hypercorn_config, serve_http
from trimcp.transports.http_server.serve import choose_engine
from trimcp.types import (
    CallToolResult,
    Implementation,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolsCapability,
)

server = LowLevelServer(
    Implementation(name="trimcp-http-bench", version="1.0.0"),
    capabilities=ServerCapabilities(tools=ToolsCapability()),
)
ECHO = Tool(
    name="echo",
    description="Echo the text back.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
)


@server.request_handler("tools/list")
async def list_tools(ctx: RequestContext) -> ListToolsResult:
    return ListToolsResult(tools=[ECHO])


@server.request_handler("tools/call")
async def call_tool(ctx: RequestContext) -> CallToolResult:
    arguments = ctx.params.arguments or {}
    return CallToolResult(content=[TextContent(text=arguments.get("text", ""))])


async def _serve(port: int, json_response: bool, engine: Any = "auto") -> None:
    stop = trio.Event()

    def on_term(*_: Any) -> None:
        trio.from_thread.run_sync(stop.set, trio_token=token)

    token = trio.lowlevel.current_trio_token()
    signal.signal(signal.SIGTERM, lambda *_: token.run_sync_soon(stop.set))
    config = HttpServerConfig(
        json_response=json_response, max_sessions=10_000, auth=_bench_auth(port)
    )
    await serve_http(server, port=port, config=config, shutdown_trigger=stop.wait, engine=engine)


BENCH_ISSUER = "https://bench.example"


def _bench_auth(port: int) -> Any:
    """With BENCH_JWKS set (``--jwt``): protect the server, keys from that JSON."""
    jwks = os.environ.get("BENCH_JWKS")
    if not jwks:
        return None
    from trimcp.auth import JwtVerifier, ProtectedResource

    keys = json.loads(jwks)

    async def fetch(url: str) -> Any:
        return keys

    return ProtectedResource(
        resource=f"http://127.0.0.1:{port}/mcp",
        authorization_servers=[BENCH_ISSUER],
        verifier=JwtVerifier(issuer=BENCH_ISSUER, jwks_url=f"{BENCH_ISSUER}/jwks", fetch=fetch),
        required_scopes=["mcp"],
    )


async def asgi_post(
    app: Any, headers: list[tuple[bytes, bytes]], body: bytes
) -> tuple[int, Any, bytes]:
    """One POST /mcp through the ASGI ``app`` in this process (no sockets): the status, the
    response headers and the whole body."""
    sent = False
    status = 0
    out: list[bytes] = []
    response_headers: Any = None

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, response_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers = message["headers"]
        else:
            out.append(message.get("body", b""))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": headers,
        "query_string": b"",
        "root_path": "",
    }
    await app(scope, receive, send)
    return status, response_headers, b"".join(out)


def _bench_token(port: int) -> tuple[str, str]:
    """A signing key's JWKS (JSON) and a token for the benchmark server on ``port``."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "bench", "use": "sig", "alg": "RS256"})
    now = int(time.time())
    token = jwt.encode(
        {
            "iss": BENCH_ISSUER,
            "aud": f"http://127.0.0.1:{port}/mcp",
            "sub": "bench",
            "scope": "mcp",
            "iat": now,
            "exp": now + 3600,
        },
        key,
        algorithm="RS256",
        headers={"kid": "bench"},
    )
    return json.dumps({"keys": [jwk]}), token


async def _in_process(
    n: int, sessions: int, json_response: bool, jwt: bool = False
) -> dict[str, Any]:
    from trimcp.transports.http_server import create_asgi_app

    auth = None
    base = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    if jwt:  # every request carries a JWT the app verifies (as --jwt does over sockets)
        os.environ["BENCH_JWKS"], token = _bench_token(8000)
        auth = _bench_auth(8000)
        base.append((b"authorization", f"Bearer {token}".encode()))
    app = create_asgi_app(server, config=HttpServerConfig(json_response=json_response, auth=auth))

    async def exchange(headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, Any, bytes]:
        return await asgi_post(app, headers, body)

    latencies: list[float] = []

    async def one_session(calls: int) -> None:
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            }
        ).encode()
        _, headers, _ = await exchange(base, init)
        session_id = dict(headers)[b"mcp-session-id"]
        mine = [*base, (b"mcp-session-id", session_id), (b"mcp-protocol-version", b"2025-11-25")]
        await exchange(mine, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for i in range(calls):
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": f"e{i}"}},
                },
                separators=(",", ":"),
            ).encode()
            start = time.perf_counter()
            status, _, answer = await exchange(mine, body)
            latencies.append(time.perf_counter() - start)
            if status != 200 or f'"e{i}"'.encode() not in answer:
                raise AssertionError(answer)

    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        cpu = time.process_time()
        wall = time.perf_counter()
        async with trio.open_nursery() as clients:
            for _ in range(sessions):
                clients.start_soon(one_session, n // sessions)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        await app.shutdown()
        nursery.cancel_scope.cancel()
    latencies.sort()
    calls = len(latencies)
    return {
        "mode": "in-process",
        "json_response": json_response,
        "jwt": jwt,
        "calls": calls,
        "cpu_us_per_call": round(cpu / calls * 1e6, 1),
        "wall_calls_per_s": round(calls / wall),
        "p50_us": round(latencies[calls // 2] * 1e6, 1),
        "p99_us": round(latencies[int(calls * 0.99)] * 1e6, 1),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--json", action="store_true", help="JSON-response mode")
    parser.add_argument("--profile", action="store_true", help="cProfile the server")
    parser.add_argument("--serve", type=int, metavar="PORT", help="only run the server")
    parser.add_argument("--in-process", action="store_true", help="no sockets, no HTTP server")
    parser.add_argument(
        "--engine", choices=("auto", "hypercorn", "lean"), default="auto", help="serve_http's"
    )
    parser.add_argument("--lean", action="store_true", help="alias of --engine lean")
    parser.add_argument("--jwt", action="store_true", help="protect the server; calls carry a JWT")
    opts = parser.parse_args()
    if opts.lean:
        opts.engine = "lean"
    logging.basicConfig(level=logging.WARNING)
    if opts.in_process:
        if opts.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        result = trio.run(_in_process, opts.n, opts.sessions, opts.json, opts.jwt)
        print(json.dumps(result, indent=2))
        if opts.profile:
            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(30)
        return 0
    if opts.serve is not None:
        trio.run(_serve, opts.serve, opts.json, opts.engine)
        return 0
    port = _free_port()
    argv = [sys.executable]
    prof = tempfile.mktemp(suffix=".prof")
    if opts.profile:
        argv += ["-m", "cProfile", "-o", prof]
    argv += ["-m", "benchmarks.http_server_micro", "--serve", str(port)]
    if opts.json:
        argv.append("--json")
    argv += ["--engine", opts.engine]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    headers: tuple[tuple[str, str], ...] = ()
    if opts.jwt:
        env["BENCH_JWKS"], token = _bench_token(port)
        headers = (("Authorization", f"Bearer {token}"),)
    child = subprocess.Popen(argv, env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        result = run_calls(
            f"http://127.0.0.1:{port}/mcp",
            opts.n,
            sessions=opts.sessions,
            pid=child.pid,
            headers=headers,
        )
        result["jwt"] = opts.jwt
        result["engine"] = choose_engine(opts.engine, hypercorn_config())
        print(json.dumps(result, indent=2))
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
    if opts.profile:
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        os.unlink(prof)
    return 0


if __name__ == "__main__":
    sys.exit(main())
