"""Where a credential may go (client side; docs/authorization.md, "Where credentials
go").

A workload token, a client secret, a private-key assertion, an ID-JAG or a refresh token
is worth as much to whoever receives it as to the client: the MCP server, which names the
authorization server in its metadata, must not choose where it goes. Each is sent only
to an authorization server picked from those the MCP server lists by an anchor the MCP
server does not control, and to the token endpoint that issuer's own metadata names:

- :func:`trusted_destination` (non-interactive credentials): the issuer the application
  configured, else the issuers the assertion itself names in ``aud`` (a secret names
  none); else :class:`~trimcp.auth.errors.UntrustedAuthorizationServer`.
- :func:`home_of_client` (a pre-registered client's secret or key): the issuer it is
  registered at; else the same error.
- :func:`home_of_tokens` (a refresh token): the issuer that issued it; else
  :class:`~trimcp.auth.errors.AuthorizationServerChanged`, and the client logs in again.

Every refusal comes before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit, urlunsplit

from trimcp.auth.discovery import Discovery, fetch_server_metadata
from trimcp.auth.errors import (
    AuthorizationFailed,
    AuthorizationServerChanged,
    UntrustedAuthorizationServer,
)
from trimcp.auth.fetch import Fetcher
from trimcp.auth.tokens import StoredAuth

#: The name of the setting that anchors a credential (said in every refusal): on the
#: non-interactive clients, and on ``OAuthClient`` for a pre-registered client.
SETTING = "authorization_server"

_DEFAULT_PORTS = {"https": 443, "http": 80}


def issuer_identifier(value: str) -> str | None:
    """``value`` in the form issuer identifiers are compared in, or None when it is not
    one. RFC 8414 section 2: an issuer is a URL with a scheme, a host, an optional port
    and path, and no query or fragment. The scheme and host are case-insensitive and a
    default port is the same as none (RFC 3986 section 6.2.3), and a trailing ``/`` is
    dropped (as the metadata issuer check does); the path is compared exactly, case
    included. ``http`` is accepted here (loopback test servers use it); what may be
    fetched is the fetcher's rule."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.query or parts.fragment:
        return None
    if "#" in value or "?" in value or parts.username is not None or parts.password is not None:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def same_issuer(one: str | None, other: str | None) -> bool:
    """Whether two values name the same issuer (see :func:`issuer_identifier`)."""
    if one is None or other is None:
        return False
    identifier = issuer_identifier(one)
    return identifier is not None and identifier == issuer_identifier(other)


def assertion_audiences(assertion: str) -> list[str]:
    """The ``aud`` values of a JWT, read without checking its signature: only to decide
    where it may be sent (the authorization server verifies it). Empty when it is not a
    readable JWT or names no audience."""
    import jwt

    try:
        claims = jwt.decode(assertion, options={"verify_signature": False})
    except jwt.PyJWTError:
        return []
    audience = claims.get("aud")
    values = [audience] if isinstance(audience, str) else audience
    if not isinstance(values, list):
        return []
    return [value for value in values if isinstance(value, str)]


def listed_servers(found: Discovery) -> list[str]:
    """The authorization servers the MCP server names: its resource metadata's list,
    else (2025-03-26, no such metadata) the one discovery found."""
    document = found.resource_metadata or {}
    servers = document.get("authorization_servers")
    if isinstance(servers, list):
        named = [server for server in servers if isinstance(server, str)]
        if named:
            return named
    return [found.issuer]


def first_listed(found: Discovery, anchors: Iterable[str | None]) -> str | None:
    """The first server the MCP server lists that is one of ``anchors`` (compared as
    issuer identifiers), as the list spells it; None when it lists none of them."""
    wanted = {issuer_identifier(anchor) for anchor in anchors if anchor is not None}
    wanted.discard(None)
    return next((s for s in listed_servers(found) if issuer_identifier(s) in wanted), None)


def named_server(found: Discovery) -> str:
    """The authorization server the MCP server asked for, as a refusal names it."""
    listed = listed_servers(found)
    return found.issuer if found.issuer in listed else listed[0]


async def at_issuer(fetcher: Fetcher, found: Discovery, chosen: str) -> Discovery | None:
    """``found`` for the listed server ``chosen``, with metadata fetched from that issuer
    itself (``found`` as it is when its metadata already is that); None when it
    publishes none. Raises :class:`AuthorizationFailed` for metadata naming another
    issuer. Cancellation: the fetch is abandoned."""
    if chosen == found.issuer and found.metadata_from_issuer:
        return found
    metadata = await fetch_server_metadata(fetcher, chosen)
    if metadata is None:
        return None
    return Discovery(
        resource=found.resource,
        issuer=chosen,
        metadata=metadata,
        resource_metadata=found.resource_metadata,
    )


