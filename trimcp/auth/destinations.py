"""Where a non-interactive credential may go (client side; docs/authorization.md,
"Where credentials go").

A workload token, a client secret, a private-key assertion or an ID-JAG is worth as much
to whoever receives it as to the client: the MCP server, which names the authorization
server in its metadata, must not choose where it goes. :func:`trusted_destination` picks
the authorization server a credential is sent to from those the MCP server lists, by an
anchor the MCP server does not control: the issuer the application configured, else the
issuers the assertion itself names in ``aud`` (a secret names none). The token endpoint
is the one that issuer's own metadata names. Anything else is refused with
:class:`~trimcp.auth.errors.UntrustedAuthorizationServer` before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from trimcp.auth.discovery import Discovery, fetch_server_metadata
from trimcp.auth.errors import UntrustedAuthorizationServer
from trimcp.auth.fetch import Fetcher

#: The name of the setting on the non-interactive clients (said in every refusal).
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


def _listed(found: Discovery) -> list[str]:
    """The authorization servers the MCP server names: its resource metadata's list,
    else (2025-03-26, no such metadata) the one discovery found."""
    document = found.resource_metadata or {}
    servers = document.get("authorization_servers")
    if isinstance(servers, list):
        named = [server for server in servers if isinstance(server, str)]
        if named:
            return named
    return [found.issuer]


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
    listed = _listed(found)
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
    anchors.discard(None)
    chosen = next((server for server in listed if issuer_identifier(server) in anchors), None)
    if chosen is None:
        named = found.issuer if found.issuer in listed else listed[0]
        raise UntrustedAuthorizationServer(
            f"refused to send the {credential} to the authorization server {named} named by "
            f"the MCP server {found.resource}: {why}. Only if {named} is where this "
            f"credential belongs, set {SETTING}={named!r} on {owner}",
            authorization_server=named,
            mcp_server=found.resource,
            setting=SETTING,
        )
    if chosen == found.issuer and found.metadata_from_issuer:
        return found
    metadata = await fetch_server_metadata(fetcher, chosen)
    if metadata is None:
        raise UntrustedAuthorizationServer(
            f"refused to send the {credential} for the MCP server {found.resource}: the "
            f"authorization server {chosen} publishes no metadata, so its token endpoint "
            "is unknown (the one another document names is not used)",
            authorization_server=chosen,
            mcp_server=found.resource,
            setting=SETTING,
        )
    return Discovery(
        resource=found.resource,
        issuer=chosen,
        metadata=metadata,
        resource_metadata=found.resource_metadata,
    )
