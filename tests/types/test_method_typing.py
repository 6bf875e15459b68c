"""The typed method table: ``Method[Params, Result]`` constants, checked by mypy on both sides.

- Each constant's annotation names the same types its row loads at run time (the row
  names its types as strings so a start loads only what it meets: this pins the two).
- A round trip through ``LowLevelServer.on(METHOD)`` and ``Session.request(METHOD, ...)``
  is typed end to end (``assert_type`` is checked by mypy, which the test command runs
  over tests/ too), and mypy refuses a wrong params or result type on either side.
"""

from __future__ import annotations

import textwrap
import types
import typing
from pathlib import Path
from typing import Any, assert_type

import attrs
import pytest

import trimcp.types
from tests.support import make_server, session_pair
from trimcp.errors import UnexpectedResult
from trimcp.protocol import methods
from trimcp.protocol.methods import CALL_TOOL, LIST_TOOLS, METHODS, Method
from trimcp.session.context import RequestContext
from trimcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

REPO = Path(__file__).resolve().parents[2]


def _constants() -> dict[str, Method[Any, Any]]:
    return {name: value for name, value in vars(methods).items() if isinstance(value, Method)}


def _without_none(tp: Any) -> Any:
    if isinstance(tp, types.UnionType):
        rest = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else tp
    return tp


def test_every_method_has_one_constant() -> None:
    assert sorted(m.name for m in _constants().values()) == sorted(METHODS)


@pytest.mark.parametrize("name", sorted(_constants()))
def test_each_constant_is_annotated_with_the_types_its_row_loads(name: str) -> None:
    wire = {type_name: getattr(trimcp.types, type_name) for type_name in trimcp.types.__all__}
    namespace = {**vars(methods), **vars(typing), **wire}
    final = eval(methods.__annotations__[name], namespace)
    (annotated,) = typing.get_args(final)  # Final[Method[P, R]]
    params, result = typing.get_args(annotated)
    method = _constants()[name]
    assert _without_none(params) is method.params_type
    if method.kind == "notification":
        assert result is type(None)
    elif method.result_name is None:  # free-form (tasks/result)
        assert typing.get_origin(result) is dict
    else:
        assert result is method.result_type


def test_the_per_era_columns_are_the_protocol_sets() -> None:
    from trimcp.protocol import modern

    assert {"tools/call", "prompts/get", "resources/read"} == modern.INPUT_METHODS
    assert {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
        "notifications/roots/list_changed",
        "notifications/elicitation/complete",
    } == modern.REMOVED_METHODS
    assert {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.items() <= (
        modern.NAME_FIELDS.items()
    )


def test_the_component_columns() -> None:
    # The per-method facts that auth (scopes), telemetry (span names), the client cache
    # (what a change makes stale) and the server's cache hints read from the table.
    rows = {
        m.name: (m.target, m.target_field, m.lists, m.page_field, m.stale_after)
        for m in METHODS.values()
        if m.target or m.lists or m.stale_after
    }
    changed = "notifications/{}/list_changed".format
    assert rows == {
        "tools/call": ("tool", "name", None, None, ()),
        "prompts/get": ("prompt", "name", None, None, ()),
        "resources/read": ("resource", "uri", None, None, ("notifications/resources/updated",)),
        "resources/subscribe": ("resource", "uri", None, None, ()),
        "subscriptions/listen": ("resource", None, None, None, ()),
        "tools/list": (None, None, "tools", "tools", (changed("tools"),)),
        "prompts/list": (None, None, "prompts", "prompts", (changed("prompts"),)),
        "resources/list": (None, None, "resources", "resources", (changed("resources"),)),
        "resources/templates/list": (
            None,
            None,
            "templates",
            "resource_templates",
            (changed("resources"),),
        ),
    }
    for method in METHODS.values():
        params, result = method.params_type, method.result_type
        if method.target_field is not None:
            assert isinstance(params, type)
            assert method.target_field in attrs.fields_dict(params), method.name
        if method.page_field is not None:
            assert result is not None
            assert method.page_field in attrs.fields_dict(result), method.name
        for note in method.stale_after:
            assert METHODS[note].kind == "notification"
            assert METHODS[note].sender == "server"


async def test_a_typed_round_trip() -> None:
    server = make_server()

    @server.on(CALL_TOOL)
    async def call(ctx: RequestContext, params: CallToolRequestParams) -> CallToolResult:
        assert_type(params, CallToolRequestParams)
        return CallToolResult(content=[TextContent(text=f"called {params.name}")])

    @server.on(LIST_TOOLS)
    async def list_tools(
        ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="echo", input_schema={"type": "object"})])

    async with session_pair(server) as (client, _):
        result = await client.request(CALL_TOOL, CallToolRequestParams(name="echo"))
        assert_type(result, CallToolResult)
        assert result.content == [TextContent(text="called echo")]
        listed = await client.request(LIST_TOOLS, None)
        assert_type(listed, ListToolsResult)
        assert [tool.name for tool in listed.tools] == ["echo"]


async def test_an_answer_of_another_kind_is_refused_by_name() -> None:
    from tests.tasks.helpers import make_app
    from trimcp.testing import open_test_client
    from trimcp.types import TaskMetadata

    async with open_test_client(make_app()) as client:
        as_task = CallToolRequestParams(name="sleep", arguments={"seconds": 0}, task=TaskMetadata())
        with pytest.raises(UnexpectedResult, match="tools/call was answered with CreateTaskResult"):
            await client.session.request(CALL_TOOL, as_task)
        created = await client.session.request(CALL_TOOL.as_task(), as_task)
        assert created.task.status in ("working", "completed")


def test_mypy_refuses_wrong_types_on_either_side(tmp_path: Path) -> None:
    from mypy import api

    sample = tmp_path / "wrong_types.py"
    sample.write_text(
        textwrap.dedent(
            """
            from trimcp.protocol.methods import CALL_TOOL
            from trimcp.server.lowlevel import LowLevelServer
            from trimcp.session import Session
            from trimcp.session.context import RequestContext
            from trimcp.types import GetPromptRequestParams, GetPromptResult, Implementation

            server = LowLevelServer(Implementation(name="x", version="1"))

            @server.on(CALL_TOOL)  # line 10: a prompt handler for a tool call
            async def wrong(ctx: RequestContext, params: GetPromptRequestParams) -> GetPromptResult:
                raise NotImplementedError

            async def send(session: Session) -> None:
                await session.request(CALL_TOOL, GetPromptRequestParams(name="p"))  # line 15
                result: GetPromptResult = await session.request(CALL_TOOL, ...)  # line 16
            """
        )
    )
    out, _, status = api.run(
        [
            "--strict",
            f"--cache-dir={REPO / '.mypy_cache'}",  # the test command ran mypy first
            str(sample),
        ]
    )
    assert status == 1, out
    lines = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    assert {10, 15, 16} <= lines, out
