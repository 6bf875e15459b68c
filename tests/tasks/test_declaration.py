"""How a server declares task support, in each era, now that the tasks extension is
declared through the same ``capabilities.extensions`` builder as every extension:
2025-11-25 keeps the ``tasks`` slot, 2026-07-28 (``server/discover``) declares
``io.modelcontextprotocol/tasks`` next to the server's other extensions, and only while
a tool can run as a task."""

from __future__ import annotations

import pytest
import trio

import trimcp
from tests.server.test_extensions import ERAS, NOTES_ID, connected, notes_extension
from tests.tasks.helpers import make_app
from trimcp.protocol import tasks_ext
from trimcp.server.tasks.methods import task_support

TASKS_ID = tasks_ext.EXTENSION_ID


def tasks_and_notes() -> trimcp.Server:
    app = make_app()
    app.add_extension(notes_extension())
    return app


@pytest.mark.parametrize("era", ERAS)
async def test_the_tasks_extension_is_declared_beside_the_others_in_2026_only(era: str) -> None:
    with trio.fail_after(30):
        async with connected(era, tasks_and_notes()) as client:
            caps = client.server_capabilities
            extensions = caps.extensions or {}
            assert extensions[NOTES_ID] == {"maxResults": 20}
            if era == "2025":
                assert TASKS_ID not in extensions
                assert caps.tasks is not None
                assert caps.tasks.requests is not None
            else:
                assert extensions[TASKS_ID] == {}
                assert caps.tasks is None


def test_no_task_tool_no_tasks_extension() -> None:
    app = trimcp.Server("plain")

    @app.tool()
    def ping() -> str:
        return "pong"

    assert app.capabilities(stateless=True).extensions is None
    assert app.capabilities().tasks is None
    app.add_extension(notes_extension())
    assert app.capabilities(stateless=True).extensions == {NOTES_ID: {"maxResults": 20}}


def test_disabling_the_task_tools_withdraws_the_declaration() -> None:
    app = make_app()
    assert TASKS_ID in (app.capabilities(stateless=True).extensions or {})
    for tool in list(app.tools):
        if task_support(tool) != "forbidden":
            tool.disable()
    assert app.capabilities(stateless=True).extensions is None
    assert app.capabilities().tasks is None
