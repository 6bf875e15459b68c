"""What two peers agreed on, as one value object.

Session revisions produce it from the ``initialize`` handshake. The stateless revision
(2026-07-28) has no handshake: every request carries its protocol version, client info and
client capabilities in ``_meta``, so a per-request :class:`Negotiated` will be built from
that instead. Handlers read this object, never connection state, so they work the same way
under both.
"""

from __future__ import annotations

import attrs

from trimcp.types import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
)


@attrs.frozen(kw_only=True)
class Negotiated:
    """The protocol version, both peers' identities and capabilities, and instructions."""

    protocol_version: str
    client_info: Implementation
    client_capabilities: ClientCapabilities
    server_info: Implementation
    server_capabilities: ServerCapabilities
    instructions: str | None = None

    @classmethod
    def from_handshake(
        cls, params: InitializeRequestParams, result: InitializeResult
    ) -> Negotiated:
        """The agreement an ``initialize`` request and its result make."""
        return cls(
            protocol_version=result.protocol_version,
            client_info=params.client_info,
            client_capabilities=params.capabilities,
            server_info=result.server_info,
            server_capabilities=result.capabilities,
            instructions=result.instructions,
        )
