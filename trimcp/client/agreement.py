"""What a client and its server agreed on when connecting, as a base of
:class:`~trimcp.client.Client`: the era, the version, both sides' identity and
capabilities, the server's own answer, and the 2026 ``_meta`` envelope built from them.
"""

from __future__ import annotations

from typing import Any

from trimcp.client.stateless import Era, request_meta
from trimcp.client.tasks import with_tasks_extension
from trimcp.errors import LocalProtocolError
from trimcp.protocol.negotiated import Negotiated
from trimcp.session import Session
from trimcp.types import (
    DiscoverResult,
    Implementation,
    InitializeResult,
    LoggingLevel,
    ServerCapabilities,
)


class Agreement:
    """The connection's agreement; :class:`~trimcp.client.Client` fills it in ``attach``."""

    client_info: Implementation
    log_level: LoggingLevel | None
    _session: Session | None
    _era: Era | None
    _negotiated: Negotiated | None
    _answer: InitializeResult | DiscoverResult | None

    @property
    def session(self) -> Session:
        """The engine session (raises :class:`LocalProtocolError` before :meth:`attach`)."""
        if self._session is None:
            raise LocalProtocolError("This client is not connected yet")
        return self._session

    @property
    def negotiated(self) -> Negotiated:
        """What was agreed when connecting: version, both sides' identity and capabilities."""
        if self._negotiated is None:
            raise LocalProtocolError("This client has not completed initialize or discover yet")
        return self._negotiated

    @property
    def era(self) -> Era:
        """``Era.MODERN`` (2026-07-28, stateless) or ``Era.LEGACY`` (initialize + session)."""
        if self._era is None:
            raise LocalProtocolError("This client has not completed initialize or discover yet")
        return self._era

    @property
    def initialize_result(self) -> InitializeResult:
        """The server's whole answer to ``initialize`` (legacy era only)."""
        if not isinstance(self._answer, InitializeResult):
            if isinstance(self._answer, DiscoverResult):
                raise LocalProtocolError(
                    "This client speaks 2026-07-28, which has no initialize; see "
                    "discover_result or negotiated"
                )
            raise LocalProtocolError("This client has not completed initialize")
        return self._answer

    @property
    def discover_result(self) -> DiscoverResult:
        """The server's whole answer to ``server/discover`` (modern era only)."""
        if not isinstance(self._answer, DiscoverResult):
            raise LocalProtocolError("This client did not connect with server/discover")
        return self._answer

    @property
    def server_info(self) -> Implementation:
        """The server's name and version."""
        return self.negotiated.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server declared it supports."""
        return self.negotiated.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if it sent any."""
        return self.negotiated.instructions

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision (``2026-07-28`` in the modern era)."""
        return self.negotiated.protocol_version

    def _envelope(self) -> dict[str, Any]:
        """The 2026 ``_meta`` every request carries (version, capabilities, identity, and
        the log level when one is set)."""
        negotiated = self.negotiated
        return request_meta(
            negotiated.protocol_version,
            self.client_info,
            # A trimcp client can always follow a task the server chooses to create.
            with_tasks_extension(negotiated.client_capabilities),
            self.log_level,
        )
