"""The official SDK client's OAuth support (mcp from PyPI) gets access to a trimcp server
protected by oidc-provider: discovery from trimcp's metadata and challenge, dynamic
registration, PKCE, resource indicator, and trimcp verifying the resulting JWT."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_server import whoami_server
from trimcp.auth import JwtVerifier, ProtectedResource
from trimcp.transports.http_server import HttpServerConfig, serve_http

PEER = Path(__file__).resolve().parent / "sdk_oauth_peer.py"


async def test_sdk_client_logs_in_to_trimcp(oidc_provider: OidcProvider, free_port: int) -> None:
    resource = f"http://127.0.0.1:{free_port}/mcp"
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=JwtVerifier(issuer=oidc_provider.issuer),
        required_scopes=["mcp"],
    )
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=free_port,
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            done = await trio.run_process(
                [sys.executable, str(PEER), resource],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            nursery.cancel_scope.cancel()
    report = json.loads(done.stdout or b"{}")
    assert done.returncode == 0, (report.get("error"), done.stderr[-3000:])
    assert report["whoami"]["sub"] == "dave"
    assert "mcp" in report["whoami"]["scopes"]
