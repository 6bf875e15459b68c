"""Handles: opaque strings a server mints for a piece of state, sealed so they open only
for the principal they were minted for, until they expire.

A handle is the server's ``requestState`` keyring (:mod:`trimcp.stores.request_state`:
AES-256-GCM, keys shared by the replicas and rotated) sealing a small JSON payload: a
random id (which names the state in the store), the kind of thing it stands for, the
principal key it was minted for and its expiry (Unix seconds). The additional
authenticated data is fixed and differs from ``requestState``'s, so neither kind of
token opens as the other.

Opening a handle reads nothing from the store: a forged or altered handle fails to
decrypt, one sealed with a key the server no longer holds (rotated out) is refused as
too old, and the payload then names whose it is and until when. Each refusal is an
:class:`InvalidHandle`, a :class:`~trimcp.server.tools.ToolError` saying why.
"""

from __future__ import annotations

import json
import re
import time
from typing import Final, Literal

import attrs

from trimcp.protocol.jsonrpc import dump_json
from trimcp.server.tools import ToolError
from trimcp.stores.request_state import MAX_TOKEN, InvalidRequestState, RequestStateKeyring

#: What a handle's seal is bound to: never a ``requestState``'s binding.
_BINDING: Final = b"trimcp state handle v1\x00"
#: A kind names what a handle stands for (``"cart"``): letters, digits, ``_.-``.
_KIND: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
#: A key id as a keyring names one.
_KEY_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")

Reason = Literal["forged", "unknown key", "other user", "other kind", "expired"]


class InvalidHandle(ToolError):
    """A handle refused: ``reason`` is ``"forged"`` (not minted here, or altered),
    ``"unknown key"`` (sealed with a key this server no longer holds: rotated out),
    ``"other user"`` (minted for another principal), ``"other kind"`` (a handle for
    something else) or ``"expired"``. The message says which, in words for the model."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason: Reason = reason


@attrs.frozen(kw_only=True, slots=True)
class HandleClaims:
    """What a handle says: its state's ``id``, its ``kind``, the principal key it was
    minted for (``owner``) and when it expires (``expires_at``, Unix seconds)."""

    id: str
    kind: str
    owner: str
    expires_at: float


def check_kind(kind: str) -> str:
    """``kind``, or ValueError when it is not 1-64 letters, digits, ``_``, ``.``, ``-``."""
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise ValueError(f"a handle kind is 1-64 letters, digits, '_', '.' or '-', got {kind!r}")
    return kind


def seal_handle(keyring: RequestStateKeyring, claims: HandleClaims) -> str:
    """The handle for ``claims``, sealed with ``keyring``'s current key."""
    payload = {"i": claims.id, "k": claims.kind, "o": claims.owner, "e": claims.expires_at}
    return keyring.seal(dump_json(payload), _BINDING)


def open_handle(
    keyring: RequestStateKeyring,
    handle: object,
    *,
    owner: str,
    kind: str | None = None,
    now: float | None = None,
) -> HandleClaims:
    """The claims of ``handle`` when it opens for ``owner`` (and is a ``kind`` handle,
    when given) at ``now`` (Unix seconds; default: the time now). Raises
    :class:`InvalidHandle` saying why not. Reads nothing but the handle itself."""
    shown = repr(handle[:16] + "…" if isinstance(handle, str) and len(handle) > 16 else handle)
    if not isinstance(handle, str) or len(handle) > MAX_TOKEN:
        raise InvalidHandle("forged", f"{shown[:40]} is not a handle this server minted")
    parts = handle.split(".")
    if (
        len(parts) == 3
        and parts[0] == "v1"
        and _KEY_ID.match(parts[1])
        and parts[1] not in keyring.key_ids
    ):
        raise InvalidHandle(
            "unknown key",
            f"the handle {shown} was sealed with a key this server no longer holds (it is "
            "older than the key rotation allows) or never held (another server's): get a "
            "new handle",
        )
    try:
        payload = json.loads(keyring.open(handle, _BINDING))
        claims = HandleClaims(
            id=str(payload["i"]),
            kind=str(payload["k"]),
            owner=str(payload["o"]),
            expires_at=float(payload["e"]),
        )
    except (InvalidRequestState, ValueError, KeyError, TypeError):
        raise InvalidHandle(
            "forged",
            f"{shown} is not a handle this server minted (or it was altered): pass a "
            "handle exactly as a tool of this server returned it",
        ) from None
    if claims.owner != owner:
        raise InvalidHandle(
            "other user",
            f"the handle {shown} was minted for another user: a handle works only for the "
            "user it was minted for",
        )
    if kind is not None and claims.kind != kind:
        raise InvalidHandle(
            "other kind",
            f"the handle {shown} is a {claims.kind!r} handle, not a {kind!r} one",
        )
    moment = time.time() if now is None else now
    if claims.expires_at <= moment:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(claims.expires_at))
        raise InvalidHandle(
            "expired",
            f"the {claims.kind} handle {shown} expired at {when}: get a new one",
        )
    return claims
