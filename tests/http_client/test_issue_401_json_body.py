"""Regression: ``initialize`` answered 401 with an OAuth-style JSON body
(``{"error":"invalid_token"}``) was taken for a JSON-RPC error with a null id, re-addressed
to the request, and then dropped by the engine as malformed: the call hung until the
caller's deadline. It must fail at once with the HTTP status."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import Reply, Request, fake_server
from tests.http_client.helpers import http_session
from trimcp.errors import McpError


@pytest.mark.parametrize(
    "body",
    [
        {"error": "invalid_token", "error_description": "The access token expired"},
        {"error": "invalid_token", "id": None},
        {"error": {"code": -32001, "message": "no jsonrpc member"}},
    ],
)
async def test_initialize_401_with_oauth_json_fails_at_once(
    autojump_clock: Any, body: dict[str, Any]
) -> None:
    async def app(request: Request, reply: Reply) -> None:
        await reply.json(
            body, status=401, headers={"www-authenticate": 'Bearer error="invalid_token"'}
        )

    async with fake_server(app) as server:
        start = trio.current_time()
        with pytest.raises(McpError) as caught, trio.fail_after(600):
            async with http_session(server.url):
                pass
        assert trio.current_time() - start < 1.0  # at once, not at a deadline
        assert "HTTP 401" in caught.value.message
        assert caught.value.data["httpStatus"] == 401
