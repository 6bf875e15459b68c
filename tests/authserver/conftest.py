"""The authorization-server tests' upstreams: the authorization tests' oidc-provider
fixture, and ``proxy_provider``, oidc-provider as an identity provider that cannot
register clients (registration off) with trimcp's one client pre-registered, for
trimcp servers on the ports it names (installs it, or skips without npm)."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from tests.auth.conftest import OidcProvider, start_provider
from tests.auth.conftest import oidc_provider as oidc_provider
from tests.authserver.harness import free_port

#: trimcp's registration at ``proxy_provider`` (examples/oidc/provider.mjs).
PROXY_CLIENT_ID = "trimcp-proxy"
PROXY_CLIENT_SECRET = "trimcp-proxy-secret"


@attrs.frozen
class ProxyProvider:
    """``issuer``: the provider; ``ports``: free ports (when it started) whose
    ``http://127.0.0.1:PORT/oauth/callback`` is trimcp's registered callback there."""

    issuer: str
    ports: tuple[int, ...]
    provider: OidcProvider


@pytest.fixture(scope="module")
def proxy_provider() -> Iterator[ProxyProvider]:
    ports = tuple(free_port() for _ in range(4))
    callbacks = " ".join(f"http://127.0.0.1:{port}/oauth/callback" for port in ports)
    running = start_provider(REGISTRATION="off", PROXY_REDIRECT_URI=callbacks)
    provider = next(running)
    try:
        yield ProxyProvider(provider.issuer, ports, provider)
    finally:
        running.close()
