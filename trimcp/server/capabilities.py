"""What a :class:`~trimcp.Server` declares: its capabilities, from what it serves now.

``tools``, ``resources`` (with ``subscribe``) and ``prompts``, each with ``listChanged``,
when anything of that kind is registered (disabled or not) or provided; ``completions``
when a completer, a prompt or a resource exists (prompts and templates complete their
Literal/Enum arguments by themselves); ``logging`` always; task support when a tool may
run as a task (the 2025-11-25 ``tasks`` slot in ``initialize``, the
``io.modelcontextprotocol/tasks`` extension in ``server/discover``); every extension added,
and MCP Apps when a page (or a tool naming one) is served.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from trimcp.protocol import apps_ext
from trimcp.server.tasks import methods as task_methods
from trimcp.server.tasks import modern as task_modern
from trimcp.types import (
    PromptsCapability,
    ResourcesCapability,
    ServerCapabilities,
    ToolsCapability,
)

if TYPE_CHECKING:
    from trimcp.server.completion import Completions
    from trimcp.server.components import Components
    from trimcp.server.extensions import Extension


def declare(
    components: Components,
    completions: Completions,
    extensions: Iterable[Extension],
    *,
    stateless: bool = False,
) -> ServerCapabilities:
    """The capabilities ``initialize`` declares (``stateless``: those ``server/discover``
    declares, tasks as the extension instead of the 2025-11-25 slot)."""
    has_tasks = _has_task_tools(components)
    has_resources = components.serves("resources") or components.serves("templates")
    has_prompts = components.serves("prompts")
    return ServerCapabilities(
        tools=ToolsCapability(list_changed=True) if components.serves("tools") else None,
        resources=ResourcesCapability(subscribe=True, list_changed=True) if has_resources else None,
        prompts=PromptsCapability(list_changed=True) if has_prompts else None,
        completions={} if completions or has_resources or has_prompts else None,
        logging={},
        tasks=task_methods.tasks_capability() if has_tasks and not stateless else None,
        extensions=_extensions(components, extensions, tasks=has_tasks and stateless),
    )


def _extensions(
    components: Components, added: Iterable[Extension], *, tasks: bool
) -> dict[str, Any] | None:
    """``capabilities.extensions``: every extension added, the tasks extension when
    ``tasks`` (2026-07-28 declares task support there), and MCP Apps when a page (or a
    tool naming one) is served."""
    extensions = [*added, *([task_modern.EXTENSION] if tasks else [])]
    declared = {ext.id: dict(ext.settings) for ext in extensions}
    if _has_apps(components):
        declared.setdefault(apps_ext.EXTENSION_ID, {})
    return declared or None


def _has_apps(components: Components) -> bool:
    # A page registered, or a tool naming one: declare MCP Apps (both eras).
    return any(
        apps_ext.is_ui_uri(resource.uri) and resource.mime_type == apps_ext.MIME_TYPE
        for resource in [*components.registered("resources"), *components.provided("resources")]
    ) or any(
        apps_ext.META_KEY in (tool.definition().meta or {})
        for tool in [*components.registered("tools"), *components.provided("tools")]
    )


def _has_task_tools(components: Components) -> bool:
    tools = [*components.decorated_tools(), *components.provided("tools")]
    return any(task_methods.task_support(tool) != "forbidden" for tool in tools)
