"""The pytest fixtures: make_client_fixture (object or factory) and mcp_client."""

from __future__ import annotations

import pytest

from trimcp import Client, Server
from trimcp.testing import make_client_fixture, mcp_client
from trimcp.types import TextContent

built: list[Server] = []


def build_app() -> Server:
    app = Server(f"fresh-{len(built)}")

    @app.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    built.append(app)
    return app


shared_app = build_app()
client = make_client_fixture(shared_app)
fresh_client = make_client_fixture(build_app)


@pytest.fixture
def mcp_server() -> Server:
    return shared_app


async def test_make_client_fixture_connects_to_the_server(client: Client) -> None:
    assert client.server_info.name == "fresh-0"
    result = await client.call_tool("echo", {"text": "hi"})
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text == "hi"


async def test_a_factory_builds_a_fresh_server_per_test(fresh_client: Client) -> None:
    assert fresh_client.server_info.name == built[-1].info.name
    assert built[-1] is not shared_app


async def test_mcp_client_uses_the_mcp_server_fixture(mcp_client: Client) -> None:
    assert mcp_client.server_info.name == "fresh-0"
    assert [tool.name async for tool in mcp_client.iter_tools()] == ["echo"]


def test_mcp_client_is_one_fixture_object() -> None:
    import trimcp.testing

    assert trimcp.testing.mcp_client is mcp_client
    with pytest.raises(AttributeError):
        trimcp.testing.no_such_name  # noqa: B018


def test_the_public_surface_of_trimcp_testing() -> None:
    import trimcp.testing

    for name in trimcp.testing.__all__:
        assert getattr(trimcp.testing, name) is not None, name
    assert {"open_test_client", "make_client_fixture", "mcp_client", "ScriptedServer"} <= set(
        trimcp.testing.__all__
    )
