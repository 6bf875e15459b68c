"""Small bounded HTTP exchanges for OAuth: fetch a JSON document, POST a form.

Built on the HTTP client's connection pool (h11 over Trio, TLS by the default context).
Every exchange is bounded in time (``timeout``, for the whole exchange) and in size
(``max_bytes``); a failure is one :class:`FetchError` whose message names the URL.
"""

from __future__ import annotations

import ipaddress
import json
import re
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import attrs
import trio

from trimcp._record import Record
from trimcp.auth.dpop import DpopProofs
from trimcp.auth.errors import AuthError, UnsafeUrl
from trimcp.http.client import ConnectionPool
from trimcp.http.errors import HttpClientError
from trimcp.http.url import Endpoint, parse_url

#: Default bound on a metadata document, key set or token answer.
MAX_DOCUMENT_BYTES = 256 * 1024


class FetchError(AuthError):
    """An OAuth exchange failed: connect, timeout, size, or a body that is not JSON."""


@attrs.frozen(repr=False, eq=False)
class JsonResponse(Record):
    """A response whose body was read: ``status``, lower-case ``headers``, ``body`` bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; :class:`FetchError` when it is not."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise FetchError(
                f"HTTP {self.status}: the body is not JSON: {self.body[:200]!r}"
            ) from None

    def json_object(self, what: str) -> dict[str, Any]:
        """The body as a JSON object; :class:`FetchError` naming ``what`` otherwise."""
        value = self.json()
        if not isinstance(value, dict):
            raise FetchError(f"{what} is not a JSON object")
        return value


#: Carrier-grade NAT (RFC 6598): not global, yet ``ipaddress`` calls it neither private nor
#: reserved.
_SHARED_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
#: NAT64's well-known prefix (RFC 6052): the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_HEX = re.compile(r"0[xX][0-9a-fA-F]*\Z")
_OCTAL = re.compile(r"0[0-7]+\Z")
_DECIMAL = re.compile(r"[0-9]+\Z")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _legacy_ipv4(name: str) -> ipaddress.IPv4Address | None:
    """``name`` read as ``inet_aton`` (and so ``getaddrinfo``) reads it: one to four parts,
    each decimal, octal (``0177``) or hex (``0x7f``), the last filling the bytes left, so
    ``127.1``, ``2130706433``, ``0x7f000001`` and ``0177.0.0.1`` all name 127.0.0.1."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if _HEX.match(part):
            values.append(int(part[2:] or "0", 16))
        elif _OCTAL.match(part):
            values.append(int(part, 8))
        elif _DECIMAL.match(part):
            values.append(int(part))
        else:
            return None
    *leading, last = values
    if any(value > 255 for value in leading) or last >= 256 ** (4 - len(leading)):
        return None
    number = last
    for index, value in enumerate(leading):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def host_address(host: str) -> Address | None:
    """The address a URL's host names literally, read the way a resolver will read it
    (None for a name to look up): legacy IPv4 forms (see :func:`_legacy_ipv4`), IPv6 with
    or without brackets or a zone id, non-ASCII digits and dots as IDNA folds them."""
    name = host.strip().removeprefix("[").removesuffix("]")
    if not name.isascii():
        try:  # what the resolver is given: full-width digits and dots become ASCII
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    if ":" in name:
        try:
            return ipaddress.IPv6Address(name.split("%", 1)[0])  # the zone id names no host
        except ValueError:
            return None
    return _legacy_ipv4(name.removesuffix("."))


def is_public_address(address: Address) -> bool:
    """False for a private, loopback, link-local, multicast, reserved, unspecified or
    shared (100.64.0.0/10) address, or an IPv6 address embedding one (mapped, 6to4, NAT64)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and not is_public_address(embedded):
            return False
    elif address in _SHARED_SPACE:
        return False
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def is_public_host(host: str) -> bool:
    """False for a literal address that is not public (:func:`is_public_address`), in any
    form a resolver accepts (:func:`host_address`), and for ``localhost`` names.

    Host names are not resolved here (the connection is made to what DNS says at that
    moment); a literal address is judged directly.
    """
    address = host_address(host)
    if address is not None:
        return is_public_address(address)
    name = host.strip().lower().removesuffix(".")
    return name != "localhost" and not name.endswith(".localhost")


def check_url(url: str, *, allow_private: bool, require_https: bool = False) -> Endpoint:
    """Parse ``url`` and refuse what an OAuth client must not fetch (SSRF guard).

    Only ``http``/``https``; with ``require_https`` only ``https`` (loopback excepted);
    unless ``allow_private``, no literal private, loopback or link-local address and no
    ``localhost``. Raises :class:`UnsafeUrl`.
    """
    try:
        endpoint = parse_url(url)
    except ValueError as exc:
        raise UnsafeUrl(f"refusing URL {url[:200]!r}: {exc}") from None
    if not allow_private and not is_public_host(endpoint.host):
        address = host_address(endpoint.host)
        named = endpoint.host if address is None else f"{endpoint.host} ({address})"
        raise UnsafeUrl(
            f"refusing URL {url[:200]!r}: {named[:200]} is a private, loopback, link-local "
            "or otherwise non-public address (allow_private_addresses=True permits it)"
        )
    if require_https and endpoint.scheme != "https" and is_public_host(endpoint.host):
        raise UnsafeUrl(f"refusing URL {url[:200]!r}: authorization endpoints must use https")
    return endpoint


class Fetcher:
    """Bounded JSON GETs and form POSTs, sharing one connection pool.

    Cancellation: an exchange in progress is abandoned and its connection closed.
    """

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        max_bytes: int = MAX_DOCUMENT_BYTES,
        ssl_context: ssl.SSLContext | None = None,
        allow_private: bool = True,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self._pool = ConnectionPool(ssl_context=ssl_context, connect_timeout=timeout, max_idle=4)
        #: DPoP proofs for this flow's token requests (set by the OAuth client when its
        #: tokens are to be DPoP-bound; None: plain Bearer requests).
        self.dpop: DpopProofs | None = None

    async def aclose(self) -> None:
        await self._pool.aclose()

    def endpoint(self, url: str) -> Endpoint:
        return check_url(url, allow_private=self.allow_private)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> JsonResponse:
        """One exchange, read whole. Raises :class:`FetchError` / :class:`UnsafeUrl`."""
        endpoint = self.endpoint(url)
        all_headers = {"accept": "application/json", **(headers or {})}
        try:
            with trio.fail_after(self.timeout):
                async with self._pool.request(
                    method, endpoint, all_headers, body, head_timeout=self.timeout
                ) as response:
                    data = await response.read_all(self.max_bytes, self.timeout)
                    return JsonResponse(response.status, dict(response.headers), data)
        except trio.TooSlowError:
            raise FetchError(f"{method} {url} took longer than {self.timeout:g} s") from None
        except HttpClientError as exc:
            raise FetchError(f"{method} {url} failed: {exc.message}") from None

    async def get(self, url: str, headers: Mapping[str, str] | None = None) -> JsonResponse:
        return await self.request("GET", url, headers=headers)

    async def post_form(
        self,
        url: str,
        form: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
    ) -> JsonResponse:
        """POST ``application/x-www-form-urlencoded``."""
        body = urlencode(form).encode("ascii")
        all_headers = {"content-type": "application/x-www-form-urlencoded", **(headers or {})}
        return await self.request("POST", url, headers=all_headers, body=body)

    async def post_json(
        self, url: str, value: Any, headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        body = json.dumps(value).encode("utf-8")
        all_headers = {"content-type": "application/json", **(headers or {})}
        return await self.request("POST", url, headers=all_headers, body=body)
