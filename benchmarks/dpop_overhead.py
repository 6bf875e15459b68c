"""What DPoP costs a protected server: a 2026-07-28 ``tools/call`` with a DPoP-bound token
and a fresh proof against the same call with a Bearer token, in the same run.

Drives the ASGI app in this process (no sockets), one stateless ``tools/call`` at a time,
and measures the server's CPU time per call (``time.process_time``). Both servers verify
the same kind of token (``ProtectedResource`` + ``JwtVerifier``, RS256, cached after the
first request as in production); the DPoP one also checks every proof (ES256 signature,
claims, ``ath``, ``cnf.jkt``, the in-memory replay cache). Proofs are made before the
timed part (the client's cost is reported apart). Batches of both kinds alternate,
``--rounds`` times; the best batch of each kind counts.

Run from the repository root: .venv/bin/python -m benchmarks.dpop_overhead [-n 2000]
[--rounds 5] [--alg ES256] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

import trimcp
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
    """An RS256 key and its key set, standing in for the authorization server."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": "bench", "use": "sig", "alg": "RS256"})
        self.jwks = {"keys": [jwk]}

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
    sent = False
    status = 0
    out: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
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
    return status, b"".join(out)


async def batch(app: Any, requests: list[tuple[list[tuple[bytes, bytes]], bytes]]) -> float:
    """CPU seconds per call for ``requests``, one after another."""
    cpu = time.process_time()
    for i, (headers, body) in enumerate(requests):
        status, answer = await exchange(app, headers, body)
        if status != 200 or f'"e{i}"'.encode() not in answer:
            raise AssertionError((status, answer[:300]))
    return (time.process_time() - cpu) / len(requests)


async def run(n: int, rounds: int, alg: str = "ES256") -> dict[str, Any]:
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
        "proof_algorithm": alg,
        "calls_per_batch": n,
        "rounds": rounds,
        "bearer_cpu_us_per_call": round(best["bearer"] * 1e6, 1),
        "dpop_cpu_us_per_call": round(best["dpop"] * 1e6, 1),
        "ratio": round(best["dpop"] / best["bearer"], 3),
        "client_proof_cpu_us": round(proof_cpu * 1e6, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="calls per batch")
    parser.add_argument("--rounds", type=int, default=5, help="batches of each kind")
    parser.add_argument("--alg", default="ES256", help="the client's proof algorithm")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    opts = parser.parse_args()
    result = trio.run(run, opts.n, opts.rounds, opts.alg)
    if opts.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            print(f"{name:>24}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
