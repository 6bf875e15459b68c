"""MCP clients this authorization server knows: registered (RFC 7591) or named by a URL
(Client ID Metadata Documents), and the redirect URIs they may be sent back to.

Redirect URIs are checked twice. At registration: ``https`` with a host, ``http`` only on
loopback (``127.0.0.1``, ``[::1]``, ``localhost``), or a private-use scheme holding a dot
(``com.example.app:/cb``, RFC 8252 §7.1); never a fragment, credentials, nor schemes such
as ``javascript:`` or ``data:``. At authorization: the URI sent must equal a registered one
character for character, except that a loopback ``http`` URI matches on any port (RFC 8252
§7.3: a native client listens on a port the system gives it).

A client metadata document is fetched with the SSRF-guarded :class:`~trimcp.auth.fetch.
Fetcher` (``https`` only, no private or loopback address unless allowed), bounded in size
and time, and kept for a while in a bounded cache.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from trimcp._record import Record
from trimcp.auth.errors import AuthError
from trimcp.auth.fetch import Fetcher, check_url, host_address

#: Redirect URIs one client may register.
MAX_REDIRECT_URIS = 10
#: Characters of one redirect URI, client id URL or client name.
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 200
#: Bytes of a client metadata document.
MAX_DOCUMENT_BYTES = 16 * 1024
#: Client metadata documents kept, and for how long (seconds).
DOCUMENT_CACHE_SIZE = 256
DOCUMENT_CACHE_TTL = 300.0

_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*\Z")
_LOOPBACK_NAMES = frozenset({"localhost"})
#: Authentication methods a registration may ask for at the token endpoint.
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


class RegistrationError(ValueError):
    """A registration or metadata document that cannot be accepted; ``error`` is the RFC
    7591 code (``invalid_redirect_uri`` or ``invalid_client_metadata``)."""

    def __init__(self, message: str, error: str = "invalid_client_metadata") -> None:
        super().__init__(message)
        self.error = error


@attrs.frozen(kw_only=True)
class Client(Record):
    """A client: its id, name, redirect URIs, token-endpoint authentication (``none``
    for public clients; else the SHA-256 of its secret), and how it became known
    (``registered`` or ``document``)."""

    client_id: str
    redirect_uris: tuple[str, ...]
    client_name: str | None = None
    auth_method: str = "none"
    secret_digest: str | None = attrs.field(default=None, repr=False)
    kind: str = "registered"

    def to_record(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "redirect_uris": list(self.redirect_uris),
            "client_name": self.client_name,
            "auth_method": self.auth_method,
            "secret_digest": self.secret_digest,
            "kind": self.kind,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Client:
        return cls(
            client_id=str(record["client_id"]),
            redirect_uris=tuple(str(u) for u in record.get("redirect_uris", ())),
            client_name=record.get("client_name"),
            auth_method=str(record.get("auth_method", "none")),
            secret_digest=record.get("secret_digest"),
            kind=str(record.get("kind", "registered")),
        )

    def secret_matches(self, secret: str) -> bool:
        if self.secret_digest is None:
            return False
        return hmac.compare_digest(self.secret_digest, digest(secret))

    def redirect_uri_for(self, asked: str | None) -> str | None:
        """The registered redirect URI ``asked`` stands for (None: it matches none). With
        no ``asked``, the only registered one (OAuth 2.1 §4.1.1)."""
        if asked is None:
            return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None
        for registered in self.redirect_uris:
            if redirect_matches(registered, asked):
                return asked
        return None

    @property
    def redirect_hosts(self) -> list[str]:
        """What the consent page shows: where this client's redirects go."""
        hosts = []
        for uri in self.redirect_uris:
            parts = urlsplit(uri)
            shown = parts.hostname or f"{parts.scheme}:"
            if shown not in hosts:
                hosts.append(shown)
        return hosts


