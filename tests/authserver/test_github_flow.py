"""trimcp's authorization server in front of a GitHub-shaped provider, driven by a client
written from the specs (tests/authserver/spec_client.py): metadata, registration, consent,
upstream login, PKCE, tokens of its own, refresh with rotation, revocation. Real sockets
on loopback; every wait is bounded."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jwt
import pytest
import trio

from tests.authserver.fake_github import FakeGitHub, running_fake_github
from tests.authserver.harness import call_whoami, github_upstream, proxied_server
from tests.authserver.spec_client import (
    Browser,
    Page,
    SpecClient,
    form_of,
    is_consent,
    log_in,
    query_of,
    s256,
)
from trimcp.authserver import AuthorizationServer, MemoryAuthStore
from trimcp.errors import McpError

BOUND = 60.0
REDIRECT = "http://127.0.0.1:43210/callback"


@asynccontextmanager
async def setup(
    **options: Any,
) -> AsyncIterator[tuple[FakeGitHub, str, AuthorizationServer, SpecClient]]:
    with trio.fail_after(BOUND):
        async with (
            running_fake_github() as github,
            proxied_server(github_upstream(github), **options) as (url, auth),
        ):
            client = SpecClient(url)
            try:
                await client.discover()
                yield github, url, auth, client
            finally:
                await client.aclose()


async def test_metadata_names_this_server_as_its_authorization_server() -> None:
    async with setup() as (_, url, _auth, client):
        issuer = url.removesuffix("/mcp")
        assert client.resource_metadata["resource"] == url
        assert client.resource_metadata["authorization_servers"] == [issuer]
        meta = client.metadata
        assert meta["issuer"] == issuer
        for name, path in [
            ("authorization_endpoint", "/oauth/authorize"),
            ("token_endpoint", "/oauth/token"),
            ("registration_endpoint", "/oauth/register"),
            ("revocation_endpoint", "/oauth/revoke"),
            ("jwks_uri", "/oauth/jwks"),
        ]:
            assert meta[name] == issuer + path
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["response_types_supported"] == ["code"]
        assert meta["client_id_metadata_document_supported"] is True
        assert meta["authorization_response_iss_parameter_supported"] is True
        keys = (await client.fetcher.get(meta["jwks_uri"])).json_object("jwks")["keys"]
        assert keys
        assert all("d" not in key for key in keys)


async def test_two_users_two_registrations_consent_first_then_whoami() -> None:
    async with setup() as (github, url, _auth, client):
        seen = {}
        for user in ("alice", "bob"):
            browser = Browser()
            try:
                client_id = (await client.register([REDIRECT]))["client_id"]
                verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(8)
                start = client.authorization_url(client_id, REDIRECT, s256(verifier), state)
                before = list(github.requests)
                page = await browser.go(start, REDIRECT)
                # The consent page, before anything reached the upstream.
                assert is_consent(page)
                assert github.requests == before
                assert b"Spec client" in page.body
                assert client_id.encode() in page.body
                assert b"127.0.0.1:43210" in page.body
                assert b"mcp" in page.body
                assert page.headers["x-frame-options"] == "DENY"
                assert "default-src 'none'" in page.headers["content-security-policy"]
                back = await log_in(browser, start, REDIRECT, user)
                assert back.location is not None
                answer = query_of(back.location)
                assert answer["state"] == state
                tokens = await client.token(
                    {
                        "grant_type": "authorization_code",
                        "code": answer["code"],
                        "redirect_uri": REDIRECT,
                        "code_verifier": verifier,
                        "client_id": client_id,
                    }
                )
            finally:
                await browser.aclose()
            assert tokens.status == 200, tokens.body
            values = tokens.json_object("tokens")
            claims = jwt.decode(values["access_token"], options={"verify_signature": False})
            assert claims["iss"] == client.metadata["issuer"]
            assert claims["aud"] == url
            seen[user] = await call_whoami(url, f"Bearer {values['access_token']}")
            assert seen[user]["client"] == client_id
            # Nothing the upstream issued is in what the client got.
            for upstream_token in github.issued:
                assert upstream_token not in tokens.body.decode()
        assert seen["alice"]["login"] == "alice"
        assert seen["bob"]["login"] == "bob"
        assert seen["alice"]["sub"] == str(github.user_id("alice"))
        assert seen["alice"]["sub"] != seen["bob"]["sub"]
        assert seen["alice"]["idp"] == github.base
        assert seen["alice"]["scopes"] == ["mcp"]


async def test_an_upstream_token_is_refused_by_the_mcp_server() -> None:
    async with setup() as (github, url, _auth, client):
        browser = Browser()
        try:
            await client.login(browser, "alice")
        finally:
            await browser.aclose()
        assert github.issued
        with pytest.raises(McpError, match="the token is not a signed JWT"):
            await call_whoami(url, f"Bearer {github.issued[-1]}")


async def test_a_redirect_uri_not_registered_is_never_redirected_to() -> None:
    store = MemoryAuthStore()
    async with setup(store=store) as (github, _url, _auth, client):
        client_id = (await client.register([REDIRECT, "https://app.example/cb"]))["client_id"]
        challenge = s256(secrets.token_urlsafe(48))
        for asked in [
            "https://evil.example/cb",
            "http://127.0.0.1:43210/callback/../steal",
            "http://127.0.0.1:43210/other",
            "http://localhost:43210/callback",  # another host than registered
            "https://app.example/cb?x=1",
            "https://app.example/cb#frag",
            "https://app.example.evil/cb",
            "http://127.0.0.1:43210@evil.example/callback",
        ]:
            before = len(store)
            browser = Browser()
            try:
                url = client.authorization_url(client_id, asked, challenge, "s")
                page = await browser.go(url, "never")
            finally:
                await browser.aclose()
            assert page.status == 400, asked
            assert page.location is None
            assert "location" not in page.headers
            assert b"not one this client registered" in page.body
            assert len(store) == before  # nothing stored for a refused request
        # Loopback: the same URI on another port is the registered one (RFC 8252 §7.3).
        browser = Browser()
        try:
            url = client.authorization_url(
                client_id, "http://127.0.0.1:50001/callback", challenge, "s"
            )
            page = await browser.go(url, "http://127.0.0.1:50001/callback")
        finally:
            await browser.aclose()
        assert is_consent(page)
        assert not any("authorize" in r for r in github.requests)


async def test_errors_after_the_redirect_uri_is_checked_go_back_to_it() -> None:
    async with setup() as (_github, _url, _auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        browser = Browser()
        try:
            base = client.authorization_url(client_id, REDIRECT, "x" * 43, "st")
            no_pkce = base.replace("code_challenge_method=S256", "code_challenge_method=plain")
            page = await browser.go(no_pkce, REDIRECT)
            assert page.location is not None
            answer = query_of(page.location)
            assert answer["error"] == "invalid_request"
            assert answer["state"] == "st"
            assert answer["iss"] == client.metadata["issuer"]
            page = await browser.go(base + "&scope=admin", REDIRECT)
            assert page.location is not None
            assert query_of(page.location)["error"] == "invalid_scope"
            other = base.replace(
                "resource=http", "resource=https%3A%2F%2Fother.example%2Fmcp&x=http"
            )
            page = await browser.go(other, REDIRECT)
            assert page.location is not None
            assert query_of(page.location)["error"] == "invalid_target"
        finally:
            await browser.aclose()


async def _code(client: SpecClient, browser: Browser, verifier: str) -> tuple[str, str]:
    client_id = (await client.register([REDIRECT]))["client_id"]
    url = client.authorization_url(client_id, REDIRECT, s256(verifier), "s")
    page = await log_in(browser, url, REDIRECT, "alice")
    assert page.location is not None
    return client_id, query_of(page.location)["code"]


async def test_a_wrong_pkce_verifier_gets_no_token() -> None:
    async with setup() as (_github, _url, _auth, client):
        browser = Browser()
        try:
            verifier = secrets.token_urlsafe(48)
            client_id, code = await _code(client, browser, verifier)
        finally:
            await browser.aclose()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "redirect_uri": REDIRECT,
        }
        wrong = await client.token({**form, "code_verifier": secrets.token_urlsafe(48)})
        assert wrong.status == 400
        assert wrong.json()["error"] == "invalid_grant"
        assert "access_token" not in wrong.json()
        # The code was used up by that attempt: the right verifier now gets nothing either.
        late = await client.token({**form, "code_verifier": verifier})
        assert late.json()["error"] == "invalid_grant"
        missing = await client.token(form)
        assert missing.json()["error"] == "invalid_grant"


async def test_a_code_is_for_its_client_and_redirect_uri_and_used_once() -> None:
    async with setup(revocation_lag=0.0) as (_github, url, _auth, client):
        browser = Browser()
        try:
            verifier = secrets.token_urlsafe(48)
            client_id, code = await _code(client, browser, verifier)
            other_id, other_code = await _code(client, browser, verifier)
        finally:
            await browser.aclose()
        form = {"grant_type": "authorization_code", "code_verifier": verifier}
        stolen = await client.token(
            {**form, "code": code, "client_id": other_id, "redirect_uri": REDIRECT}
        )
        assert stolen.json()["error"] == "invalid_grant"
        redirect = await client.token(
            {
                **form,
                "code": other_code,
                "client_id": other_id,
                "redirect_uri": "http://127.0.0.1:43210/elsewhere",
            }
        )
        assert redirect.json()["error"] == "invalid_grant"

        browser = Browser()
        try:
            client_id, code = await _code(client, browser, verifier)
        finally:
            await browser.aclose()
        good = {**form, "code": code, "client_id": client_id, "redirect_uri": REDIRECT}
        first = await client.token(good)
        assert first.status == 200
        token = first.json()["access_token"]
        assert (await call_whoami(url, f"Bearer {token}"))["login"] == "alice"
        again = await client.token(good)
        assert again.json()["error"] == "invalid_grant"
        # A code used twice revokes what it gave (RFC 6749 §4.1.2).
        with pytest.raises(McpError, match="revoked"):
            await call_whoami(url, f"Bearer {token}")


async def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_login() -> None:
    async with setup(revocation_lag=0.0) as (_github, url, _auth, client):
        browser = Browser()
        try:
            client_id, first = await client.login(browser, "alice")
        finally:
            await browser.aclose()
        refresh = {"grant_type": "refresh_token", "client_id": client_id}
        second = await client.token({**refresh, "refresh_token": first["refresh_token"]})
        assert second.status == 200, second.body
        rotated = second.json_object("tokens")
        assert rotated["refresh_token"] != first["refresh_token"]
        assert (await call_whoami(url, f"Bearer {rotated['access_token']}"))["login"] == "alice"
        # A narrower scope is fine; a wider one is not.
        wider = await client.token(
            {**refresh, "refresh_token": rotated["refresh_token"], "scope": "mcp admin"}
        )
        assert wider.json()["error"] == "invalid_scope"
        # The first refresh token again: a reuse. The whole login ends.
        reused = await client.token({**refresh, "refresh_token": first["refresh_token"]})
        assert reused.json()["error"] == "invalid_grant"
        assert "already used" in reused.json()["error_description"]
        after = await client.token({**refresh, "refresh_token": rotated["refresh_token"]})
        assert after.json()["error"] == "invalid_grant"
        with pytest.raises(McpError, match="revoked"):
            await call_whoami(url, f"Bearer {rotated['access_token']}")


async def test_revocation_ends_the_login() -> None:
    async with setup(revocation_lag=0.0) as (_github, url, _auth, client):
        browser = Browser()
        try:
            client_id, tokens = await client.login(browser, "alice")
        finally:
            await browser.aclose()
        assert (await call_whoami(url, f"Bearer {tokens['access_token']}"))["login"] == "alice"
        revoke = client.metadata["revocation_endpoint"]
        answer = await client.fetcher.post_form(
            revoke, {"token": tokens["access_token"], "client_id": client_id}
        )
        assert answer.status == 200
        with pytest.raises(McpError, match="revoked"):
            await call_whoami(url, f"Bearer {tokens['access_token']}")
        refreshed = await client.token(
            {
                "grant_type": "refresh_token",
                "client_id": client_id,
                "refresh_token": tokens["refresh_token"],
            }
        )
        assert refreshed.json()["error"] == "invalid_grant"


async def test_consent_is_remembered_per_client_in_this_browser() -> None:
    async with setup() as (_github, _url, _auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        first, other = Browser(), Browser()
        try:
            url = client.authorization_url(client_id, REDIRECT, s256("v" * 43), "s")
            assert (await log_in(first, url, REDIRECT, "alice")).location is not None
            again = await first.go(url, REDIRECT)
            assert not is_consent(again)  # straight to the upstream's login form
            assert b'name="login"' in again.body
            assert is_consent(await other.go(url, REDIRECT))  # another browser is asked
            fresh = (await client.register([REDIRECT]))["client_id"]
            url = client.authorization_url(fresh, REDIRECT, s256("v" * 43), "s")
            assert is_consent(await first.go(url, REDIRECT))  # another client is asked
        finally:
            await first.aclose()
            await other.aclose()


async def test_consent_is_remembered_per_user_across_browsers() -> None:
    async with setup() as (github, _url, _auth, client):
        allowed_at_home = (await client.register([REDIRECT]))["client_id"]
        allowed_at_work = (await client.register([REDIRECT]))["client_id"]
        home, work, fresh = Browser(), Browser(), Browser()

        def start(client_id: str) -> str:
            return client.authorization_url(client_id, REDIRECT, s256("v" * 43), "s")

        async def code_for(page: Page) -> str:
            assert page.location is not None, (page.status, page.body[:300])
            return query_of(page.location)["code"]

        try:
            await code_for(await log_in(home, start(allowed_at_home), REDIRECT, "alice"))
            # At work, a browser that has seen no one yet: asked, then it knows alice.
            asked: list[Page] = []
            page = await log_in(
                work, start(allowed_at_work), REDIRECT, "alice", on_consent=asked.append
            )
            await code_for(page)
            assert len(asked) == 1
            # What alice allowed at home, the work browser does not ask her again.
            page = await work.go(start(allowed_at_home), REDIRECT)
            assert not is_consent(page)
            assert b'name="login"' in page.body  # straight to the upstream's login
            asked.clear()
            page = await log_in(
                work, start(allowed_at_home), REDIRECT, "alice", on_consent=asked.append
            )
            await code_for(page)
            assert not asked
            # A browser that knows no one is asked before the upstream is reached, whoever
            # allowed the client elsewhere (confused deputy).
            before = list(github.requests)
            assert is_consent(await fresh.go(start(allowed_at_home), REDIRECT))
            assert github.requests == before
            # bob at alice's work browser: alice's approval let him reach the upstream, but
            # once he signed in he is asked himself, and a denial issues no code.
            page = await log_in(work, start(allowed_at_home), REDIRECT, "bob")
            assert page.location is None
            assert is_consent(page)
            assert b"Signed in as <strong>bob</strong>" in page.body
            action, fields = form_of(page)
            denied = await work.go(action, REDIRECT, form={**fields, "decision": "deny"})
            assert denied.location is not None
            assert query_of(denied.location)["error"] == "access_denied"
            assert "code" not in query_of(denied.location)
            # Alice again (bob, the browser's last user, allowed nothing: asked first)...
            asked.clear()
            page = await log_in(
                work, start(allowed_at_home), REDIRECT, "alice", on_consent=asked.append
            )
            await code_for(page)
            assert len(asked) == 1
            # ...then bob, who allows it after signing in: his code, his login.
            verifier = secrets.token_urlsafe(48)
            url = client.authorization_url(allowed_at_home, REDIRECT, s256(verifier), "s")
            page = await log_in(work, url, REDIRECT, "bob")
            assert is_consent(page)
            action, fields = form_of(page)
            code = await code_for(
                await work.go(action, REDIRECT, form={**fields, "decision": "approve"})
            )
            tokens = await client.token(
                {
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT,
                    "code_verifier": verifier,
                    "client_id": allowed_at_home,
                }
            )
            assert tokens.status == 200, tokens.body
            claims = jwt.decode(
                tokens.json_object("tokens")["access_token"], options={"verify_signature": False}
            )
            assert claims["login"] == "bob"
            # Now bob has allowed it: not asked again in this browser.
            asked.clear()
            await code_for(await log_in(work, url, REDIRECT, "bob", on_consent=asked.append))
            assert not asked
        finally:
            for browser in (home, work, fresh):
                await browser.aclose()


async def test_consent_is_bound_to_the_browser_it_was_shown_to() -> None:
    async with setup() as (github, _url, _auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        url = client.authorization_url(client_id, REDIRECT, s256("v" * 43), "s")
        victim, attacker = Browser(), Browser()
        try:
            page = await attacker.go(url, REDIRECT)
            from tests.authserver.spec_client import form_of

            action, fields = form_of(page)
            # The attacker's form, posted from the victim's browser (a CSRF): refused.
            await victim.go(url, REDIRECT)  # the victim has a browser cookie of its own
            forged = await victim.go(action, REDIRECT, form={**fields, "decision": "approve"})
            assert forged.status == 403
            assert forged.location is None
            # Posted from another site: refused whatever the cookie.
            page = await victim.go(url, REDIRECT)
            action, fields = form_of(page)
            cross = await victim.go(
                action,
                REDIRECT,
                form={**fields, "decision": "approve"},
                extra={"origin": "https://evil.example"},
            )
            assert cross.status == 403
            assert not any("authorize" in r for r in github.requests)
            # Deny sends the client access_denied.
            page = await victim.go(url, REDIRECT)
            action, fields = form_of(page)
            denied = await victim.go(action, REDIRECT, form={**fields, "decision": "deny"})
            assert denied.location is not None
            assert query_of(denied.location)["error"] == "access_denied"
            assert not any("authorize" in r for r in github.requests)
        finally:
            await victim.aclose()
            await attacker.aclose()


async def test_the_upstream_callback_is_bound_to_the_browser_and_the_issuer() -> None:
    async with setup() as (github, _url, auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        url = client.authorization_url(client_id, REDIRECT, s256("v" * 43), "s")
        victim, attacker = Browser(), Browser()
        try:
            # The attacker logs in upstream and stops at trimcp's callback...
            page = await log_in_until_callback(attacker, url, github)
            callback = page.location
            assert callback is not None
            assert "/oauth/callback" in callback
            # ...and makes the victim's browser finish it (login CSRF): refused.
            forced = await victim.go(callback, REDIRECT)
            assert forced.status == 403
            assert forced.location is None
            # A mix-up: an answer naming another identity provider (RFC 9207).
            page = await log_in_until_callback(attacker, url, github)
            assert page.location is not None
            mixed = await attacker.go(page.location + "&iss=https%3A%2F%2Fevil.example", REDIRECT)
            assert mixed.status == 400
            assert b"another identity provider" in mixed.body
            # An unknown state is refused with a page.
            unknown = await attacker.go(f"{auth.issuer}/oauth/callback?code=x&state=nope", REDIRECT)
            assert unknown.status == 400
            assert unknown.location is None
        finally:
            await victim.aclose()
            await attacker.aclose()


async def log_in_until_callback(browser: Browser, url: str, github: FakeGitHub) -> Page:
    from tests.authserver.spec_client import form_of

    page = await browser.go(url, "http://never")
    if is_consent(page):
        action, fields = form_of(page)
        page = await browser.go(action, "http://never", form={**fields, "decision": "approve"})
    assert b'name="login"' in page.body
    import re

    found = re.search(rb'action="([^"]+)"', page.body)
    assert found is not None
    target = github.base + found.group(1).decode().replace("&amp;", "&")
    return await browser.go(target, "http://127.0.0.1", form={"login": "mallory"})
