"""DPoP through a deployment: a real authorization server (oidc-provider, DPoP on), two
``trimcp run`` replicas protected by flags alone (``--auth-issuer``, ``--auth-resource``,
``--auth-scope``, ``--auth-dpop require``) on one Redis store, and round-robin nginx in
front with the shipped site settings (examples/deploy/nginx-mcp-location.conf).

trimcp's client logs in through nginx (the 401's metadata document is proxied too), gets
a DPoP-bound token, and calls both replicas with fresh proofs; a proof accepted by one
replica is refused by both afterwards (the replay cache lives in Redis); the token is
refreshed with the same key; stolen, it is refused as Bearer and with another key. Real
processes and sockets; every wait bounded.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import attrs
import jwt
import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_client import ScriptedUser
from tests.auth.test_oidc_dpop import INITIALIZE, assert_stolen_token_refused
from tests.scale.peers import Nginx, RedisServer, Replica, free_port
from tests.scale.test_principals import http
from trimcp.auth import DpopKey, FollowRedirects, MemoryTokenStore, OAuthClient
from trimcp.client import connect_transport
from trimcp.transports.http_client import open_http_client_transport
from trimcp.types import TextContent

APP = Path(__file__).with_name("dpop_app.py")
BOUND = 60.0


async def whoami_calls(url: str, auth: OAuthClient, count: int) -> tuple[list[Any], Any]:
    """``count`` whoami calls in one session through ``url``; their answers and the
    client's login record."""
    async with (
        open_http_client_transport(url, auth=auth, timeout=BOUND) as transport,
        connect_transport(transport) as client,
    ):
        answers = []
        for _ in range(count):
            result = await client.call_tool("whoami", {})
            block = result.content[0]
            assert isinstance(block, TextContent)
            answers.append(json.loads(block.text))
        return answers, transport.auth


def upstreams_of_refusals(access_log: Path) -> set[str]:
    """The replicas (upstream addresses) that answered 401 to a POST, from nginx's log."""
    found = set()
    for line in access_log.read_text().splitlines():
        match = re.match(r"POST 401 (\S+) ", line)
        if match:
            found.add(match.group(1))
    return found


async def test_dpop_through_nginx_and_two_replicas(
    oidc_provider: OidcProvider,
    scale_tools: dict[str, str],
    redis_server: RedisServer,
    tmp_path: Path,
) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    flags = (
        *("--auth-issuer", oidc_provider.issuer, "--auth-resource", resource),
        *("--auth-scope", "mcp", "--auth-dpop", "require"),
    )
    replicas = [Replica(redis_server.url, *flags, app=APP) for _ in range(2)]
    nginx = None
    try:
        nginx = Nginx(scale_tools["SCALE_NGINX"], tmp_path, [r.port for r in replicas], port=port)
        store = MemoryTokenStore()
        auth = OAuthClient(
            interaction=FollowRedirects(f"http://127.0.0.1:{free_port()}/cb", login=ScriptedUser()),
            store=store,
            client_name="trimcp-dpop-cluster",
            allow_private_addresses=True,
        )
        with trio.fail_after(BOUND):
            # 1. One login through nginx; four calls, each with a fresh proof, on both replicas.
            answers, session = await whoami_calls(nginx.url, auth, 4)
            assert (session.logins, session.refreshes) == (1, 0)
            assert {a["sub"] for a in answers} == {"alice"}
            assert {a["pid"] for a in answers} == {r.process.pid for r in replicas}
            stored = await store.load(resource)
            assert stored is not None
            assert stored.tokens is not None
            assert stored.tokens.token_type == "DPoP"
            assert stored.dpop_key is not None
            key = DpopKey(stored.dpop_key, stored.dpop_algorithm)
            assert answers[0]["cnf"] == {"jkt": key.thumbprint}
            token = stored.tokens.access_token

            # 2. A proof accepted once is refused afterwards by both replicas.
            headers = [
                ("authorization", f"DPoP {token}"),
                ("dpop", key.proof("POST", resource, access_token=token)),
            ]
            status, _, _ = await http(nginx.url, "POST", INITIALIZE, headers)
            assert status == 200
            for _ in range(4):  # round robin: each replica gets two of these
                status, names, _ = await http(nginx.url, "POST", INITIALIZE, headers)
                assert status == 401
                assert "already used" in names["www-authenticate"]
            replay_refusers = upstreams_of_refusals(tmp_path / "access.log")
            assert replay_refusers == {f"127.0.0.1:{r.port}" for r in replicas}, replay_refusers

            # 3. Stolen: as Bearer, or with the thief's own proofs, refused.
            await assert_stolen_token_refused(nginx.url, resource, token)

            # 4. Expired: refreshed with the same key through nginx, no new login.
            expired = attrs.evolve(stored.tokens, expires_at=time.time() - 60)
            await store.save(resource, attrs.evolve(stored, tokens=expired))
            answers, session = await whoami_calls(nginx.url, auth, 2)
            assert (session.logins, session.refreshes) == (0, 1)
            again = await store.load(resource)
            assert again is not None
            assert again.tokens is not None
            assert again.dpop_key == stored.dpop_key
            claims = jwt.decode(again.tokens.access_token, options={"verify_signature": False})
            assert claims["cnf"] == {"jkt": key.thumbprint}
    finally:
        if nginx is not None:
            nginx.stop()
        logs = "\n".join(r.output()[-3000:] for r in replicas)
        for replica in replicas:
            replica.stop()
    assert "Traceback" not in logs, logs
