"""``trimcp run --auth-upstream github|google|oidc:ISSUER`` (``TRIMCP_AUTH_UPSTREAM``):
trimcp's own authorization server for a server that declares no ``auth=``, its client id
and secret at the provider from the environment only; and, end to end, ``trimcp run``
with it in front of oidc-provider (registration off), trimcp's own client logging in."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.auth.scripted_browser import fill_in
from tests.authserver.conftest import PROXY_CLIENT_ID, PROXY_CLIENT_SECRET, ProxyProvider
from tests.cli.support import cli, read_line, reap, spawn, stop
from trimcp import Server, connect_http
from trimcp.auth import FollowRedirects, OAuthClient
from trimcp.authserver import AuthorizationServer
from trimcp.server.serving import (
    AUTHSERVER_SECRET,
    UPSTREAM_CLIENT_ID,
    UPSTREAM_CLIENT_SECRET,
    ServeSettings,
    SettingsError,
    protection,
)

APP = str(Path(__file__).with_name("whoami_app.py"))
BOUND = 120.0


def settings(**values: Any) -> ServeSettings:
    return ServeSettings(**{"transport": "http", "port": 8000, **values})


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("github", "github"),
        ("google", "google"),
        (
            "oidc:https://login.example.com/realms/staff/",
            "oidc:https://login.example.com/realms/staff",
        ),
    ],
)
def test_auth_upstream_names_a_provider(given: str, kept: str) -> None:
    assert settings(auth_upstream=given).auth_upstream == kept
    env = ServeSettings.from_env({"TRIMCP_AUTH_UPSTREAM": given})
    assert env.auth_upstream == kept


@pytest.mark.parametrize("given", ["gitlab", "oidc:", "oidc:login.example.com", "https://x"])
def test_an_unknown_provider_is_refused(given: str) -> None:
    with pytest.raises(SettingsError, match="use github, google or oidc:ISSUER_URL"):
        settings(auth_upstream=given)


def test_the_upstream_comes_from_the_flag_and_its_client_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(UPSTREAM_CLIENT_ID, "Iv1.abc")
    monkeypatch.setenv(UPSTREAM_CLIENT_SECRET, "shh")
    monkeypatch.setenv(AUTHSERVER_SECRET, "a deployment secret of 32 bytes.")
    auth = protection(Server("open"), settings(auth_upstream="github", auth_scopes="mcp"))
    assert isinstance(auth, AuthorizationServer)
    assert auth.resource == "http://127.0.0.1:8000/mcp"  # the URL served, on loopback
    assert auth.authorization_server_metadata()["issuer"] == "http://127.0.0.1:8000"
    assert auth.upstream_name == "GitHub"
    assert auth.required_scopes == {"mcp"}
    assert auth.secret_configured  # TRIMCP_AUTHSERVER_SECRET
    assert auth.dpop is None
    oidc = protection(
        Server("open"),
        settings(auth_upstream="oidc:https://login.example.com", auth_dpop="require"),
    )
    assert oidc.upstream_name == "login.example.com"
    assert oidc.require_dpop


def test_a_missing_client_or_a_second_issuer_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UPSTREAM_CLIENT_ID, raising=False)
    monkeypatch.delenv(UPSTREAM_CLIENT_SECRET, raising=False)
    with pytest.raises(SettingsError, match=f"needs {UPSTREAM_CLIENT_ID}") as missing:
        protection(Server("open"), settings(auth_upstream="google"))
    assert missing.value.hint is not None
    assert "http://127.0.0.1:8000/oauth/callback" in missing.value.hint
    monkeypatch.setenv(UPSTREAM_CLIENT_ID, "client")
    with pytest.raises(SettingsError, match=f"github needs {UPSTREAM_CLIENT_SECRET}"):
        protection(Server("open"), settings(auth_upstream="github"))
    # A public client at an OpenID provider (PKCE, no secret) is one.
    public = protection(Server("open"), settings(auth_upstream="oidc:https://id.example"))
    assert isinstance(public, AuthorizationServer)
    with pytest.raises(SettingsError, match="--auth-issuer and --auth-upstream both say"):
        protection(
            Server("open"),
            settings(auth_upstream="github", auth_issuer="https://id.example"),
        )
    with pytest.raises(SettingsError, match="--auth-upstream needs --auth-resource"):
        protection(Server("open"), settings(auth_upstream="github", port=0))


def test_trimcp_run_names_the_missing_variable() -> None:
    done = cli(
        "run",
        APP,
        "--transport",
        "http",
        "--port",
        "8123",
        "--auth-upstream",
        "github",
        env={UPSTREAM_CLIENT_ID: "", UPSTREAM_CLIENT_SECRET: ""},
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"trimcp: --auth-upstream github needs {UPSTREAM_CLIENT_ID} (and "
        f"{UPSTREAM_CLIENT_SECRET}) in the environment: this server's client id at the provider"
    )
    assert "callback http://127.0.0.1:8123/oauth/callback" in lines[1]


async def test_trimcp_run_auth_upstream_in_front_of_an_openid_provider(
    proxy_provider: ProxyProvider,
) -> None:
    port = proxy_provider.ports[0]
    issuer = proxy_provider.issuer
    server = spawn(
        "run", APP, "--transport", "http", "--port", str(port),
        "--auth-upstream", f"oidc:{issuer}", "--auth-scope", "mcp",
        env={UPSTREAM_CLIENT_ID: PROXY_CLIENT_ID, UPSTREAM_CLIENT_SECRET: PROXY_CLIENT_SECRET},
    )  # fmt: skip
    try:
        assert server.stderr is not None
        started = await trio.to_thread.run_sync(read_line, server.stderr)
        assert "serving 'whoami'" in started, started
        said = await trio.to_thread.run_sync(read_line, server.stderr)
        origin = f"http://127.0.0.1:{port}"
        assert f"from {origin} (this server; users log in at 127.0.0.1) for {origin}/mcp" in said
        # trimcp's own client: registers itself, the scripted user allows it on the consent
        # page and signs in at the provider, and whoami answers that login.
        client = OAuthClient(
            interaction=FollowRedirects("http://127.0.0.1/callback", login=fill_in),
            allow_private_addresses=True,
        )
        with trio.fail_after(BOUND):
            async with connect_http(f"{origin}/mcp", auth=client) as session:
                result = await session.call_tool("whoami", {})
        who = json.loads(getattr(result.content[0], "text", ""))
        assert who["sub"] == "alice"  # the scripted user's default login
        assert who["idp"] == issuer
        assert who["client"].startswith("c-")  # registered with trimcp, not the provider
        assert who["scopes"] == ["mcp"]
        server.send_signal(signal.SIGTERM)
        assert await trio.to_thread.run_sync(stop, server) == 0
    finally:
        reap(server)