def digest(secret: str) -> str:
    """The SHA-256 a secret (code, token, client secret) is stored and looked up by."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _is_loopback_host(host: str | None) -> bool:
    if host is None:
        return False
    if host.lower() in _LOOPBACK_NAMES:
        return True
    address = host_address(host)
    return address is not None and address.is_loopback


def check_redirect_uri(uri: object) -> str:
    """``uri`` if a client may register it (see the module docstring); else
    :class:`RegistrationError` naming what is wrong."""
    if not isinstance(uri, str) or not uri:
        raise RegistrationError(
            "redirect_uris must be a list of URI strings", "invalid_redirect_uri"
        )
    shown = uri[:200]
    if len(uri) > MAX_URI_CHARS or not uri.isascii() or any(c in uri for c in " \t\r\n<>\"'\\"):
        raise RegistrationError(f"the redirect URI {shown!r} is malformed", "invalid_redirect_uri")
    parts = urlsplit(uri)
    scheme = parts.scheme
    if not _SCHEME.match(scheme):
        raise RegistrationError(
            f"the redirect URI {shown!r} has no valid scheme", "invalid_redirect_uri"
        )
    if parts.fragment or "#" in uri:
        raise RegistrationError(
            f"the redirect URI {shown!r} has a fragment (RFC 6749 §3.1.2 forbids it)",
            "invalid_redirect_uri",
        )
    if parts.username is not None or parts.password is not None:
        raise RegistrationError(
            f"the redirect URI {shown!r} holds credentials", "invalid_redirect_uri"
        )
    if scheme == "https":
        if not parts.hostname:
            raise RegistrationError(
                f"the redirect URI {shown!r} has no host", "invalid_redirect_uri"
            )
    elif scheme == "http":
        if not _is_loopback_host(parts.hostname):
            raise RegistrationError(
                f"the redirect URI {shown!r} uses http on a host other than loopback: use "
                "https, or http://127.0.0.1 for a native client",
                "invalid_redirect_uri",
            )
    elif "." not in scheme:
        raise RegistrationError(
            f"the redirect URI {shown!r} uses the scheme {scheme!r}: a native client's own "
            "scheme must be a reversed domain name (RFC 8252 §7.1, e.g. com.example.app)",
            "invalid_redirect_uri",
        )
    return uri


def redirect_matches(registered: str, asked: str) -> bool:
    """Whether ``asked`` is ``registered`` (exactly, or on another port for loopback)."""
    if asked == registered:
        return True
    mine, theirs = urlsplit(registered), urlsplit(asked)
    if mine.scheme != "http" or theirs.scheme != "http" or not _is_loopback_host(mine.hostname):
        return False
    try:
        their_port = theirs.port
    except ValueError:
        return False
    # Everything but the port, as written: host, path and query compared exactly.
    return (
        theirs.hostname == mine.hostname
        and "@" not in theirs.netloc
        and their_port is not None
        and theirs.path == mine.path
        and theirs.query == mine.query
        and not theirs.fragment
        and "#" not in asked
        and _without_port(theirs.netloc) == _without_port(mine.netloc)
    )


def _without_port(netloc: str) -> str:
    if netloc.endswith("]"):
        return netloc
    host, _, port = netloc.rpartition(":")
    return host if host and port.isdigit() else netloc


def _name(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise RegistrationError("client_name must be a string")
    return value[:MAX_NAME_CHARS]


def _redirects(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise RegistrationError("redirect_uris must name at least one URI", "invalid_redirect_uri")
    if len(uris) > MAX_REDIRECT_URIS:
        raise RegistrationError(
            f"at most {MAX_REDIRECT_URIS} redirect URIs may be registered", "invalid_redirect_uri"
        )
    return tuple(check_redirect_uri(uri) for uri in uris)


def _check_grants(metadata: Mapping[str, Any]) -> None:
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
        raise RegistrationError("grant_types may hold only authorization_code and refresh_token")
    types = metadata.get("response_types", ["code"])
    if types != ["code"]:
        raise RegistrationError('response_types must be ["code"]')


def register(metadata: Mapping[str, Any]) -> tuple[Client, dict[str, Any]]:
    """A new client from an RFC 7591 registration request, and the answer to send
    (with a ``client_secret`` for a confidential client: shown once, stored as a digest).
    Raises :class:`RegistrationError`."""
    redirect_uris = _redirects(metadata)
    _check_grants(metadata)
    method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise RegistrationError(
            f"token_endpoint_auth_method {str(method)[:40]!r} is not supported; use one of "
            + ", ".join(AUTH_METHODS)
        )
    name = _name(metadata.get("client_name"))
    client_id = "c-" + secrets.token_urlsafe(18)
    secret = None if method == "none" else secrets.token_urlsafe(32)
    client = Client(
        client_id=client_id,
        redirect_uris=redirect_uris,
        client_name=name,
        auth_method=method,
        secret_digest=None if secret is None else digest(secret),
    )
    answer: dict[str, Any] = {
        "client_id": client_id,
        "client_id_issued_at": int(time.time()),
        "redirect_uris": list(redirect_uris),
        "token_endpoint_auth_method": method,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }
    if name is not None:
        answer["client_name"] = name
    if secret is not None:
        answer["client_secret"] = secret
        answer["client_secret_expires_at"] = 0
    return client, answer


def is_document_client_id(client_id: str) -> bool:
    """Whether ``client_id`` names a client metadata document (an https URL with a path)."""
    return client_id.startswith("https://") or client_id.startswith("http://")


def check_document_url(client_id: str, *, allow_private: bool) -> None:
    """Refuse a client id URL the spec forbids or that points inward (SSRF). Raises
    :class:`RegistrationError`."""
    if len(client_id) > MAX_URI_CHARS:
        raise RegistrationError("the client id URL is too long")
    parts = urlsplit(client_id)
    if parts.scheme != "https" and not (allow_private and parts.scheme == "http"):
        raise RegistrationError(f"the client id {client_id[:200]!r} must be an https URL")
    if parts.fragment or "#" in client_id or parts.username or parts.password:
        raise RegistrationError(
            f"the client id {client_id[:200]!r} must have no fragment nor credentials"
        )
    if parts.path in ("", "/") or any(seg in (".", "..") for seg in parts.path.split("/")):
        raise RegistrationError(
            f"the client id {client_id[:200]!r} must have a path, without . or .. segments"
        )
    try:
        check_url(client_id, allow_private=allow_private)
    except AuthError as exc:
        raise RegistrationError(str(exc)) from None


def document_client(client_id: str, document: Mapping[str, Any]) -> Client:
    """A client from its metadata document. Raises :class:`RegistrationError`."""
    if document.get("client_id") != client_id:
        raise RegistrationError(
            f"the metadata document at {client_id[:200]} names another client_id"
        )
    redirect_uris = _redirects(document)
    _check_grants(document)
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise RegistrationError(
            'a client metadata document must use token_endpoint_auth_method "none" '
            "(a URL client id has no shared secret)"
        )
    return Client(
        client_id=client_id,
        redirect_uris=redirect_uris,
        client_name=_name(document.get("client_name")),
        kind="document",
    )


class DocumentClients:
    """Fetches and caches client metadata documents (see the module docstring).

    ``allow_private``: fetch from loopback and private addresses too (tests, a client
    on the same machine); never set it on a server that strangers reach.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        timeout: float = 5.0,
        cache_size: int = DOCUMENT_CACHE_SIZE,
        cache_ttl: float = DOCUMENT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, Client]] = OrderedDict()

    async def get(self, client_id: str) -> Client:
        """The client ``client_id`` names. Raises :class:`RegistrationError`.
        Cancellation: the fetch is abandoned."""
        cached = self._cache.get(client_id)
        if cached is not None and cached[0] > self._clock():
            self._cache.move_to_end(client_id)
            return cached[1]
        check_document_url(client_id, allow_private=self.allow_private)
        fetcher = Fetcher(
            timeout=self.timeout, max_bytes=MAX_DOCUMENT_BYTES, allow_private=self.allow_private
        )
        try:
            response = await fetcher.get(client_id)
            if response.status != 200:
                raise RegistrationError(
                    f"the client metadata document {client_id[:200]} answered HTTP "
                    f"{response.status}"
                )
            client = document_client(client_id, response.json_object("the client metadata"))
        except AuthError as exc:
            raise RegistrationError(
                f"the client metadata document could not be read: {exc}"
            ) from None
        finally:
            await fetcher.aclose()
        self._cache[client_id] = (self._clock() + self.cache_ttl, client)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return client
