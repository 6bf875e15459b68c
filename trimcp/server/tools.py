"""Tools: a function, its schemas, and how a call turns into a ``CallToolResult``.

What a call does, in order:

1. The arguments are validated against the input schema and converted to the declared
   Python types. A failure is, on 2025-11-25, a result with ``isError: true`` naming the
   bad argument (so the model can fix its call); on older revisions a ``-32602`` error.
2. The function runs. An async function runs in the request's task, inside the request's
   cancel scope. A sync function runs *inline* in the Trio thread: it blocks every session
   of the process while it runs and cannot be interrupted; register it with
   ``run_sync_in_thread=True`` to run it in a worker thread (``trio.to_thread.run_sync``)
   instead. A cancelled request then waits for the thread to finish and discards its
   result: Python threads cannot be stopped from outside.
3. What it returns is shaped by :mod:`trimcp.server.results`.

Errors: :class:`ToolError` becomes an ``isError`` result carrying its message (for the
model to read). An :class:`~trimcp.errors.McpError` is answered as that JSON-RPC error,
except :class:`~trimcp.errors.LocalProtocolError` (e.g. sampling from a client that cannot
sample), which becomes an ``isError`` result with its message. Any other exception is
logged with its traceback (logger ``trimcp.server``) and becomes an ``isError`` result
carrying the exception's type and message (``Tool 'x' failed: ValueError: ...``), so the
model can react as the spec intends; with ``Server(mask_error_details=True)`` the result
says only that the tool failed, revealing nothing about the server's internals.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, ParamSpec, TypeVar

import trio

from trimcp import serde
from trimcp._groups import single_exception
from trimcp.errors import INVALID_PARAMS, LocalProtocolError, McpError
from trimcp.protocol.apps_ext import ToolUi, tool_meta
from trimcp.protocol.versions import V2025_06_18, input_errors_are_tool_errors
from trimcp.server.context import Context
from trimcp.server.convert import ValidationError
from trimcp.server.registry import FunctionHandle, Handle
from trimcp.server.results import OutputSpec, ResultError, output_spec, text_result, to_call_result
from trimcp.server.signature import ArgumentBinder, call, inspect_function
from trimcp.types import CallToolResult, Icon, Tool, ToolAnnotations, ToolExecution

logger = logging.getLogger("trimcp.server")

P = ParamSpec("P")
R = TypeVar("R")

TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
TaskSupport = Literal["forbidden", "optional", "required"]
TaskStart = Literal["auto", "explicit"]


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


AUTO: Final[Any] = _Auto()
"""``output_schema=AUTO`` (the default): derive the output schema from the return type."""


class ToolError(Exception):
    """Raise from a tool to report a failure the model should see (an ``isError`` result).

    The message is sent to the client as is: say what went wrong and, ideally, how to
    call the tool so that it works.
    """


def icon_list(icons: Sequence[Icon | Mapping[str, Any]] | None) -> list[Icon] | None:
    if icons is None:
        return None
    return [icon if isinstance(icon, Icon) else serde.structure(dict(icon), Icon) for icon in icons]


class _Defined:
    """A tool's definition, and the same without output schema for older clients."""

    _tool: Tool
    _legacy_tool: Tool | None = None

    def definition(self, version: str | None = None) -> Tool:
        """The ``Tool`` sent in ``tools/list`` (no output schema before 2025-06-18)."""
        if version is None or version >= V2025_06_18 or self._tool.output_schema is None:
            return self._tool
        if self._legacy_tool is None:
            self._legacy_tool = without_output_schema(self._tool)
        return self._legacy_tool


class RegisteredTool(FunctionHandle[P, R], _Defined):
    """A tool registered on a server. Calling it calls the function (handy in tests)."""

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        task_support: TaskSupport | None = None,
        task_start: TaskStart = "auto",
        output_schema: Mapping[str, Any] | None = AUTO,
        input_schema: Mapping[str, Any] | None = None,
        run_sync_in_thread: bool = False,
        ui: ToolUi | str | None = None,
    ) -> None:
        info = inspect_function(fn, what="tool")
        if ui is not None:
            meta = tool_meta(ui, meta)
        if task_start not in ("auto", "explicit"):
            raise ValueError(f"task_start must be 'auto' or 'explicit', not {task_start!r}")
        #: "auto": a call that runs as a task runs the whole body in the task; "explicit":
        #: the body runs in the request and starts the task itself
        #: (:func:`trimcp.server.tasks.start_task`), e.g. after asking for input.
        self.task_start = task_start
        self.fn = fn
        self.name = name or info.name
        if not TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"Invalid tool name {self.name!r}: use 1-128 letters, digits, '_', '-' or '.'"
            )
        if run_sync_in_thread and info.is_async:
            raise TypeError(f"Tool {self.name!r}: run_sync_in_thread is for sync functions")
        self.info = info
        #: Whether the function takes a Context: without one it cannot ask the client for
        #: input, so a 2026 call runs without an input round (see ``Server.may_ask``).
        self.takes_context = info.context_param is not None
        self.binder = ArgumentBinder(info, f"Tool {self.name!r}")
        # A hand-written schema is only advertised (e.g. to keep "$schema", "$defs" names or
        # "additionalProperties": false verbatim); arguments are still checked and
        # converted by the signature, so the two must agree.
        if input_schema is not None and input_schema.get("type") != "object":
            raise ValueError(f'Tool {self.name!r}: input_schema must have "type": "object"')
        try:
            self.output: OutputSpec = output_spec(
                info.return_annotation, output_schema, auto=output_schema is AUTO
            )
        except TypeError as exc:
            raise TypeError(f"Tool {self.name!r}, return type: {exc}") from None
        self.run_sync_in_thread = run_sync_in_thread
        if isinstance(annotations, Mapping):
            annotations = serde.structure(dict(annotations), ToolAnnotations)
        self._tool = Tool(
            name=self.name,
            title=title,
            description=description if description is not None else info.summary,
            input_schema=dict(input_schema) if input_schema is not None else self.binder.schema,
            output_schema=self.output.schema,
            annotations=annotations,
            execution=ToolExecution(task_support=task_support) if task_support else None,
            icons=icon_list(icons),
            meta=dict(meta) if meta is not None else None,
        )
        self._legacy_tool = None

    def __repr__(self) -> str:
        state = "" if self.enabled else ", disabled"
        return f"<RegisteredTool {self.name!r}{state}>"

    async def run(self, arguments: Mapping[str, Any] | None, ctx: Context) -> CallToolResult:
        """Validate, call and shape the result (see the module docs for errors).

        Cancellation: the function is cancelled with the request (a threaded sync function
        is waited for); ``trio.Cancelled`` propagates.
        """
        try:
            kwargs = self.binder.bind(arguments, ctx)
        except ValidationError as exc:
            message = f"Invalid arguments for tool {self.name!r}: {exc}"
            if input_errors_are_tool_errors(ctx.protocol_version):
                return text_result(message, is_error=True)
            raise McpError(
                INVALID_PARAMS, message, {"path": exc.path, "reason": exc.reason}
            ) from None
        try:
            if self.run_sync_in_thread:
                value = await trio.to_thread.run_sync(functools.partial(self.fn, **kwargs))
            elif self.info.is_async:  # a coroutine function: its call is awaited
                value = await self.info.fn(**kwargs)
            else:
                value = await call(self.info, kwargs)
            output = self.output
            # Only a structured result depends on the revision (decided at registration).
            version = ctx.protocol_version if output.schema is not None else None
            return to_call_result(value, output, self.name, version)
        except Exception as exc:
            return self._failure(exc, mask=ctx.server.mask_error_details)

    def _failure(self, exc: Exception, *, mask: bool = False) -> CallToolResult:
        return tool_failure(self.name, exc, mask=mask)


