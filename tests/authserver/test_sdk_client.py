"""The official Python SDK's OAuth client (mcp 2.x: ``OAuthClientProvider``) logs in
through trimcp's own authorization server in front of oidc-provider with registration
off: discovery from trimcp's challenge and metadata, dynamic registration with trimcp,
PKCE and the resource indicator, trimcp's consent page (allowed by the scripted user),
the upstream login, RFC 9207 ``iss``, trimcp's tokens, then a tool call."""

from __future__ import annotations

import json
import sys

import trio

from tests.auth.test_sdk_oauth_client import PEER
from tests.authserver.conftest import PROXY_CLIENT_ID, PROXY_CLIENT_SECRET, ProxyProvider
from tests.authserver.harness import whoami_server
from trimcp.authserver import AuthorizationServer, oidc
from trimcp.transports.http_server import serve_http

BOUND = 120.0


async def test_the_sdk_client_logs_in_through_trimcp_in_front_of_a_provider(
    proxy_provider: ProxyProvider,
) -> None:
    port = proxy_provider.ports[1]
    url = f"http://127.0.0.1:{port}/mcp"
    auth = AuthorizationServer(
        resource=url,
        upstream=oidc(proxy_provider.issuer, PROXY_CLIENT_ID, PROXY_CLIENT_SECRET),
        required_scopes=["mcp"],
    )
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(auth), port=port, task_status=task_status
                )
            )
            done = await trio.run_process(
                [sys.executable, str(PEER), url],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            nursery.cancel_scope.cancel()
    report = json.loads(done.stdout or b"{}")
    assert done.returncode == 0, (report.get("error"), done.stderr[-3000:])
    who = report["whoami"]
    assert who["sub"] == "dave"  # the upstream's user
    assert who["idp"] == proxy_provider.issuer
    assert who["client"].startswith("c-")  # registered with trimcp, dynamically
    assert who["scopes"] == ["mcp"]
    assert report["consented"] == [f"http://127.0.0.1:{port}/oauth/consent"]
