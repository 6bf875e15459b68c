"""What two peers agreed on, as one value object.

Session revisions produce it from the ``initialize`` handshake. The stateless revision
(2026-07-28) has no handshake: every request carries its protocol version, client info and
client capabilities in ``_meta``, so one :class:`Negotiated` is built per request from that
instead (:func:`trimcp.protocol.modern.negotiated`). Handlers read this object, never
connection state, so they work the same way under both.
"""

from __future__ import annotations

import attrs

from trimcp._record import Record
from trimcp.protocol.versions import is_stateless
from trimcp.types import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    ServerCapabilities,
)

#: The client name of the handshake a server runs itself in stateless HTTP mode
#: (``HttpServerConfig(stateless=True)``, ``--stateless``): that client declared nothing,
#: and the server has no way to send it a request.
IMPLICIT_CLIENT_NAME = "stateless-http-client"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Negotiated(Record):
    """The protocol version, both peers' identities and capabilities, and instructions.

    ``client_info`` is always known in the session era and optional in 2026-07-28.
    ``log_level``: 2026-07-28 only, the request's own ``_meta`` log level (None: the
    request gets no log messages); in the session era ``logging/setLevel`` decides.
    """

    protocol_version: str
    client_info: Implementation | None
    client_capabilities: ClientCapabilities
    server_info: Implementation
    server_capabilities: ServerCapabilities
    instructions: str | None = None
    log_level: LoggingLevel | None = None

    @property
    def stateless(self) -> bool:
        """Whether this is a stateless (2026-07-28) request's agreement."""
        return is_stateless(self.protocol_version)

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
