"""The user's step of the authorization-code flow: visit a URL, come back with a code.

An :class:`Interaction` has a ``redirect_uri`` and ``authorize(url)``, which returns the
URL the authorization server redirected back to (with ``code`` and ``state``).

- :class:`LoopbackBrowser`: listens on 127.0.0.1 (a port of its own), opens the URL in
  the user's browser (or prints it), and catches the redirect (RFC 8252 7.3).
- :class:`FollowRedirects`: no user at all: GETs the URL and follows the server's
  redirects until one points at ``redirect_uri`` (for servers that grant without a login
  page, tests and the conformance suite).

Only ``http``/``https`` URLs are ever opened, and never through a shell.
"""

from __future__ import annotations

import html
import logging
import socket
import sys
import webbrowser
from collections.abc import Callable
from typing import Protocol
from urllib.parse import parse_qs, urljoin, urlsplit

import h11
import trio

from trimcp.auth.errors import AuthorizationFailed
from trimcp.auth.fetch import Fetcher, FetchError

logger = logging.getLogger("trimcp.auth")


class Interaction(Protocol):
    """How the user authorizes the client."""

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the user back (registered with it)."""
        ...

    async def authorize(self, url: str) -> str:
        """Have the user visit ``url``; return the full URL they were redirected to.

        Raises :class:`AuthorizationFailed`. Cancellation: stops waiting.
        """
        ...


def _check_http(url: str) -> None:
    if urlsplit(url).scheme not in ("http", "https"):
        raise AuthorizationFailed(f"refusing to open {url[:200]!r}: not an http(s) URL")


def same_endpoint(url: str, expected: str) -> bool:
    """Whether ``url`` is ``expected`` (scheme, host, port and path), whatever its query."""
    a, b = urlsplit(url), urlsplit(expected)
    return (a.scheme.lower(), (a.hostname or "").lower(), a.port, a.path) == (
        b.scheme.lower(),
        (b.hostname or "").lower(),
        b.port,
        b.path,
    )


class FollowRedirects:
    """Follows the authorization server's redirects (keeping its cookies) until one goes
    to ``redirect_uri``; at most ``max_hops``, each bounded by ``timeout``.

    ``login``: called with a page that is not a redirect (e.g. a login form), returns the
    next URL and form to POST (or None to give up) - a scripted user.
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1/callback",
        *,
        timeout: float = 30.0,
        max_hops: int = 10,
        login: Callable[[str, bytes], tuple[str, dict[str, str]] | None] | None = None,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.timeout = timeout
        self.max_hops = max_hops
        self.login = login

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> str:
        _check_http(url)
        fetcher = Fetcher(timeout=self.timeout)
        cookies: dict[str, str] = {}
        method, body = "GET", None
        try:
            for _ in range(self.max_hops):
                headers = {"accept": "text/html"}
                if cookies:
                    headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
                try:
                    if body is None:
                        response = await fetcher.request(method, url, headers=headers)
                    else:
                        response = await fetcher.post_form(url, body, headers)
                except FetchError as exc:
                    raise AuthorizationFailed(f"the authorization page failed: {exc}") from None
                for name, value in response.headers.items():
                    if name == "set-cookie":
                        for item in value.split(", "):
                            pair = item.split(";", 1)[0]
                            if "=" in pair:
                                key, _, text = pair.partition("=")
                                cookies[key.strip()] = text.strip()
                location = response.headers.get("location")
                if 300 <= response.status < 400 and location:
                    target = urljoin(url, location)
                    if same_endpoint(target, self._redirect_uri):
                        return target
                    _check_http(target)
                    url, method, body = target, "GET", None
                    continue
                step = self.login(url, response.body) if self.login is not None else None
                if step is None:
                    raise AuthorizationFailed(
                        f"the authorization server answered HTTP {response.status} at "
                        f"{url[:200]} instead of redirecting back"
                    )
                url, body = urljoin(url, step[0]), step[1]
                method = "POST"
            raise AuthorizationFailed(f"more than {self.max_hops} redirects while authorizing")
        finally:
            await fetcher.aclose()


class LoopbackBrowser:
    """Opens the authorization URL in the user's browser (``open_browser``) or prints it
    (to ``stderr``), and catches the redirect on ``http://127.0.0.1:<port>/callback``.

    The port is bound at construction (``port=0``: any free one), so ``redirect_uri`` is
    known before registration. ``timeout`` bounds the wait for the user.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        open_browser: bool = True,
        timeout: float = 300.0,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self._socket.listen(8)
        self._socket.setblocking(False)
        self.port: int = self._socket.getsockname()[1]
        self.path = path
        self.open_browser = open_browser
        self.timeout = timeout
        self._announce = announce

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def close(self) -> None:
        self._socket.close()

    def announce(self, url: str) -> None:
        if self._announce is not None:
            self._announce(url)
            return
        print(f"Open this URL to authorize:\n  {url}", file=sys.stderr, flush=True)

    async def authorize(self, url: str) -> str:
        _check_http(url)
        self.announce(url)
        if self.open_browser:
            await trio.to_thread.run_sync(webbrowser.open, url, abandon_on_cancel=True)
        listener = trio.socket.from_stdlib_socket(self._socket.dup())
        try:
            with trio.fail_after(self.timeout):
                while True:
                    conn, _ = await listener.accept()
                    stream = trio.SocketStream(conn)
                    try:
                        target = await _read_callback(stream, self.path)
                    finally:
                        await stream.aclose()
                    if target is not None:
                        return f"{self.redirect_uri.rsplit(self.path, 1)[0]}{target}"
        except trio.TooSlowError:
            raise AuthorizationFailed(
                f"no authorization came back within {self.timeout:g} s"
            ) from None
        finally:
            listener.close()


_PAGE = (
    b"<!doctype html><title>Authorized</title><p>You can close this window and "
    b"return to the application.</p>"
)


def _page(target: str) -> bytes:
    """What the browser shows for the redirect back: an error the authorization server
    sent is shown as a refusal, never as "Authorized"."""
    query = parse_qs(urlsplit(target).query)
    errors = query.get("error")
    if not errors:
        return _PAGE
    error = errors[0]
    description = (query.get("error_description") or [""])[0]
    reason = html.escape(f"{error}: {description}" if description else error)[:500]
    return (
        "<!doctype html><title>Not authorized</title><p>The authorization server refused: "
        f"{reason}</p><p>Return to the application: it says what to do next.</p>"
    ).encode()


async def _read_callback(stream: trio.SocketStream, path: str) -> str | None:
    """Read one request; answer it; the request target if it is the callback."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=16384)
    with trio.move_on_after(10):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(16384)
                conn.receive_data(data)
                if not data:
                    return None
                continue
            if isinstance(event, h11.Request):
                target = event.target.decode("latin-1")
                ok = urlsplit(target).path == path
                body = _page(target) if ok else b"not found"
                response = h11.Response(
                    status_code=200 if ok else 404,
                    headers=[
                        ("content-type", "text/html; charset=utf-8"),
                        ("content-length", str(len(body))),
                        ("connection", "close"),
                    ],
                )
                await stream.send_all(
                    conn.send(response)
                    + conn.send(h11.Data(data=body))
                    + conn.send(h11.EndOfMessage())
                )
                return target if ok else None
            return None
    return None
