"""A GitHub-shaped identity provider on loopback, for the authorization-server tests.

What it shares with GitHub's OAuth Apps: no discovery document; ``/login/oauth/authorize``
(a login form here: any name signs in), ``/login/oauth/access_token`` answering JSON only
when asked with ``Accept: application/json`` (form-encoded otherwise) and reporting errors
in a 200 answer (``bad_verification_code``...), opaque ``gho_`` tokens, and ``/user``
answering ``{"id", "login", "name"}`` for ``Authorization: Bearer <token>`` only with a
``User-Agent``. It checks PKCE (S256) when the authorization request carried a challenge,
the client secret and the redirect URI. ``issued`` lists every access token it gave, so a
test can try one against the MCP server. With ``expires_in`` set (as for a GitHub App's
expiring user tokens), tokens come with a lifetime and a ``ghr_`` refresh token, which
``grant_type=refresh_token`` rotates (a used one is ``bad_refresh_token``); ``refreshes``
counts the refreshes it granted.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from html import escape
from typing import Any
from urllib.parse import parse_qsl, urlencode

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

CLIENT_ID = "Iv1.fake-github-client"
CLIENT_SECRET = "fake-github-secret"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class FakeGitHub:
    def __init__(self) -> None:
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.issued: list[str] = []
        self.users: dict[str, int] = {}
        self.requests: list[str] = []
        self.base = ""
        #: Seconds each new access token lives (None: no lifetime, no refresh token).
        self.expires_in: int | None = None
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> login
        self.refreshes = 0

    def user_id(self, login: str) -> int:
        return self.users.setdefault(login, 1000 + len(self.users))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        self.requests.append(f"{scope['method']} {path}")
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        if path == "/login/oauth/authorize" and scope["method"] == "GET":
            form = (
                f'<form method="post" action="/session?{escape(urlencode(query))}">'
                '<label>Username <input name="login"></label><button>Sign in</button></form>'
            )
            await _respond(send, 200, form.encode(), "text/html")
        elif path == "/session" and scope["method"] == "POST":
            login = dict(parse_qsl(body.decode())).get("login", "octocat")
            code = secrets.token_hex(10)
            self.codes[code] = {**query, "login": login}
            target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
            await _respond(send, 302, b"", "text/plain", (("location", target),))
        elif path == "/login/oauth/access_token" and scope["method"] == "POST":
            await self._token(send, headers, dict(parse_qsl(body.decode())))
        elif path == "/client.json" and scope["method"] == "GET":
            # A client metadata document (CIMD), served here for convenience.
            document = {
                "client_id": f"{self.base}/client.json",
                "client_name": "Document client",
                "redirect_uris": ["http://127.0.0.1:43210/callback"],
                "token_endpoint_auth_method": "none",
            }
            await _respond(send, 200, json.dumps(document).encode(), "application/json")
        elif path == "/user" and scope["method"] == "GET":
            auth = headers.get("authorization", "")
            token = auth.partition(" ")[2]
            if "user-agent" not in headers:
                await _respond(
                    send, 403, b"Request forbidden by administrative rules.", "text/plain"
                )
            elif token not in self.tokens:
                await _respond(send, 401, b'{"message": "Bad credentials"}', "application/json")
            else:
                login = self.tokens[token]["login"]
                user = {"id": self.user_id(login), "login": login, "name": login.title()}
                await _respond(send, 200, json.dumps(user).encode(), "application/json")
        else:
            await _respond(send, 404, b"Not Found", "text/plain")

    async def _token(self, send: Send, headers: dict[str, str], form: dict[str, str]) -> None:
        wants_json = "application/json" in headers.get("accept", "")

        async def answer(values: dict[str, Any]) -> None:
            if wants_json:
                await _respond(send, 200, json.dumps(values).encode(), "application/json")
            else:
                await _respond(
                    send, 200, urlencode(values).encode(), "application/x-www-form-urlencoded"
                )

        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            await answer({"error": "incorrect_client_credentials"})
            return
        if form.get("grant_type") == "refresh_token":
            login = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if login is None:
                await answer({"error": "bad_refresh_token"})
                return
            self.refreshes += 1
            await answer(self._new_token(login))
            return
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
            await answer({"error": "bad_verification_code"})
        elif (
            "code_challenge" in grant
            and _s256(form.get("code_verifier", "")) != grant["code_challenge"]
        ):
            await answer({"error": "bad_verification_code", "error_description": "PKCE"})
        else:
            await answer(self._new_token(grant["login"]))

    def _new_token(self, login: str) -> dict[str, Any]:
        token = "gho_" + secrets.token_hex(18)
        self.tokens[token] = {"login": login}
        self.issued.append(token)
        values: dict[str, Any] = {"access_token": token, "token_type": "bearer", "scope": ""}
        if self.expires_in is not None:
            refresh = "ghr_" + secrets.token_hex(18)
            self.refresh_tokens[refresh] = login
            values.update(expires_in=self.expires_in, refresh_token=refresh)
        return values


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def _respond(
    send: Send, status: int, body: bytes, content_type: str, extra: tuple[tuple[str, str], ...] = ()
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.encode(), v.encode()) for k, v in extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def running_fake_github() -> AsyncIterator[FakeGitHub]:
    """The fake provider on a free loopback port (``.base`` is its URL)."""
    fake = FakeGitHub()
    app: Any = fake  # plain ASGI dicts, as hypercorn takes them
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(functools.partial(serve, app, config, mode="asgi"))
        fake.base = binds[0]
        yield fake
        nursery.cancel_scope.cancel()
