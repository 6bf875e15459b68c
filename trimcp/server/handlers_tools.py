"""``tools/list`` and ``tools/call``, as a :class:`~trimcp.Server` answers them.

The tools are what the server's components list for the request
(:mod:`trimcp.server.components`: its providers behind their transforms), less those the
caller's token does not reach when its ``ProtectedResource`` hides them, in pages
(:mod:`trimcp.server.listing`). A call runs the tool the request reaches by name in the
request's task and cancel scope, as a task when the tool and the request ask for one
(:mod:`trimcp.server.tasks`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.methods import CALL_TOOL, LIST_TOOLS
from trimcp.server.listing import by_name, visible
from trimcp.server.tasks import methods as task_methods
from trimcp.types import ListToolsResult

if TYPE_CHECKING:
    from trimcp.server.components import Components
    from trimcp.server.context import Context
    from trimcp.server.dispatch import MethodRegistry
    from trimcp.server.listing import Pages
    from trimcp.server.providers import ToolComponent
    from trimcp.session.context import RequestContext
    from trimcp.types import CallToolRequestParams, PaginatedRequestParams

#: Runs a tool as a task for the request (the server's task runner).
AsTask = Callable[["ToolComponent", "RequestContext"], Awaitable[Any]]


class ToolHandlers:
    """The tool requests of one server: ``components`` it serves, ``pages`` of its lists,
    ``context`` (the handlers' :class:`~trimcp.server.context.Context` of a request) and
    ``as_task`` (runs a call as a task)."""

    __slots__ = ("as_task", "components", "context", "pages")

    def __init__(
        self,
        components: Components,
        pages: Pages,
        context: Callable[[RequestContext], Context],
        as_task: AsTask,
    ) -> None:
        self.components = components
        self.pages = pages
        self.context = context
        self.as_task = as_task

    def install(self, methods: MethodRegistry) -> None:
        """Answer ``tools/list`` and ``tools/call`` on ``methods``."""
        methods.add(LIST_TOOLS, self.list_tools)
        methods.add(CALL_TOOL, self.call_tool)

    async def list_tools(
        self, ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        version = ctx.negotiated.protocol_version if ctx.negotiated else None
        listed = visible(self.components.listed("tools", ctx), ctx, "tools/call", "name")
        tools = [tool.definition(version) for tool in listed]
        page, cursor = self.pages.page(tools, params, LIST_TOOLS.name, by_name)
        return ListToolsResult(tools=page, next_cursor=cursor)

    async def call_tool(self, ctx: RequestContext, params: CallToolRequestParams) -> Any:
        name = params.name
        tool = self.components.get("tools", name, ctx)
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name[:200]}", {"tool": name})
        if tool.task_start == "auto" and task_methods.runs_as_task(tool, ctx):
            return await self.as_task(tool, ctx)
        result = await tool.run(params.arguments, self.context(ctx))
        # task_start="explicit": the body asked start_task() for a task.
        return task_methods.unwrap_started(result)
