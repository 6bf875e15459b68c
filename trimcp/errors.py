"""JSON-RPC / MCP error codes and the exception hierarchy that carries them.

Every error trimcp raises about the protocol carries the JSON-RPC ``code`` it maps to,
so the layer that catches it can answer the peer without guessing. The split follows
h11: :class:`LocalProtocolError` means *we* tried to do something illegal (a bug in the
caller, never sent to the peer as-is); :class:`RemoteProtocolError` means the *peer* sent
something illegal, and its ``code``/``message``/``data`` are what we answer with.

This module does no I/O and imports nothing outside the standard library.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

# Standard JSON-RPC 2.0 codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

# Implementation-defined server errors (-32000..-32099). These two follow the codes the
# official SDKs use, so peers that switch on them behave the same with trimcp.
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001

# MCP-specific codes.
RESOURCE_NOT_FOUND: Final = -32002
HEADER_MISMATCH: Final = -32020  # 2026-07-28
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022  # 2026-07-28
URL_ELICITATION_REQUIRED: Final = -32042  # 2025-11-25

ERROR_NAMES: Final[dict[int, str]] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    CONNECTION_CLOSED: "Connection closed",
    REQUEST_TIMEOUT: "Request timed out",
    RESOURCE_NOT_FOUND: "Resource not found",
    HEADER_MISMATCH: "Header mismatch",
    MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
    URL_ELICITATION_REQUIRED: "URL elicitation required",
}


class McpError(Exception):
    """An error that has a JSON-RPC representation: ``code``, ``message`` and optional ``data``.

    Raise it from a request handler to answer the peer with exactly this error; any other
    exception from a handler is answered with ``-32603`` and a safe message. Received error
    responses are raised to the caller of a request as ``McpError`` too.
    """

    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        if isinstance(code, bool) or not isinstance(code, int):
            raise TypeError(f"JSON-RPC error code must be an int, not {code!r}")
        self.code = code
        self.message = message if message is not None else ERROR_NAMES.get(code, "Error")
        self.data = data
        super().__init__(self.message)

    def to_error_object(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this exception."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


#: The key in ``data`` of an error a client's transport made up because authorization
#: failed (logging in failed, or the server kept refusing the token): the server was
#: reached and refused, so connecting ends with it (another era would log in again).
AUTHORIZATION_FAILED: Final = "authorizationFailed"


def authorization_failed(error: McpError) -> bool:
    """Whether ``error`` says this client's authorization failed (:data:`AUTHORIZATION_FAILED`
    in an error this process made: :func:`made_here`; a peer's or a relayed error saying
    so does not count)."""
    data = error.data
    return type(data) is dict and data.get(AUTHORIZATION_FAILED) is True and made_here(error)


class LocalProtocolError(McpError):
    """We (the local side) tried to do something the protocol forbids.

    Examples: sending a request before initialization, calling a method the peer did not
    declare a capability for, reusing a request id. These are bugs or misuse in the calling
    code; nothing is sent to the peer.
    """

    def __init__(self, message: str, code: int = INVALID_REQUEST, data: Any = None) -> None:
        super().__init__(code, message, data)


class RemoteProtocolError(McpError):
    """The peer sent something the protocol forbids.

    ``code``, ``message`` and ``data`` are what we answer with when the offending message
    is a request; for anything else the error is reported locally and the session goes on.
    """

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        super().__init__(code, message, data)


class RequestTimeout(McpError):
    """An outbound request got no answer within its timeout.

    trimcp has already told the peer (``notifications/cancelled``) when this is raised.
    """

    def __init__(self, message: str = "Request timed out", data: Any = None) -> None:
        super().__init__(REQUEST_TIMEOUT, message, data)


class SessionClosed(McpError):
    """The session closed (locally, or because the peer went away) before an answer arrived."""

    def __init__(self, message: str = "Session closed", data: Any = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data)


class UnexpectedResult(McpError):
    """A typed request (``Session.request(METHOD, ...)``) was answered with another kind
    of result than the method's own (a task handle, a 2026 ``InputRequiredResult``)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


#: The key in ``data`` that marks an error this process made up itself (:class:`LocalError`).
MADE_HERE: Final = "madeHere"
#: Its value: random per process, so an error that a peer sends, or that a proxy relays
#: from its own client, never passes for one made here.
_HERE: Final = secrets.token_hex(8)


class LocalError(McpError):
    """An error this side made up in place of an answer from the peer: a connection that
    failed, an HTTP status with no JSON-RPC answer in it, a limit of this client (too many
    input rounds, a missing handler, a subscription never acknowledged).

    Its wire form (:meth:`to_error_object`) adds :data:`MADE_HERE` to ``data``, so the
    mark survives the trip a transport's errors take: a transport hands the errors it
    makes up to the session as JSON-RPC error responses, which reach the caller as a plain
    :class:`McpError`. :func:`made_here` tells either form from an error the peer sent.
    """

    def to_error_object(self) -> dict[str, Any]:
        error = super().to_error_object()
        data = error.get("data")
        if data is None or type(data) is dict:
            error["data"] = {**(data or {}), MADE_HERE: _HERE}
        return error


def made_here(error: McpError) -> bool:
    """Whether this process made ``error`` up (a :class:`LocalError`, also after its trip
    through the wire form, or the session's own :class:`LocalProtocolError`,
    :class:`RequestTimeout` or :class:`SessionClosed`) rather than received it from the
    peer."""
    if isinstance(error, LocalError | LocalProtocolError | RequestTimeout | SessionClosed):
        return True
    data = error.data
    return type(data) is dict and data.get(MADE_HERE) == _HERE
