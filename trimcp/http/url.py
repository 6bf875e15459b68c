"""Where HTTP requests go: an ``http``/``https`` URL split into what a connection needs.

No I/O here. Userinfo (``user:pass@``) is refused rather than silently dropped or sent:
credentials belong in headers the caller passes explicitly.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import attrs

from trimcp._record import Record

_DEFAULT_PORTS = {"http": 80, "https": 443}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Endpoint(Record):
    """One absolute URL: the origin to connect to and the request target to ask for."""

    url: str
    scheme: str
    host: str
    port: int
    target: str

    @property
    def origin(self) -> tuple[str, str, int]:
        """What must match for two URLs to share connections (and credentials)."""
        return (self.scheme, self.host.lower(), self.port)

    @property
    def host_header(self) -> str:
        """The value of the ``Host`` header: the port only when it is not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == _DEFAULT_PORTS[self.scheme]:
            return host
        return f"{host}:{self.port}"

    def resolve(self, reference: str) -> Endpoint:
        """The endpoint ``reference`` names, relative to this one (RFC 3986 resolution)."""
        return parse_url(urljoin(self.url, reference))


def parse_url(url: str) -> Endpoint:
    """Split an absolute ``http``/``https`` URL. Raises ValueError for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"only http and https URLs are supported, not {url!r}")
    if not parts.hostname:
        raise ValueError(f"URL has no host: {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials in the URL are not supported; pass an Authorization header")
    if any(c in url for c in "\r\n\0 "):
        raise ValueError(f"URL contains whitespace or control characters: {url!r}")
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    return Endpoint(
        url=url,
        scheme=scheme,
        host=parts.hostname,
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        target=target,
    )
