"""``trimcp call --url ... --auth`` does the whole login in a terminal: against a trimcp
server protected by oidc-provider, the CLI prints the login URL, a scripted user logs in
there, the browser's redirect reaches the CLI's loopback listener, and the call runs.
The tokens are then kept: a second call needs no login."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_client import ScriptedUser
from tests.auth.test_oidc_server import whoami_server
from trimcp.auth import FollowRedirects, IntrospectionVerifier, ProtectedResource
from trimcp.auth.fetch import Fetcher
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 60.0
PREFIX = "Log in to continue: "


def cli(url: str, cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trimcp",
            "call",
            "whoami",
            "--url",
            url,
            "--auth",
            "--no-browser",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )


async def test_cli_logs_in(oidc_provider: OidcProvider, free_port: int, tmp_path: Path) -> None:
    resource = f"http://127.0.0.1:{free_port}/opaque"
    verifier = IntrospectionVerifier(
        f"{oidc_provider.issuer}/token/introspection", client_id="rs", client_secret="rs-secret"
    )
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=verifier,
        required_scopes=["mcp"],
    )
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=free_port,
                    path="/opaque",
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            process = cli(resource, tmp_path)
            try:
                assert process.stderr is not None
                line = await trio.to_thread.run_sync(process.stderr.readline)
                assert line.startswith(PREFIX), line
                login_url = line[len(PREFIX) :].strip()
                # The "browser": log in, then follow the redirect to the CLI's listener.
                redirect = login_url.split("redirect_uri=", 1)[1].split("&", 1)[0]
                from urllib.parse import unquote

                browser = FollowRedirects(unquote(redirect), login=ScriptedUser("carol"))
                callback = await browser.authorize(login_url)
                fetcher = Fetcher(timeout=BOUND)
                answer = await fetcher.get(callback)
                await fetcher.aclose()
                assert answer.status == 200
                out, err = await trio.to_thread.run_sync(process.communicate)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            assert process.returncode == 0, err
            assert '"sub": "carol"' in out
            assert (tmp_path / "trimcp" / "tokens.json").stat().st_mode & 0o777 == 0o600
            # Logged in already: the second call prints no login URL.
            again = cli(resource, tmp_path)
            out, err = await trio.to_thread.run_sync(again.communicate)
            assert again.returncode == 0, err
            assert PREFIX not in err
            assert '"sub": "carol"' in out
            nursery.cancel_scope.cancel()
