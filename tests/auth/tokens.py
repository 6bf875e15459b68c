"""Signing keys, a key set and token minting for the authorization tests (PyJWT)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://as.example.com"
RESOURCE = "http://127.0.0.1:8000/mcp"


class SigningKey:
    """A private key with its ``kid``, for minting tokens, and its public JWK."""

    def __init__(self, kid: str, kind: str = "RSA") -> None:
        self.kid = kid
        self.alg = "RS256" if kind == "RSA" else "ES256"
        if kind == "RSA":
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        else:
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.jwk = json.loads(ECAlgorithm.to_jwk(self.private.public_key()))
        self.jwk.update({"kid": kid, "use": "sig", "alg": self.alg})

    @property
    def public_pem(self) -> bytes:
        pem: bytes = self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return pem

    def mint(
        self, *, headers: Mapping[str, Any] | None = None, alg: str | None = None, **claims: Any
    ) -> str:
        """A signed token; claims or headers given as None are left out (``kid=None``: a
        token naming no key). ``alg`` signs with another algorithm of the same key type."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": ISSUER,
            "aud": RESOURCE,
            "sub": "alice",
            "client_id": "client-1",
            "scope": "mcp",
            "iat": now,
            "exp": now + 600,
        }
        body.update(claims)
        for name in [k for k, v in body.items() if v is None]:
            del body[name]
        header = {k: v for k, v in {"kid": self.kid, **(headers or {})}.items() if v is not None}
        return jwt.encode(body, self.private, algorithm=alg or self.alg, headers=header)


class KeySet:
    """What the fake JWKS endpoint serves; ``fail``/``hang`` make it unreachable."""

    def __init__(self, *keys: SigningKey) -> None:
        self.keys = list(keys)
        self.fetches = 0
        self.fail = False
        self.hang = False

    async def fetch(self, url: str) -> Mapping[str, Any]:
        import trio

        from trimcp.auth.fetch import FetchError

        self.fetches += 1
        if self.hang:
            await trio.sleep_forever()
        if self.fail:
            raise FetchError(f"GET {url} failed: connection refused")
        return {"keys": [k.jwk for k in self.keys]}
