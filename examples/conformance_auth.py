"""The authorization scenarios of the conformance suite, for ``conformance_client.py``.

Every ``auth/...`` scenario starts a protected mock server (and its authorization
server); the client connects with an :class:`~trimcp.auth.OAuthClient` chosen from the
scenario's name and ``MCP_CONFORMANCE_CONTEXT`` (DPoP where the server asks for it, as
by default), lists the tools and calls each one that
takes no arguments. The user's step is :class:`~trimcp.auth.interaction.FollowRedirects`
(the mock authorization endpoint redirects straight back with a code).

A client secret goes only to the authorization server set as ``authorization_server=``
(docs/authorization.md, "Where credentials go"). The suite starts its mock authorization
server on a port of its choosing and names it only in the mock MCP server's metadata, so
this harness, and only a harness, reads it from there (:func:`named_authorization_server`)
and sets it: an application sets the issuer its credentials were registered at.
"""

from __future__ import annotations

import json
import os
from typing import Any

from trimcp.auth import OAuthClient
from trimcp.auth.discovery import Challenge, discover
from trimcp.auth.extensions import ClientCredentials, EnterpriseManaged, WorkloadIdentity
from trimcp.auth.fetch import Fetcher
from trimcp.auth.grants import PrivateKey
from trimcp.auth.interaction import FollowRedirects
from trimcp.client import Client

#: The Client ID Metadata Document URL the suite's CIMD scenario expects.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def context() -> dict[str, Any]:
    try:
        value = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def named_authorization_server(url: str) -> str:
    """The issuer the suite's mock MCP server at ``url`` names in its resource metadata.
    Trusting what an MCP server names is what ``authorization_server=`` exists to avoid;
    it is right here only because the suite owns both mocks and says no more."""
    fetcher = Fetcher(timeout=10.0)
    try:
        return (await discover(fetcher, url, Challenge())).issuer
    finally:
        await fetcher.aclose()


async def scenario_auth(scenario: str, url: str) -> OAuthClient:
    """The OAuth client for an ``auth/...`` scenario against the mock at ``url``."""
    data = context()
    common: dict[str, Any] = {
        "allow_private_addresses": True,
        "timeout": 10.0,
        "flow_timeout": 15.0,
        "client_name": "trimcp-conformance-client",
    }
    if "valid_jwt" in data:  # workload identity: the platform's JWT is the grant
        return WorkloadIdentity(token=data["valid_jwt"], client_id=data.get("client_id"), **common)
    if "idp_id_token" in data:
        return EnterpriseManaged(
            id_token=data["idp_id_token"],
            idp_token_endpoint=data["idp_token_endpoint"],
            idp_client_id=data.get("idp_client_id"),
            client_id=data["client_id"],
            client_secret=data.get("client_secret"),
            authorization_server=await named_authorization_server(url),
            **common,
        )
    if "private_key_pem" in data:
        key = PrivateKey(
            pem=data["private_key_pem"], algorithm=data.get("signing_algorithm", "ES256")
        )
        return ClientCredentials(
            client_id=data["client_id"],
            private_key=key,
            authorization_server=await named_authorization_server(url),
            **common,
        )
    if scenario.startswith("auth/client-credentials") and "client_secret" in data:
        return ClientCredentials(
            client_id=data["client_id"],
            client_secret=data["client_secret"],
            authorization_server=await named_authorization_server(url),
            **common,
        )
    interaction = FollowRedirects(REDIRECT_URI, timeout=10.0)
    if "client_id" in data:  # pre-registration
        return OAuthClient(
            interaction=interaction,
            client_id=data["client_id"],
            client_secret=data.get("client_secret"),
            **common,
        )
    return OAuthClient(interaction=interaction, client_metadata_url=CLIENT_METADATA_URL, **common)


async def run_auth(client: Client) -> None:
    """List the tools, then call every tool that needs no arguments."""
    tools = [tool async for tool in client.iter_tools()]
    print(f"tools: {[tool.name for tool in tools]}")
    for tool in tools:
        if not (tool.input_schema or {}).get("required"):
            result = await client.call_tool(tool.name, {})
            print(f"{tool.name}: is_error={result.is_error}")
