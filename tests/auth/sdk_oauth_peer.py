"""The official SDK's client (mcp 2.x) logs in to a protected MCP server with its own OAuth
support and calls ``whoami``; prints a JSON report.

Usage: ``python tests/auth/sdk_oauth_peer.py URL``. The SDK registers dynamically, sends
the user to the authorization server; this script plays the user: it follows the
redirects (keeping cookies), allows a consent page (trimcp's own authorization server's),
signs in as ``dave`` on oidc-provider's login form, and hands the code that comes back to
the SDK.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

REDIRECT = "http://127.0.0.1:1/callback"


class Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class User:
    """Visits the authorization URL like a browser and signs in."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None
        #: The consent forms this user allowed.
        self.consented: list[str] = []

    async def visit(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            method, data = "GET", None
            for _ in range(12):
                response = await browser.request(method, url, data=data)
                location = response.headers.get("location")
                if location:
                    target = urljoin(url, location)
                    if target.startswith(REDIRECT):
                        query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
                        self.result = AuthorizationCodeResult(
                            code=query["code"], state=query.get("state"), iss=query.get("iss")
                        )
                        return
                    url, method, data = target, "GET", None
                    continue
                action = re.search(r'action="([^"]+)"', response.text)
                if action is None:
                    raise RuntimeError(f"no login form at {url}: HTTP {response.status_code}")
                url, method = urljoin(url, action.group(1).replace("&amp;", "&")), "POST"
                data = {"login": "dave"}
                if 'name="decision"' in response.text:  # a consent page (trimcp's): allow
                    hidden = re.findall(
                        r'type="hidden" name="([^"]+)" value="([^"]*)"', response.text
                    )
                    data = {**dict(hidden), "decision": "approve"}
                    self.consented.append(url)
        raise RuntimeError("too many redirects")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def main(url: str) -> dict[str, Any]:
    user = User()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="sdk-peer",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=user.visit,
        callback_handler=user.callback,
    )
    report: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("whoami", {})
            texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
            report["whoami"] = json.loads(texts[0])
    report["consented"] = user.consented
    return report


if __name__ == "__main__":
    try:
        out = anyio.run(main, sys.argv[1])
    except BaseException:
        print(json.dumps({"error": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps(out))
