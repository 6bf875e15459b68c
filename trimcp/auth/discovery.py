"""Finding the authorization server of a protected MCP server (client side).

1. The ``WWW-Authenticate: Bearer`` challenge of a 401/403 (:func:`parse_challenge`):
   ``resource_metadata``, ``scope``, ``error``.
2. The protected-resource metadata (RFC 9728): the challenge's URL, else the path-aware
   well-known URL, else the root one (:func:`prm_urls`). Its ``resource`` must be the
   MCP server's URL or a prefix of it (:func:`resource_allowed`).
3. The authorization server's metadata: RFC 8414, then OpenID discovery, in the spec's
   path-aware order (:func:`as_metadata_urls`); its ``issuer`` must be the one asked for.
   Of the servers the resource metadata lists, the first with usable metadata is used
   (at most :data:`MAX_AUTHORIZATION_SERVERS` are tried).
   A 2025-03-26 server without resource metadata is its own authorization server, and
   one without any metadata uses ``/authorize``, ``/token`` and ``/register`` at its root.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from trimcp._record import Record
from trimcp.auth.errors import AuthorizationFailed
from trimcp.auth.fetch import Fetcher, FetchError

logger = logging.getLogger("trimcp.auth")

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: Authorization servers of one protected-resource metadata document whose metadata the
#: client tries, in its order (each costs up to three GETs a hostile MCP server chooses).
MAX_AUTHORIZATION_SERVERS = 4
_PARAM = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?')


@attrs.frozen(repr=False, eq=False)
class Challenge(Record):
    """The parsed ``Bearer`` and ``DPoP`` challenges of a ``WWW-Authenticate`` header
    (empty when absent or of another scheme): their parameters, the ``DPoP`` one's first
    (it holds the error of a request made with a DPoP token); ``dpop``: whether the server
    offered DPoP."""

    params: dict[str, str] = attrs.field(factory=dict)
    dpop: bool = False

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")

    @property
    def scope(self) -> str | None:
        return self.params.get("scope")

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def reason(self) -> str | None:
        """The refusal as the server put it: ``error: error_description`` (either alone
        when the other is missing; None when neither is there), at most 300 characters."""
        parts = [self.params.get("error"), self.params.get("error_description")]
        said = ": ".join(part for part in parts if part)
        return said[:300] or None


_SCHEME = re.compile(r"\s*,?\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?=\s|,|$)(?!\s*=)")


def parse_challenge(value: str | None) -> Challenge:
    """The parameters of the ``Bearer`` and ``DPoP`` challenges in a ``WWW-Authenticate``
    value (RFC 9110 §11.6.1: challenges separated by commas, each a scheme then
    ``name=value`` parameters; a scheme name inside a quoted value is not one)."""
    if not value:
        return Challenge()
    by_scheme: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    position = 0
    while position < len(value):
        found = _PARAM.match(value, position)
        if found is not None and found.end() > position:
            if current is not None:
                name = found.group(1).lower()
                text = found.group(2)
                text = re.sub(r"\\(.)", r"\1", text) if text is not None else found.group(3)
                current.setdefault(name, text)
            position = found.end()
            continue
        scheme = _SCHEME.match(value, position)
        if scheme is None or scheme.end() == position:
            break
        current = by_scheme.setdefault(scheme.group(1).lower(), {})
        position = scheme.end()
    params = {**by_scheme.get("bearer", {}), **by_scheme.get("dpop", {})}
    params.pop("algs", None)
    return Challenge(params, dpop="dpop" in by_scheme)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def prm_urls(server_url: str, challenge: Challenge) -> list[str]:
    """Where to look for the protected-resource metadata, in order."""
    parts = urlsplit(server_url)
    origin = _origin(server_url)
    urls = []
    if challenge.resource_metadata:
        urls.append(challenge.resource_metadata)
    path = parts.path.rstrip("/")
    if path:
        urls.append(f"{origin}{PRM_WELL_KNOWN}{path}")
    urls.append(f"{origin}{PRM_WELL_KNOWN}")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an authorization server's metadata, in the spec's order."""
    parts = urlsplit(issuer)
    origin = _origin(issuer)
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def canonical_server_url(url: str) -> str:
    """The MCP server's canonical URI: no fragment, lower-case scheme and host."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def resource_allowed(resource: str, server_url: str) -> bool:
    """Whether metadata naming ``resource`` may speak for ``server_url``: same origin, and
    the resource's path is the server's path or a parent of it."""
    want = urlsplit(canonical_server_url(server_url))
    have = urlsplit(canonical_server_url(resource))
    if (have.scheme, have.netloc) != (want.scheme, want.netloc):
        return False
    have_path = have.path.rstrip("/")
    want_path = want.path.rstrip("/")
    return want_path == have_path or want_path.startswith(have_path + "/")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Discovery(Record):
    """What the client learned: the resource to ask tokens for, the issuer, and the
    authorization server's metadata (endpoints, supported scopes and methods).

    ``metadata_from_issuer``: whether ``metadata`` is the issuer's own (fetched from its
    well-known URLs and naming it, or the 2025-03-26 default endpoints at it); False when
    a 2025-03-26 MCP server's own metadata names another issuer, whose endpoints it
    cannot speak for (:mod:`trimcp.auth.destinations` fetches that issuer's instead)."""

    resource: str
    issuer: str
    metadata: dict[str, Any]
    resource_metadata: dict[str, Any] | None = None
    metadata_from_issuer: bool = True

    def endpoint(self, name: str) -> str | None:
        value = self.metadata.get(name)
        return value if isinstance(value, str) else None


async def _get_object(fetcher: Fetcher, url: str) -> dict[str, Any] | None:
    try:
        response = await fetcher.get(url)
    except FetchError:
        return None
    if response.status != 200:
        return None
    try:
        return response.json_object(url)
    except FetchError:
        return None


async def fetch_resource_metadata(
    fetcher: Fetcher, server_url: str, challenge: Challenge
) -> dict[str, Any] | None:
    """The first protected-resource metadata document found, or None (a 2025-03-26
    server). Raises :class:`AuthorizationFailed` when it names another resource."""
    for url in prm_urls(server_url, challenge):
        document = await _get_object(fetcher, url)
        if document is None:
            continue
        resource = document.get("resource")
        if not isinstance(resource, str) or not resource_allowed(resource, server_url):
            raise AuthorizationFailed(
                f"the protected-resource metadata at {url} is for {str(resource)[:200]!r}, "
                f"not for {server_url}: refusing to send credentials there"
            )
        return document
    return None


async def fetch_server_metadata(
    fetcher: Fetcher, issuer: str, *, check_issuer: bool = True
) -> dict[str, Any] | None:
    """The authorization server metadata of ``issuer``. It must name an ``issuer`` (RFC
    8414 section 3.3: metadata without one must not be used), and that ``issuer`` must be
    the one asked for (mix-up defence), unless ``check_issuer`` is off: a 2025-03-26
    server's own metadata, found at its origin, names the issuer it has. Raises
    :class:`AuthorizationFailed` naming the metadata URL."""
    for url in as_metadata_urls(issuer):
        document = await _get_object(fetcher, url)
        if document is None:
            continue
        named = document.get("issuer")
        if not isinstance(named, str) or not named:
            raise AuthorizationFailed(
                f"the authorization server metadata at {url} names no issuer (RFC 8414 "
                "requires it; metadata without one must not be used): refusing to log in there"
            )
        if check_issuer and named.rstrip("/") != issuer.rstrip("/"):
            raise AuthorizationFailed(
                f"the authorization server metadata at {url} names issuer {named[:200]!r}, "
                f"not {issuer!r} (the one it was fetched for): refusing to log in there"
            )
        return document
    return None


async def discover(fetcher: Fetcher, server_url: str, challenge: Challenge) -> Discovery:
    """Steps 2 and 3 of the module docstring. Raises :class:`AuthorizationFailed`."""
    document = await fetch_resource_metadata(fetcher, server_url, challenge)
    resource = canonical_server_url(server_url)
    if document is not None:
        resource = str(document["resource"])
        listed = document.get("authorization_servers")
        servers = [s for s in listed if isinstance(s, str)] if isinstance(listed, list) else []
        if not servers:
            raise AuthorizationFailed(
                f"the protected-resource metadata of {server_url} names no authorization server"
            )
        failures: list[str] = []
        for issuer in servers[:MAX_AUTHORIZATION_SERVERS]:
            try:
                metadata = await fetch_server_metadata(fetcher, issuer)
            except AuthorizationFailed as exc:
                failures.append(str(exc))
                continue
            if metadata is None:
                failures.append(
                    f"no authorization server metadata found for {issuer} (tried "
                    f"{', '.join(as_metadata_urls(issuer))})"
                )
                continue
            for failure in failures:
                logger.warning("%s; trying the next authorization server listed", failure)
            return Discovery(
                resource=resource, issuer=issuer, metadata=metadata, resource_metadata=document
            )
        if len(failures) == 1:
            raise AuthorizationFailed(failures[0])
        raise AuthorizationFailed(
            f"none of the first {len(failures)} authorization servers {server_url} lists has "
            f"usable metadata: {'; '.join(failures)}"
        )
    # 2025-03-26: the MCP server's origin is the authorization server.
    origin = issuer = _origin(server_url)
    metadata = await fetch_server_metadata(fetcher, issuer, check_issuer=False)
    if metadata is not None:
        issuer = metadata["issuer"]
    if metadata is None:
        metadata = {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
        }
    return Discovery(
        resource=resource,
        issuer=issuer,
        metadata=metadata,
        metadata_from_issuer=issuer.rstrip("/") == origin,
    )
