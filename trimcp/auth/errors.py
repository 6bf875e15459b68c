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
