"""PKCE (RFC 7636, S256) and ``state`` values: random strings and one SHA-256 digest."""

from __future__ import annotations

import base64
import hashlib
import secrets


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_verifier() -> str:
    """A code verifier: 64 characters of the unreserved set (384 random bits)."""
    return secrets.token_urlsafe(48)


def challenge_of(verifier: str) -> str:
    """The S256 code challenge of ``verifier``."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """An unguessable ``state`` value (256 bits)."""
    return secrets.token_urlsafe(32)
