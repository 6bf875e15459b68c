"""Sealing ``requestState``: AES-256-GCM with a keyring that replicas share and rotate.

In 2026-07-28 a server that needs input answers ``input_required`` with an opaque
``requestState`` that the client echoes on its retry. The spec says to treat it as
attacker-controlled: trimcp seals it with an AEAD (AES-GCM from ``cryptography``), so a
client can neither read nor change it, and binds it to the request it was issued for
(the additional authenticated data names the method, the tool/prompt/resource, a digest
of the arguments and the principal): a state replayed on another request fails to open.
The sealed payload carries its own expiry.

A token is ``v1.<key id>.<base64url(nonce | ciphertext | tag)>``. The keyring seals with
its *current* key and opens with any key it holds, so rotating is: add the new key as
current on every replica, keep the old one until the longest state TTL has passed, then
drop it. A key made from a secret goes by a digest of itself, so ``from_secret(NEW, OLD)``
opens what ``from_secret(OLD)`` sealed. Replicas behind a load balancer share the same
keys (give them the same ``secret``, or the same key bytes), so any of them can open a
state another issued; served with a shared store (``serve_http(store="redis://...")``)
and left with the default keyring, they share keys through the store and rotate them
together (:mod:`trimcp.stores.keyring`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

# cryptography is imported when a state is first sealed or opened, not at start-up: most
# servers never ask for input, and a stdio server's cold start should not load OpenSSL.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_VERSION = "v1"
_NONCE = 12
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")
#: Tokens longer than this are refused unread (a client cannot make us decrypt megabytes).
MAX_TOKEN = 256 * 1024


class InvalidRequestState(ValueError):
    """A ``requestState`` that cannot be opened: malformed, sealed with an unknown key,
    altered, or presented on another request than the one it was issued for."""


def derive_key(secret: str | bytes) -> bytes:
    """A 256-bit key from a shared secret (HKDF-SHA256). Raises ValueError for a secret
    shorter than 16 bytes."""
    raw = secret.encode("utf-8") if isinstance(secret, str) else secret
    if len(raw) < 16:
        raise ValueError("a requestState secret needs at least 16 bytes")
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=None,
        info=b"trimcp requestState key",
    ).derive(raw)


def key_id_of(key: bytes) -> str:
    """The id a key derived from a secret goes by: a digest of the key itself, so every
    process holding the key names it alike, whatever its place in the keyring (a token
    sealed under ``from_secret(OLD)`` opens under ``from_secret(NEW, OLD)``). The key is
    an HKDF output: 72 bits of its domain-separated SHA-256 reveal nothing of it."""
    digest = hashlib.sha256(b"trimcp requestState key id\x00" + key).digest()
    return "s" + base64.urlsafe_b64encode(digest[:9]).decode("ascii")


class RequestStateKeyring:
    """AES-256-GCM keys by id: seals with ``current``, opens with any.

    ``keys`` maps key ids (letters, digits, ``_``, ``-``; up to 32) to 32-byte keys.
    Without keys, one random key is made: fine for one process, but states then do not
    survive a restart or reach another replica; give shared keys (or
    :meth:`from_secret`) when several processes serve the same clients.
    """

    def __init__(self, keys: Mapping[str, bytes] | None = None, current: str | None = None) -> None:
        #: Made with one random key (no keys given): replicas sharing a store replace
        #: such a keyring's keys with the store's (see :mod:`trimcp.stores.keyring`).
        self.generated = not keys
        if not keys:
            key = os.urandom(32)  # what AESGCM.generate_key(256) returns
            # Named by its digest: another process's state is refused as sealed with a key
            # this one never held, not as altered.
            keys = {key_id_of(key): key}
        self._keys: dict[str, bytes] = {}
        self._ciphers: dict[str, AESGCM] = {}  # made on first use of each key
        for key_id, key in keys.items():
            if not _KEY_ID.match(key_id):
                raise ValueError(f"bad requestState key id {key_id!r}")
            if len(key) != 32:
                raise ValueError(f"requestState key {key_id!r} must be 32 bytes (AES-256)")
            self._keys[key_id] = bytes(key)
        self.current = current if current is not None else next(iter(keys))
        if self.current not in self._keys:
            raise ValueError(f"the current key {self.current!r} is not in the keyring")

    @classmethod
    def from_secret(cls, secret: str | bytes, *older: str | bytes) -> RequestStateKeyring:
        """A keyring from shared secrets: ``secret`` seals, ``older`` ones still open.

        Each key's id is derived from the key (:func:`key_id_of`), not from its place in
        the list: replicas given the same secrets agree, and rotating, ``from_secret(NEW,
        OLD)``, still opens what ``from_secret(OLD)`` sealed. Raises ValueError for a
        secret shorter than 16 bytes.
        """
        keys: dict[str, bytes] = {}
        for value in (secret, *older):
            key = derive_key(value)
            keys.setdefault(key_id_of(key), key)
        return cls(keys, current=next(iter(keys)))

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def _cipher(self, key_id: str) -> AESGCM | None:
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            key = self._keys.get(key_id)
            if key is None:
                return None
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            cipher = self._ciphers[key_id] = AESGCM(key)
        return cipher

    def rotated(self, key_id: str, key: bytes) -> RequestStateKeyring:
        """A new keyring sealing with ``key`` and still opening with every key held now."""
        keys = {key_id: key}
        keyring = RequestStateKeyring(keys, current=key_id)
        for old_id, old_key in self._keys.items():
            if old_id != key_id:
                keyring._keys[old_id] = old_key
        return keyring

    def adopt(self, other: RequestStateKeyring) -> None:
        """Hold ``other``'s keys from now on (seal with its current key), in place: whoever
        holds this keyring sees the change. States sealed with keys ``other`` lacks no
        longer open."""
        kept = {
            key_id: cipher
            for key_id, cipher in self._ciphers.items()
            if other._keys.get(key_id) == self._keys.get(key_id)
        }
        self._keys = dict(other._keys)
        self._ciphers = kept
        self.current = other.current

    def seal(self, payload: bytes, bound_to: bytes) -> str:
        """Encrypt and authenticate ``payload``; ``bound_to`` must be given again to open."""
        nonce = os.urandom(_NONCE)
        cipher = self._cipher(self.current)
        assert cipher is not None
        sealed = cipher.encrypt(nonce, payload, bound_to)
        body = base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode("ascii")
        return f"{_VERSION}.{self.current}.{body}"

    def open(self, token: str, bound_to: bytes) -> bytes:
        """The payload of ``token``. Raises :class:`InvalidRequestState`."""
        if len(token) > MAX_TOKEN:
            raise InvalidRequestState("requestState is too long")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise InvalidRequestState("requestState is not one this server issued")
        cipher = self._cipher(parts[1])
        if cipher is None:
            raise InvalidRequestState(
                f"requestState was sealed with key {parts[1][:32]!r}, which this server no "
                "longer holds (rotated out) or never held (another server's keys): send the "
                "request again without it"
            )
        body = parts[2]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise InvalidRequestState("requestState is not valid base64url") from None
        if len(raw) < _NONCE + 16:
            raise InvalidRequestState("requestState is truncated")
        from cryptography.exceptions import InvalidTag

        try:
            return cipher.decrypt(raw[:_NONCE], raw[_NONCE:], bound_to)
        except InvalidTag:
            raise InvalidRequestState(
                "requestState was altered, or issued for another request"
            ) from None
