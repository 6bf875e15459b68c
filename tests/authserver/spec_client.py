"""An MCP client's OAuth side written from the specs (MCP authorization 2025-06-18, RFC
9728, 8414, 7591, 7636, 9207), step by step over raw HTTP, and a scripted browser that
keeps its own cookies. The tests drive every step themselves so they can tamper with any
of them.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import attrs

from trimcp.auth.fetch import Fetcher, JsonResponse

TIMEOUT = 20.0


def s256(verifier: str) -> str:
    return (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@attrs.define
class Page:
    """What the browser stopped at: a page (status, body) or a redirect it was told not
    to follow (``location``)."""

    status: int
    url: str
    body: bytes = b""
    location: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)


class OneConnectionEach(Fetcher):
    """A Fetcher whose every request goes over a new connection (``Connection: close``):
    to workers sharing a port, each request may reach another one."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> JsonResponse:
        closing = {**(headers or {}), "connection": "close"}
        return await super().request(method, url, headers=closing, body=body)


class Browser:
    """A user agent: cookies per host, follows redirects until ``stop_at`` (a URL prefix
    the client listens on) or a page. ``seen`` lists every URL visited. ``fetcher``:
    how it sends requests (default: a Fetcher keeping connections)."""

    def __init__(self, fetcher: Fetcher | None = None) -> None:
        self.cookies: dict[str, dict[str, str]] = {}
        self.seen: list[str] = []
        self._fetcher = fetcher if fetcher is not None else Fetcher(timeout=TIMEOUT)

    async def aclose(self) -> None:
        await self._fetcher.aclose()

    def _cookie_header(self, url: str) -> dict[str, str]:
        jar = self.cookies.get(urlsplit(url).netloc, {})
        headers = {"accept": "text/html"}
        if jar:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in jar.items())
        return headers

    def _keep(self, url: str, response: JsonResponse) -> None:
        value = response.headers.get("set-cookie")
        if value:
            name, _, rest = value.split(";", 1)[0].partition("=")
            self.cookies.setdefault(urlsplit(url).netloc, {})[name.strip()] = rest.strip()

    async def request(
        self,
        method: str,
        url: str,
        form: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> JsonResponse:
        self.seen.append(url)
        headers = {**self._cookie_header(url), **(extra or {})}
        if form is None:
            response = await self._fetcher.request(method, url, headers=headers)
        else:
            response = await self._fetcher.post_form(url, form, headers)
        self._keep(url, response)
        return response

    async def go(
        self,
        url: str,
        stop_at: str,
        *,
        form: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> Page:
        method = "POST" if form is not None else "GET"
        for _ in range(10):
            response = await self.request(method, url, form, extra)
            location = response.headers.get("location")
            if 300 <= response.status < 400 and location:
                target = urljoin(url, location)
                if target.startswith(stop_at):
                    return Page(
                        response.status, url, location=target, headers=dict(response.headers)
                    )
                url, method, form, extra = target, "GET", None, None
                continue
            return Page(response.status, url, response.body, headers=dict(response.headers))
        raise AssertionError("too many redirects")


def form_of(page: Page) -> tuple[str, dict[str, str]]:
    """A page's form: its action (absolute) and hidden fields."""
    action = re.search(rb'<form method="post" action="([^"]+)"', page.body)
    assert action is not None, page.body[:500]
    fields = dict(re.findall(rb'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.body))
    target = urljoin(page.url, action.group(1).decode().replace("&amp;", "&"))
    return target, {k.decode(): v.decode() for k, v in fields.items()}


def is_consent(page: Page) -> bool:
    return page.status == 200 and b'name="decision"' in page.body


async def log_in(
    browser: Browser,
    authorize_url: str,
    redirect_uri: str,
    login: str,
    *,
    on_consent: Callable[[Page], None] | None = None,
) -> Page:
    """The user's part: approve the consent page (when shown), sign in upstream as
    ``login``; returns where the browser was sent back (``location``) or stopped."""
    page = await browser.go(authorize_url, redirect_uri)
    if is_consent(page):
        if on_consent is not None:
            on_consent(page)
        action, fields = form_of(page)
        page = await browser.go(action, redirect_uri, form={**fields, "decision": "approve"})
    if page.location is None and b'name="login"' in page.body:
        found = re.search(rb'action="([^"]+)"', page.body)
        assert found is not None
        target = urljoin(page.url, found.group(1).decode().replace("&amp;", "&"))
        page = await browser.go(target, redirect_uri, form={"login": login})
    return page


class SpecClient:
    """The OAuth steps of an MCP client, each one call."""

    def __init__(self, mcp_url: str, fetcher: Fetcher | None = None) -> None:
        self.mcp_url = mcp_url
        self.fetcher = fetcher if fetcher is not None else Fetcher(timeout=TIMEOUT)
        self.metadata: dict[str, Any] = {}
        self.resource_metadata: dict[str, Any] = {}

    async def aclose(self) -> None:
        await self.fetcher.aclose()

    async def discover(self) -> dict[str, Any]:
        """401 -> resource_metadata -> the authorization server's RFC 8414 document."""
        response = await self.fetcher.request(
            "POST",
            self.mcp_url,
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            body=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        )
        assert response.status == 401, response.status
        challenge = response.headers["www-authenticate"]
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert found is not None, challenge
        self.resource_metadata = (await self.fetcher.get(found.group(1))).json_object("PRM")
        issuer = self.resource_metadata["authorization_servers"][0]
        answer = await self.fetcher.get(f"{issuer}/.well-known/oauth-authorization-server")
        assert answer.status == 200
        self.metadata = answer.json_object("AS metadata")
        assert self.metadata["issuer"] == issuer  # RFC 8414 §3.3
        return self.metadata

    async def register(self, redirect_uris: list[str], **extra: Any) -> dict[str, Any]:
        response = await self.fetcher.post_json(
            self.metadata["registration_endpoint"],
            {
                "redirect_uris": redirect_uris,
                "client_name": "Spec client",
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                **extra,
            },
        )
        assert response.status == 201, response.body
        return response.json_object("registration")

    def authorization_url(
        self, client_id: str, redirect_uri: str, challenge: str, state: str, **extra: str
    ) -> str:
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": self.resource_metadata["resource"],
            **extra,
        }
        return f"{self.metadata['authorization_endpoint']}?{urlencode(query)}"

    async def token(
        self, form: dict[str, str], headers: dict[str, str] | None = None
    ) -> JsonResponse:
        return await self.fetcher.post_form(self.metadata["token_endpoint"], form, headers)

    async def login(
        self,
        browser: Browser,
        login: str,
        redirect_uri: str = "http://127.0.0.1:43210/callback",
        client_id: str | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Register (unless ``client_id``), log in as ``login``, redeem the code: the
        client id and the token answer."""
        if client_id is None:
            client_id = (await self.register([redirect_uri]))["client_id"]
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(16)
        url = self.authorization_url(client_id, redirect_uri, s256(verifier), state)
        page = await log_in(browser, url, redirect_uri, login)
        assert page.location is not None, (page.status, page.body[:300])
        back = query_of(page.location)
        assert back["state"] == state
        assert back["iss"] == self.metadata["issuer"]  # RFC 9207
        response = await self.token(
            {
                "grant_type": "authorization_code",
                "code": back["code"],
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "client_id": client_id,
                "resource": self.resource_metadata["resource"],
            }
        )
        assert response.status == 200, response.body
        return client_id, response.json_object("tokens")
