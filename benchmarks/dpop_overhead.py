"""What DPoP costs a protected server: a 2026-07-28 ``tools/call`` with a DPoP-bound token
and a fresh proof against the same call with a Bearer token, in the same run.

Two ways, both by default (``--transport``):

- ``asgi``: drives the ASGI app in this process (no sockets), one stateless ``tools/call``
  at a time, and measures this process's CPU time per call (``time.process_time``). No
  HTTP parsing or socket I/O is counted, so the proof check weighs the most here.
- ``socket``: serves each app in its own process with the lean HTTP engine on loopback,
  drives it over one keep-alive connection, and reads the server's CPU time from
  ``/proc/<pid>/stat`` (10 ms ticks: use ``-n`` of a few thousand). This is what a
  deployment pays per call.

Both servers verify the same kind of token (``ProtectedResource`` + ``JwtVerifier``,
RS256, cached after the first request as in production); the DPoP one also checks every
proof (signature, claims, ``ath``, ``cnf.jkt``, the in-memory replay cache). Proofs are
made before the timed part (the client's cost is reported apart). Batches of both kinds
alternate, ``--rounds`` times; the best batch of each kind counts.

Run from the repository root: .venv/bin/python -m benchmarks.dpop_overhead [-n 2000]
[--rounds 5] [--alg ES256] [--transport both] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

import trimcp
from benchmarks.http_server_micro import asgi_post
from trimcp.auth import DpopKey, JwtVerifier, ProtectedResource
from trimcp.protocol import modern
from trimcp.transports.http_server import HttpServerConfig, create_asgi_app

ISSUER = "https://as.bench"
RESOURCE = "http://127.0.0.1:8000/mcp"
VERSION = "2026-07-28"


def make_server() -> trimcp.Server:
    app = trimcp.Server("dpop-bench")

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


class Issuer:
    """An RS256 key and its key set, standing in for the authorization server.

    ``jwks``: serve this key set instead (a server process gets its issuer's public keys
    only; it mints no tokens)."""

    def __init__(self, jwks: dict[str, Any] | None = None) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": "bench", "use": "sig", "alg": "RS256"})
        self.jwks = jwks if jwks is not None else {"keys": [jwk]}

    async def fetch(self, url: str) -> Any:
        return self.jwks

    def token(self, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": RESOURCE, "sub": "bench", "iat": now, "exp": now + 3600}
        body.update(claims)
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": "bench"})


def protected(issuer: Issuer, dpop: bool) -> ProtectedResource:
    verifier = JwtVerifier(issuer=ISSUER, jwks_url="https://as.bench/jwks", fetch=issuer.fetch)
    return ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier, require_dpop=dpop
    )


def call_body(i: int) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    params = {
        "name": "echo",
        "arguments": {"text": f"e{i}"},
        "_meta": {
            modern.META_PROTOCOL_VERSION: VERSION,
            modern.META_CLIENT_CAPABILITIES: {},
            modern.META_CLIENT_INFO: {"name": "bench", "version": "0"},
        },
    }
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    for name, value in modern.standard_headers("tools/call", params, VERSION).items():
        headers.append((name.lower().encode(), value.encode()))
    return json.dumps(body, separators=(",", ":")).encode(), headers


async def exchange(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, bytes]:
    """One POST through the ASGI app: its status and body."""
    status, _, answer = await asgi_post(app, headers, body)
    return status, answer


async def batch(app: Any, requests: list[tuple[list[tuple[bytes, bytes]], bytes]]) -> float:
    """CPU seconds per call for ``requests``, one after another."""
    cpu = time.process_time()
    for i, (headers, body) in enumerate(requests):
        status, answer = await exchange(app, headers, body)
        if status != 200 or f'"e{i}"'.encode() not in answer:
            raise AssertionError((status, answer[:300]))
    return (time.process_time() - cpu) / len(requests)


async def run_asgi(n: int, rounds: int, alg: str = "ES256") -> dict[str, Any]:
    """The ASGI app in this process: CPU per call of each kind (see the module's text)."""
    issuer = Issuer()
    key = DpopKey.generate(alg)
    bearer_token = issuer.token()
    bound_token = issuer.token(cnf={"jkt": key.thumbprint})
    apps = {
        kind: create_asgi_app(
            make_server(), config=HttpServerConfig(json_response=True, auth=protected(issuer, d))
        )
        for kind, d in (("bearer", False), ("dpop", True))
    }
    calls = [call_body(i) for i in range(n)]
    best = {"bearer": float("inf"), "dpop": float("inf")}
    proof_cpu = float("inf")
    async with trio.open_nursery() as nursery:
        for app in apps.values():
            await nursery.start(app.run)
        for _ in range(rounds):
            bearer = [
                ([*h, (b"authorization", f"Bearer {bearer_token}".encode())], b) for b, h in calls
            ]
            start = time.process_time()
            proofs = [key.proof("POST", RESOURCE, access_token=bound_token) for _ in calls]
            proof_cpu = min(proof_cpu, (time.process_time() - start) / n)
            dpop = [
                (
                    [*h, (b"authorization", f"DPoP {bound_token}".encode()), (b"dpop", p.encode())],
                    b,
                )
                for (b, h), p in zip(calls, proofs, strict=True)
            ]
            best["bearer"] = min(best["bearer"], await batch(apps["bearer"], bearer))
            best["dpop"] = min(best["dpop"], await batch(apps["dpop"], dpop))
        for app in apps.values():
            await app.shutdown()
        nursery.cancel_scope.cancel()
    return {
        **_result("asgi", alg, n, rounds, best),
        "client_proof_cpu_us": round(proof_cpu * 1e6, 1),
    }


def _result(
    transport: str, alg: str, n: int, rounds: int, best: dict[str, float]
) -> dict[str, Any]:
    """One run's figures: the best batch of each kind, in us per call, and their ratio."""
    return {
        "transport": transport,
        "proof_algorithm": alg,
        "calls_per_batch": n,
        "rounds": rounds,
        "bearer_cpu_us_per_call": round(best["bearer"] * 1e6, 1),
        "dpop_cpu_us_per_call": round(best["dpop"] * 1e6, 1),
        # /proc counts CPU in 10 ms ticks: a tiny batch may read as none at all.
        "ratio": round(best["dpop"] / best["bearer"], 3) if best["bearer"] > 0 else None,
    }


# --- over a socket, against a server process ---------------------------------------------


async def serve(kind: str, jwks: dict[str, Any]) -> None:
    """Serve one benchmark app (``bearer`` or ``dpop``) on a free loopback port with the
    lean engine; prints the port, then serves until killed."""
    config = HttpServerConfig(json_response=True, auth=protected(Issuer(jwks), kind == "dpop"))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(_serve_lean, config)
        print(port, flush=True)


async def _serve_lean(
    config: HttpServerConfig, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    from trimcp.transports.http_server import serve_http

    await serve_http(make_server(), port=0, config=config, engine="lean", task_status=task_status)


def _raw_request(port: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = [b"POST /mcp HTTP/1.1"]
    for name, value in headers:
        if name == b"host":
            value = f"127.0.0.1:{port}".encode()
        lines.append(name + b": " + value)
    lines.append(b"content-length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _port(server: subprocess.Popen[str]) -> int:
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.strip().isdigit():
        raise RuntimeError(f"the benchmark server did not start (it printed {line[:200]!r})")
    return int(line)


def run_socket(n: int, rounds: int, alg: str = "ES256") -> dict[str, Any]:
    """A server process per kind, driven over loopback; the server's CPU per call."""
    from benchmarks.loadgen_http import HttpConnection
    from benchmarks.procstats import read_cpu

    issuer = Issuer()
    key = DpopKey.generate(alg)
    tokens = {"bearer": issuer.token(), "dpop": issuer.token(cnf={"jkt": key.thumbprint})}
    calls = [call_body(i) for i in range(n)]
    best = {"bearer": float("inf"), "dpop": float("inf")}
    servers: dict[str, subprocess.Popen[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        jwks = Path(tmp) / "jwks.json"
        jwks.write_text(json.dumps(issuer.jwks))
        try:
            for kind in best:
                servers[kind] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "benchmarks.dpop_overhead",
                        "--serve",
                        kind,
                        "--jwks",
                        str(jwks),
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            ports = {kind: _port(proc) for kind, proc in servers.items()}
            conns = {kind: HttpConnection("127.0.0.1", ports[kind], 30.0) for kind in best}

            def requests(kind: str) -> list[bytes]:
                out = []
                for body, headers in calls:
                    extra = [(b"authorization", f"Bearer {tokens[kind]}".encode())]
                    if kind == "dpop":
                        proof = key.proof("POST", RESOURCE, access_token=tokens[kind])
                        extra = [
                            (b"authorization", f"DPoP {tokens[kind]}".encode()),
                            (b"dpop", proof.encode()),
                        ]
                    out.append(_raw_request(ports[kind], [*headers, *extra], body))
                return out

            def drive(kind: str, batch: list[bytes]) -> float:
                cpu = read_cpu(servers[kind].pid).total
                for i, request in enumerate(batch):
                    answer = conns[kind].roundtrip(request)
                    if answer.status != 200 or f'"e{i}"'.encode() not in answer.body:
                        raise AssertionError((kind, answer.status, answer.body[:300]))
                return (read_cpu(servers[kind].pid).total - cpu) / len(batch)

            for kind in best:  # the token check is cached after the first call, as in production
                drive(kind, requests(kind)[:20])
            for _ in range(rounds):
                for kind in best:
                    best[kind] = min(best[kind], drive(kind, requests(kind)))
        finally:
            for proc in servers.values():
                proc.kill()
                proc.wait()
    return _result("socket", alg, n, rounds, best)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="calls per batch")
    parser.add_argument("--rounds", type=int, default=5, help="batches of each kind")
    parser.add_argument("--alg", default="ES256", help="the client's proof algorithm")
    parser.add_argument(
        "--transport", choices=("asgi", "socket", "both"), default="both", help="see above"
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--serve", choices=("bearer", "dpop"), help=argparse.SUPPRESS)
    parser.add_argument("--jwks", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve:
        trio.run(serve, opts.serve, json.loads(Path(opts.jwks).read_text()))
        return 0
    results = []
    if opts.transport in ("asgi", "both"):
        results.append(trio.run(run_asgi, opts.n, opts.rounds, opts.alg))
    if opts.transport in ("socket", "both"):
        results.append(run_socket(opts.n, opts.rounds, opts.alg))
    if opts.json:
        print(json.dumps(results))
    else:
        for result in results:
            for name, value in result.items():
                print(f"{name:>24}: {value}")
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
