"""Fixtures of the replica tests: a real redis-server per module (see peers.py), and the
authorization tests' real authorization server (oidc-provider) for a protected deployment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.auth.conftest import oidc_provider  # noqa: F401 (a fixture, used by name)
from tests.scale.peers import RedisServer, tools


@pytest.fixture(scope="module")
def scale_tools() -> dict[str, str]:
    return tools()


@pytest.fixture(scope="module")
def redis_server(
    scale_tools: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisServer]:
    server = RedisServer(scale_tools["SCALE_REDIS"], tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
