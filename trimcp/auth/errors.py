"""Errors of trimcp's authorization support, on the server and the client side."""

from __future__ import annotations


class AuthError(Exception):
    """Base class: something about authorization failed. ``str()`` says what and why."""


class InvalidToken(AuthError):
    """A bearer token was refused (server side). The message is safe to show the client:
    it goes into ``error_description`` of the 401's ``WWW-Authenticate``."""


class AuthorizationFailed(AuthError):
    """The client could not obtain a usable access token (client side): discovery,
    registration, the user's consent, the token request or a refresh failed. The message
    names the step and the server at fault."""


class UnsafeUrl(AuthError):
    """A URL from a server's metadata points where the client must not go (another
    scheme, a private or link-local address): refused before any connection."""


class UntrustedAuthorizationServer(AuthorizationFailed):
    """A non-interactive credential (workload token, client secret, private-key
    assertion, ID-JAG) was not sent: the authorization server the MCP server named is
    not the one the application configured, nor one the credential names (see
    docs/authorization.md, "Where credentials go"). ``authorization_server``: the one
    named; ``mcp_server``: the MCP server that named it; ``setting``: the client option
    that decides (``authorization_server``)."""

    def __init__(
        self, message: str, *, authorization_server: str, mcp_server: str, setting: str
    ) -> None:
        super().__init__(message)
        self.authorization_server = authorization_server
        self.mcp_server = mcp_server
        self.setting = setting


class AuthorizationServerChanged(AuthorizationFailed):
    """Stored tokens were not refreshed: the MCP server no longer lists the authorization
    server that issued them (``issued_by``; None when the store does not say), it names
    ``authorization_server`` now. Their refresh token and the client's registration there
    are not sent to it; an interactive client logs in there afresh (see
    docs/authorization.md, "Where credentials go"). ``mcp_server``: the MCP server."""

    def __init__(
        self,
        message: str,
        *,
        issued_by: str | None,
        authorization_server: str,
        mcp_server: str,
    ) -> None:
        super().__init__(message)
        self.issued_by = issued_by
        self.authorization_server = authorization_server
        self.mcp_server = mcp_server
