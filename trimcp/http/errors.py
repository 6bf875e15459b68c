"""The HTTP errors of both sides.

A server refuses a request with :class:`HttpRejection` (a status and a JSON-RPC error body).
The client's errors each carry the JSON-RPC code a caller sees, and are
:class:`~trimcp.errors.LocalError`: made up here, not sent by the server.

The transports cannot raise into the session engine's waiters, so a request that fails at
the HTTP level is answered locally: the transport turns one of these errors into a
JSON-RPC error response for that request id, and the caller of ``send_request`` gets it
as :class:`~trimcp.errors.McpError` with this code, message and data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trimcp.errors import (
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LocalError,
)


class HttpClientError(LocalError):
    """The exchange with the server failed below JSON-RPC: connect, TLS, timeout, framing.

    Code ``-32000`` (connection closed): no answer will come for the request.
    """

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data)


class HttpStatusError(LocalError):
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


class HttpRejection(Exception):
    """Answer the HTTP request with ``status`` and a JSON-RPC error body, then stop.

    ``code`` is the JSON-RPC code in the body (``-32600`` unless given). Hooks such as
    ``authenticate`` may raise it, e.g. ``HttpRejection(401, "...", headers=[(b"www-authenticate",
    b"Bearer")])``.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: int = INVALID_REQUEST,
        headers: Iterable[tuple[bytes, bytes]] = (),
        request_id: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = list(headers)
        self.request_id = request_id
