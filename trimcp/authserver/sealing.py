"""Encryption at rest of what the store must not hold in clear: upstream tokens and the
token signing keys. Fernet (AES-CBC with HMAC-SHA256) from ``cryptography``; trimcp only
chooses the key.

The key comes from a secret given in configuration (the environment: replicas sharing a
Redis store must all have it), or is random to this process (one process, memory store).
"""

from __future__ import annotations

import base64
import secrets

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

#: A secret shorter than this is refused.
MIN_SECRET_BYTES = 16


def _derive(secret: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


class Sealer:
    """Seals and opens small strings. ``secret``: at least 16 bytes (None: a random key,
    good for this process only)."""

    def __init__(self, secret: str | bytes | None = None) -> None:
        if secret is None:
            raw = secrets.token_bytes(32)
        else:
            raw = secret.encode("utf-8") if isinstance(secret, str) else secret
            if len(raw) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"the authorization server's secret needs at least {MIN_SECRET_BYTES} bytes"
                )
        key = _derive(raw, b"trimcp authserver seal", 32)
        self._fernet = Fernet(base64.urlsafe_b64encode(key))
        #: Whether another process with the same secret can open what this one seals.
        self.shared = secret is not None
        #: Names this key without revealing it (a separate derivation): what is sealed
        #: with it is stored under names carrying it, so a process with another secret
        #: (a replica misconfigured, or a restart that changed the secret) makes records
        #: of its own rather than finding records it cannot open.
        self.key_id = _derive(raw, b"trimcp authserver key id", 6).hex()
        #: The key of the DPoP nonces the token endpoint gives (when it requires them):
        #: the same secret, the same nonces, on every replica.
        self.nonce_secret = _derive(raw, b"trimcp authserver dpop nonce", 32)

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def open(self, sealed: str) -> str | None:
        """The text, or None when ``sealed`` was not sealed with this key (or altered)."""
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            return None
