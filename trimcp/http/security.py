"""Header checks made before a request is read: Host/Origin (DNS rebinding), media types.

Pure functions on header values, so each rule is tested on its own. A client sends the same
few values on every request, so the parsing ones keep their last answers (bounded caches:
a client sending endless new values only evicts).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

#: The Host names a server bound to loopback accepts by default.
LOCALHOST_NAMES: Final[tuple[str, ...]] = ("localhost", "127.0.0.1", "[::1]")

WILDCARD = "*"


@functools.lru_cache(maxsize=256)
def split_host(value: str) -> tuple[str, str | None] | None:
    """``"Example.com:8080"`` -> ``("example.com", "8080")``; None if it is malformed.

    IPv6 literals must be bracketed (``[::1]:8000``). The port, when present, must be
    digits. Anything with a user part, path, space or stray bracket is malformed.
    """
    if not value or any(c in value for c in " \t/@\\?#"):
        return None
    value = value.lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        if "[" in value or "]" in value or value.count(":") > 1:
            return None
        host, sep, port_text = value.partition(":")
        port = port_text if sep else None
    if port is not None and not (port.isdigit() and len(port) <= 5):
        return None
    if not host:
        return None
    return host, port


@functools.lru_cache(maxsize=64)
def _parsed(allowed: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    # Allowlists come from the (frozen) config: parse each one once.
    return tuple(p for p in map(split_host, allowed) if p is not None)


def _host_matches(host: str, port: str | None, allowed: Sequence[str]) -> bool:
    if WILDCARD in allowed:
        return True
    for want_host, want_port in _parsed(tuple(allowed)):
        if want_host == host and (want_port is None or want_port == port):
            return True
    return False


def host_allowed(value: str | None, allowed: Sequence[str]) -> bool:
    """Whether a ``Host`` header is in the allowlist (entries without a port: any port)."""
    if WILDCARD in allowed:
        return True
    if value is None:
        return False
    parsed = split_host(value)
    return parsed is not None and _host_matches(parsed[0], parsed[1], allowed)


def origin_allowed(
    value: str, allowed_origins: Sequence[str] | None, allowed_hosts: Sequence[str]
) -> bool:
    """Whether an ``Origin`` header is acceptable.

    With ``allowed_origins`` None, an ``http``/``https`` origin whose host is an allowed
    host passes. Otherwise the origin must equal an entry (case-insensitive), or match an
    entry ending in ``:*`` with any port. ``null`` and malformed origins never pass unless
    ``"*"`` is allowed.
    """
    if allowed_origins is not None and WILDCARD in allowed_origins:
        return True
    scheme, sep, netloc = value.lower().partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    parsed = split_host(netloc)
    if parsed is None:
        return False
    host, port = parsed
    if allowed_origins is None:
        return _host_matches(host, port, allowed_hosts)
    origin = f"{scheme}://{host}" + (f":{port}" if port is not None else "")
    for entry in allowed_origins:
        entry = entry.lower().rstrip("/")
        if entry == origin:
            return True
        if entry.endswith(":*") and entry[:-2] == f"{scheme}://{host}":
            return True
    return False


@functools.lru_cache(maxsize=64)
def is_json_content_type(value: str | None) -> bool:
    """``application/json`` with optional parameters (``; charset=utf-8``)."""
    if value is None:
        return False
    return value.split(";", 1)[0].strip().lower() == "application/json"


@functools.lru_cache(maxsize=256)
def accepts(value: str | None, media_type: str) -> bool:
    """Whether an ``Accept`` header allows ``media_type`` (wildcards count; ``q=0`` refuses)."""
    if not value:
        return False
    kind = media_type.split("/", 1)[0]
    for item in value.split(","):
        parts = item.split(";")
        candidate = parts[0].strip().lower()
        if candidate not in (media_type, f"{kind}/*", "*/*"):
            continue
        refused = False
        for param in parts[1:]:
            name, _, q = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    refused = float(q.strip()) <= 0
                except ValueError:
                    refused = True
        if not refused:
            return True
    return False
