"""Errors of the HTTP client transports, each with the JSON-RPC code a caller sees.

The transports cannot raise into the session engine's waiters, so a request that fails at
the HTTP level is answered locally: the transport turns one of these errors into a
JSON-RPC error response for that request id, and the caller of ``send_request`` gets it
as :class:`~trimcp.errors.McpError` with this code, message and data.
"""

from __future__ import annotations

from typing import Any

from trimcp.errors import AUTHORIZATION_FAILED, CONNECTION_CLOSED, INTERNAL_ERROR, McpError


class HttpClientError(McpError):
    """The exchange with the server failed below JSON-RPC: connect, TLS, timeout, framing.

    Code ``-32000`` (connection closed): no answer will come for the request.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data)


class HttpStatusError(McpError):
    """The server answered with an HTTP status that carries no JSON-RPC answer.

    Code ``-32603``; ``data`` holds ``{"httpStatus": status}`` plus the start of the body
    (``"body"``, at most 512 characters) when it had one.
    """

    def __init__(self, status: int, url: str, body: str = "", detail: str = "") -> None:
        data: dict[str, Any] = {"httpStatus": status}
        if body:
            data["body"] = body[:512]
        message = f"HTTP {status} from {url}"
        if detail:
            message = f"{message}: {detail}"
        super().__init__(INTERNAL_ERROR, message, data)
        self.status = status


class AuthorizationRefused(HttpStatusError):
    """The server refused the request (401/403) and authorization could not fix it:
    logging in failed, or the server kept refusing the tokens it gave. ``data`` also
    holds :data:`~trimcp.errors.AUTHORIZATION_FAILED` (true), so connecting ends with it."""

    def __init__(self, status: int, url: str, body: str = "", detail: str = "") -> None:
        super().__init__(status, url, body, f"authorization failed: {detail}")
        self.data[AUTHORIZATION_FAILED] = True


class SessionExpired(HttpClientError):
    """The server forgot the session (HTTP 404) and it could not be re-established."""


#: Everything the HTTP layer raises for a failed exchange.
HTTP_ERRORS = (HttpClientError, HttpStatusError)
