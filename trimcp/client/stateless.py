"""The client's side of the two protocol eras: which one to speak, and the 2026 envelope.

A client speaks one era per connection, decided once when it connects:

- **legacy** (2025-11-25 and earlier): the ``initialize`` handshake, then a session;
- **modern** (2026-07-28): no handshake; every request carries the protocol version, the
  client's capabilities, its identity and (optionally) a log level in ``_meta``.

``mode`` chooses how: ``"auto"`` probes with ``server/discover`` and falls back to
``initialize`` on any answer that is not a recognised 2026 error (what the spec asks of a
client that speaks both eras); ``"legacy"`` goes straight to ``initialize``; a version
string pins that version (a 2026 version never falls back). Everything here is pure: the
:class:`~trimcp.client.Client` does the talking.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import attrs

from trimcp import serde
from trimcp._record import Record
from trimcp.errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    LocalError,
    McpError,
)
from trimcp.protocol.modern import (
    META_CLIENT_CAPABILITIES as META_CLIENT_CAPABILITIES,
)
from trimcp.protocol.modern import META_CLIENT_INFO as META_CLIENT_INFO
from trimcp.protocol.modern import META_LOG_LEVEL as META_LOG_LEVEL
from trimcp.protocol.modern import META_PROTOCOL_VERSION as META_PROTOCOL_VERSION
from trimcp.protocol.modern import META_SERVER_INFO as META_SERVER_INFO
from trimcp.protocol.modern import META_SUBSCRIPTION_ID as META_SUBSCRIPTION_ID
from trimcp.protocol.modern import request_meta as modern_request_meta
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS
from trimcp.types import (
    ClientCapabilities,
    DiscoverResult,
    Implementation,
    LoggingLevel,
)

#: JSON-RPC codes only a 2026 server sends: one of them means "modern, do not fall back".
MODERN_ERROR_CODES: Final = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)

#: What ``mode`` accepts: ``"auto"``, ``"legacy"`` or one protocol version.
Mode: TypeAlias = str


class Era(enum.Enum):
    """Which protocol era a client speaks with its server (decided once, at connect)."""

    LEGACY = "legacy"  # initialize + session (2024-11-05 .. 2025-11-25)
    MODERN = "modern"  # stateless, per-request _meta (2026-07-28)


@attrs.frozen(repr=False, eq=False)
class ModePlan(Record):
    """What a ``mode`` means: probe with ``server/discover`` first (and with which
    version), whether a legacy answer may fall back to ``initialize``, and the version
    ``initialize`` offers."""

    discover: str | None
    may_fall_back: bool
    legacy_version: str


def plan_for(mode: Mode, legacy_version: str) -> ModePlan:
    """Check ``mode`` and say what it means. Raises ``ValueError`` for an unknown mode."""
    if mode == "auto":
        return ModePlan(STATELESS_VERSIONS[0], True, legacy_version)
    if mode == "legacy":
        return ModePlan(None, True, legacy_version)
    if mode in STATELESS_VERSIONS:
        return ModePlan(mode, False, legacy_version)
    if mode in SUPPORTED_VERSIONS:
        return ModePlan(None, True, mode)
    known = ", ".join(("auto", "legacy", *STATELESS_VERSIONS, *SUPPORTED_VERSIONS))
    raise ValueError(f"mode {mode!r} is not one of: {known}")


def request_meta(
    version: str,
    client_info: Implementation | None,
    capabilities: ClientCapabilities,
    log_level: LoggingLevel | None = None,
) -> dict[str, Any]:
    """The 2026 ``_meta`` envelope of one request (a fresh dict the caller may extend)."""
    return modern_request_meta(version, capabilities, client_info, log_level=log_level)


def with_meta(params: Any, envelope: Mapping[str, Any]) -> Any:
    """``params`` with ``envelope`` merged into its ``_meta`` (the caller's own keys stay;
    the envelope wins on the reserved ones). ``params`` may be None, a dict or a typed
    params object; it is never modified."""
    if params is None:
        return {"_meta": dict(envelope)}
    if isinstance(params, dict):
        meta = params.get("_meta")
        merged = {**meta, **envelope} if isinstance(meta, dict) else dict(envelope)
        return {**params, "_meta": merged}
    meta = getattr(params, "meta", None)
    merged = {**meta, **envelope} if isinstance(meta, dict) else dict(envelope)
    return attrs.evolve(params, meta=merged)


def is_modern_error(error: McpError) -> bool:
    """Whether ``error`` could only come from a 2026 server."""
    return error.code in MODERN_ERROR_CODES


def supported_of(error: McpError) -> list[str] | None:
    """The ``supported`` versions an ``UnsupportedProtocolVersionError`` lists, if any."""
    data = error.data
    if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(data, dict):
        return None
    supported = data.get("supported")
    if not isinstance(supported, list):
        return None
    return [v for v in supported if isinstance(v, str)]


def choose_version(ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    """Our most preferred version the server also lists, or None."""
    offered = set(theirs)
    for version in ours:
        if version in offered:
            return version
    return None


class NoCommonVersion(LocalError):
    """The server speaks no protocol version this client does (code ``-32022``): found
    here, from the versions the server listed."""

    def __init__(self, server_versions: Sequence[str], client_versions: Sequence[str]) -> None:
        theirs = ", ".join(server_versions) or "(none listed)"
        ours = ", ".join(client_versions)
        super().__init__(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"The server supports protocol versions {theirs}; this client speaks {ours}. "
            "Upgrade one side, or pin a version both know with mode=...",
            {"supported": list(server_versions), "requested": list(client_versions)},
        )


#: The identity shown for a server that did not say who it is (it SHOULD, not MUST).
UNKNOWN_SERVER: Final = Implementation(name="unknown", version="unknown")


def server_info_of(meta: Mapping[str, Any] | None) -> Implementation | None:
    """The server's identity from a result's ``_meta``, if it sent a usable one."""
    source = (meta or {}).get(META_SERVER_INFO)
    if not isinstance(source, dict):
        return None
    try:
        return serde.structure(source, Implementation)
    except serde.ShapeError:
        return None


def negotiated_from_discover(
    version: str,
    client_info: Implementation,
    capabilities: ClientCapabilities,
    result: DiscoverResult,
    server_info: Implementation | None = None,
) -> Negotiated:
    """The agreement a ``server/discover`` answer and the chosen ``version`` make."""
    return Negotiated(
        protocol_version=version,
        client_info=client_info,
        client_capabilities=capabilities,
        server_info=server_info or server_info_of(result.meta) or UNKNOWN_SERVER,
        server_capabilities=result.capabilities,
        instructions=result.instructions,
    )
