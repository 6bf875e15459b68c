"""The official conformance suite's authorization-server scenarios (suite 0.2.0-alpha.12,
``conformance authorization``) against trimcp's own authorization server, in front of a
GitHub-shaped provider on loopback:

- ``authorization-server-metadata-endpoint``: RFC 8414 metadata (status, JSON, issuer,
  endpoints, S256, ``client_id_metadata_document_supported``);
- ``authorization-code-grant``: a client registered here (dynamically, public, its
  redirect URI the suite's callback listener) is sent through the authorization
  endpoint; the scripted user allows trimcp's consent page and signs in upstream; the
  suite checks the redirect (``state``, ``code``, RFC 9207 ``iss``) and redeems the code
  with PKCE and the resource indicator (a JSON answer, ``Cache-Control: no-store``).

Every check must be SUCCESS (no WARNING either).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio

from tests.authserver.fake_github import running_fake_github
from tests.authserver.harness import free_port, github_upstream, proxied_server
from tests.authserver.spec_client import Browser, SpecClient, log_in
from tests.conformance.test_conformance import (
    ANSI,
    HERE,
    ROOT,
    SUITE_2026,
    checks_of,
    install_suite,
    require_npm,
    suite_env,
)

pytestmark = pytest.mark.conformance

SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")
BOUND = 300.0


@pytest.fixture(scope="module")
def suite_2026() -> None:
    require_npm()
    install_suite(SUITE_2026)


async def test_trimcps_authorization_server_passes_the_suites_scenarios(
    suite_2026: None, tmp_path: Path
) -> None:
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    log = tmp_path / "suite.log"
    with trio.fail_after(BOUND):
        async with (
            running_fake_github() as github,
            proxied_server(github_upstream(github)) as (url, _auth),
        ):
            issuer = url.removesuffix("/mcp")
            client = SpecClient(url)
            try:
                await client.discover()
                client_id = (await client.register([callback]))["client_id"]
            finally:
                await client.aclose()
            with log.open("wb") as stderr:
                process = await trio.lowlevel.open_process(
                    [
                        str(HERE / "run.sh"),
                        "authorization",
                        *("--url", issuer, "--client-id", client_id, "--resource", url),
                        *("--port", str(port), "--output-dir", str(tmp_path / "out")),
                    ],
                    stdout=-1,  # subprocess.PIPE
                    stderr=stderr,
                    cwd=str(ROOT),
                    env=suite_env(SUITE_2026),
                )
                output = await visit_when_asked(process, issuer, callback)
    text = ANSI.sub("", output)
    assert process.returncode == 0, text + log.read_text(errors="replace")
    checks = checks_of(tmp_path / "out")
    ran = {check["id"]: check for items in checks.values() for check in items}
    assert {"authorization-server-metadata", "authorization-server-metadata-cimd"} <= set(ran)
    assert "authorization-code-grant" in ran, text
    bad = [f"{k}: {v.get('status')} {v.get('errorMessage')}" for k, v in ran.items()]
    assert all(check["status"] == "SUCCESS" for check in ran.values()), bad
    assert len(checks) == len(SCENARIOS), sorted(checks)


async def visit_when_asked(process: trio.Process, issuer: str, callback: str) -> str:
    """Read the suite's output; when it prints the authorization URL, be the user: allow
    the consent page, sign in upstream, and follow the redirect to the suite's callback
    listener. Returns everything it printed, once it exited."""
    assert process.stdout is not None
    seen = b""
    visited = False
    try:
        while True:
            data = await process.stdout.receive_some(65536)
            if not data:
                break
            seen += data
            asked = re.search(
                rf"^({re.escape(issuer)}/oauth/authorize\?\S+)$", seen.decode(), re.MULTILINE
            )
            if asked is not None and not visited:
                visited = True
                browser = Browser()
                try:
                    page = await log_in(browser, asked.group(1), callback, "conformance")
                    assert page.location is not None, (page.status, page.body[:300])
                    await browser.request("GET", page.location)  # the suite's listener
                finally:
                    await browser.aclose()
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    return seen.decode(errors="replace")