def without_output_schema(tool: Tool) -> Tool:
    """``tool`` as clients older than 2025-06-18 are sent it (they know no output schema)."""
    return Tool(
        name=tool.name,
        input_schema=tool.input_schema,
        title=tool.title,
        description=tool.description,
        annotations=tool.annotations,
        icons=tool.icons,
        meta=tool.meta,
    )


def tool_failure(name: str, exc: Exception, *, mask: bool = False) -> CallToolResult:
    """The answer for a tool ``name`` that raised ``exc`` (see the module docs): an
    ``isError`` result, or ``exc`` raised again when it is a JSON-RPC error to answer."""
    if isinstance(exc, BaseExceptionGroup):
        only = single_exception(exc)
        if isinstance(only, Exception):
            exc = only
    if isinstance(exc, ToolError):
        return text_result(str(exc) or f"Tool {name!r} failed", is_error=True)
    if isinstance(exc, LocalProtocolError):
        return text_result(exc.message, is_error=True)
    if isinstance(exc, McpError):
        raise exc
    if isinstance(exc, ResultError):
        logger.error("tool %r: %s", name, exc)
    else:
        logger.error("tool %r raised an exception", name, exc_info=exc)
    if mask:
        return text_result(f"Tool {name!r} failed with an internal error", is_error=True)
    return text_result(f"Tool {name!r} failed: {describe_exception(exc)}", is_error=True)


class SchemaTool(Handle, _Defined):
    """A tool given by its wire definition and an ``async def call(arguments, ctx)``: for
    providers whose tools are not Python functions (an OpenAPI operation, a tool made up
    by a transform).

    ``definition.input_schema`` is advertised as is; ``call`` gets the arguments the
    client sent (a dict, ``{}`` when none) and checks what it needs. What it returns is
    shaped as a function tool's return value (:mod:`trimcp.server.results`): with an
    output schema, a JSON value goes into ``structuredContent`` (wrapped as
    ``{"result": value}`` when ``wrap_result``; the schema must say so) and into a text
    block; a ``CallToolResult`` passes through. A :class:`ToolError` it raises is an
    ``isError`` result with its message; other exceptions as for any tool. Cancellation:
    ``call`` runs in the request's task and cancel scope and is cancelled with it.
    """

    task_start: TaskStart = "auto"

    def __init__(
        self,
        definition: Tool,
        call: Callable[[dict[str, Any], Context], Awaitable[Any]],
        *,
        wrap_result: bool = False,
        tags: Iterable[str] = (),
    ) -> None:
        if not TOOL_NAME.fullmatch(definition.name):
            raise ValueError(
                f"Invalid tool name {definition.name!r}: use 1-128 letters, digits, '_', '-' or '.'"
            )
        if definition.input_schema.get("type") != "object":
            raise ValueError(f'Tool {definition.name!r}: input_schema must have "type": "object"')
        self.name = definition.name
        self._tool = definition
        self._call = call
        self._output = OutputSpec(definition.output_schema, wrap_result)
        self.tags = frozenset(tags)

    def __repr__(self) -> str:
        return f"<SchemaTool {self.name!r}>"

    async def run(self, arguments: Mapping[str, Any] | None, ctx: Context) -> CallToolResult:
        """Call ``call`` and shape its value (see the class docs). Cancellation: with the
        request."""
        try:
            value = await self._call(dict(arguments or {}), ctx)
            return to_call_result(value, self._output, self.name, ctx.protocol_version)
        except Exception as exc:
            return tool_failure(self.name, exc, mask=ctx.server.mask_error_details)


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` (just ``Type`` when it has no message), for a client."""
    if isinstance(exc, ResultError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
