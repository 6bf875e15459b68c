"""Protocol revisions trimcp speaks, and the rules that differ between them."""

from __future__ import annotations

from typing import Final

V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
V2025_06_18: Final = "2025-06-18"
V2025_11_25: Final = "2025-11-25"
V2026_07_28: Final = "2026-07-28"

#: Session-based revisions, newest first. The first is what we offer and fall back to.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = (V2025_11_25, V2025_06_18, V2025_03_26, V2024_11_05)
LATEST_VERSION: Final = SUPPORTED_VERSIONS[0]

#: Stateless revisions (no ``initialize``, no session; every request carries its protocol
#: version, client capabilities and client info in ``_meta``), newest first.
STATELESS_VERSIONS: Final[tuple[str, ...]] = (V2026_07_28,)


def is_stateless(version: str | None) -> bool:
    """Whether ``version`` is a stateless (2026-07-28 or later) revision."""
    return version in STATELESS_VERSIONS


#: The version a Streamable HTTP server assumes when ``MCP-Protocol-Version`` is absent.
HTTP_DEFAULT_VERSION: Final = V2025_03_26


def negotiate_version(requested: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> str:
    """The version a server answers ``initialize`` with.

    The client's version when we support it, else our latest; the client then decides
    whether it can go on (it disconnects if it cannot).
    """
    return requested if requested in supported else supported[0]


def allows_batches(version: str | None) -> bool:
    """Only 2025-03-26 lets a peer send JSON-RPC batches (arrays); 2025-06-18 removed them."""
    return version == V2025_03_26


def input_errors_are_tool_errors(version: str | None) -> bool:
    """Whether tool-argument validation failures are reported as ``isError`` results.

    2025-11-25 says so explicitly; earlier revisions answer with ``-32602``.
    """
    return version is not None and version >= V2025_11_25