async def trusted_destination(
    fetcher: Fetcher,
    found: Discovery,
    *,
    configured: str | None,
    audiences: Sequence[str] = (),
    audiences_from: str = "",
    credential: str,
    secret: str | None,
    owner: str,
) -> Discovery:
    """The authorization server to send ``credential`` to, as a :class:`Discovery`
    whose metadata (and so its token endpoint) is that issuer's own.

    ``configured``: the application's ``authorization_server`` setting; when set, only
    that issuer is trusted. Else the issuers in ``audiences`` (the assertion's ``aud``;
    ``audiences_from`` says whose in the refusal), unless ``secret`` names a client
    secret or private key going along: a secret names no server, so it needs the
    setting. Among the servers the MCP server lists, the first trusted one is chosen;
    none: :class:`UntrustedAuthorizationServer` naming the server it asked for, the MCP
    server and the setting on ``owner`` (the class name) to change. Metadata not fetched
    from the chosen issuer itself (a 2025-03-26 server's own naming another issuer, or
    another listed server's) is fetched from it; none found is refused too. Raises
    :class:`~trimcp.auth.errors.AuthorizationFailed` for metadata that names another
    issuer. Cancellation: the fetch is abandoned; nothing was sent.
    """
    if configured is not None:
        anchors = {issuer_identifier(configured)}
        why = f"{owner} is set to send it only to {SETTING}={configured!r}"
    elif secret is not None:
        anchors = set()
        why = f"{secret} names no server, so it goes only to the one set as {SETTING}=, and none is"
    else:
        anchors = {issuer_identifier(audience) for audience in audiences}
        shown = ", ".join(repr(audience[:200]) for audience in audiences[:5])
        who = audiences_from or f"the {credential}"
        why = f"{who} names {shown} only" if shown else f"{who} names no server"
    chosen = first_listed(found, anchors)
    if chosen is None:
        named = named_server(found)
        raise UntrustedAuthorizationServer(
            f"refused to send the {credential} to the authorization server {named} named by "
            f"the MCP server {found.resource}: {why}. Only if {named} is where this "
            f"credential belongs, set {SETTING}={named!r} on {owner}",
            authorization_server=named,
            mcp_server=found.resource,
            setting=SETTING,
        )
    return await _metadata_of(fetcher, found, chosen, credential)


async def _metadata_of(
    fetcher: Fetcher, found: Discovery, chosen: str, credential: str
) -> Discovery:
    """:func:`at_issuer`, refusing when ``chosen`` publishes no metadata."""
    destination = await at_issuer(fetcher, found, chosen)
    if destination is None:
        raise UntrustedAuthorizationServer(
            f"refused to send the {credential} for the MCP server {found.resource}: the "
            f"authorization server {chosen} publishes no metadata, so its token endpoint "
            "is unknown (the one another document names is not used)",
            authorization_server=chosen,
            mcp_server=found.resource,
            setting=SETTING,
        )
    return destination


async def home_of_client(
    fetcher: Fetcher,
    found: Discovery,
    *,
    client_id: str,
    home: str,
    why: str,
    credential: str,
    owner: str,
) -> Discovery:
    """``found`` narrowed to ``home``, the issuer a pre-registered ``client_id`` is
    registered at (``why`` says how that is known, for the refusal), with that issuer's
    own metadata. :class:`UntrustedAuthorizationServer` when the MCP server does not list
    it (or it publishes no metadata): its ``credential`` (the client secret, its key, or
    only the client_id) goes nowhere else. Cancellation: the fetch is abandoned."""
    chosen = first_listed(found, [home])
    if chosen is None:
        named = named_server(found)
        raise UntrustedAuthorizationServer(
            f"refused to use the pre-registered client {client_id[:200]!r} ({credential}) "
            f"at the authorization server {named} named by the MCP server {found.resource}: "
            f"it is registered at {home} ({why}). Only if {named} is where this client is "
            f"registered, set {SETTING}={named!r} on {owner}",
            authorization_server=named,
            mcp_server=found.resource,
            setting=SETTING,
        )
    return await _metadata_of(fetcher, found, chosen, credential)


async def home_of_tokens(fetcher: Fetcher, found: Discovery, stored: StoredAuth) -> Discovery:
    """``found`` narrowed to the issuer of ``stored``'s tokens (and registration), for a
    refresh: that issuer's own metadata, while the MCP server still lists it.

    Raises :class:`AuthorizationServerChanged` when it no longer does, or when the tokens
    and the registration name different issuers or none (nothing is sent: the client logs
    in afresh where the MCP server points now), and :class:`AuthorizationFailed` when the
    issuer publishes no usable metadata. Cancellation: the fetch is abandoned."""
    issued_by = stored.issuer
    registered_at = stored.registration.issuer if stored.registration is not None else None
    named = named_server(found)
    consistent = registered_at is None or same_issuer(registered_at, issued_by)
    chosen = first_listed(found, [issued_by]) if consistent else None
    if chosen is None:
        origin = (
            f"{issued_by}, which issued the stored tokens"
            if consistent and issued_by is not None
            else "the server that issued the stored tokens (they do not say which, or "
            "their registration names another)"
        )
        raise AuthorizationServerChanged(
            f"the MCP server {found.resource} no longer lists {origin}: it names {named}, "
            f"and the refresh token and client credentials from there are not sent to {named}",
            issued_by=issued_by,
            authorization_server=named,
            mcp_server=found.resource,
        )
    destination = await at_issuer(fetcher, found, chosen)
    if destination is None:
        raise AuthorizationFailed(
            f"{chosen}, which issued the stored tokens, publishes no metadata: its token "
            "endpoint is unknown, so the refresh token is not sent"
        )
    return destination
