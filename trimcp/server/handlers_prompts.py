"""``prompts/list``, ``prompts/get`` and ``completion/complete``, as a
:class:`~trimcp.Server` answers them.

Prompts are what the server's components list for the request
(:mod:`trimcp.server.components`), in pages (:mod:`trimcp.server.listing`); prompts the
caller's token does not reach are left out when its ``ProtectedResource`` hides them. A
get renders the prompt the request reaches by name, in the request's task and cancel
scope. Completion asks the completers of the server's own prompt or template
(:mod:`trimcp.server.completion`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.methods import COMPLETE, GET_PROMPT, LIST_PROMPTS
from trimcp.server.listing import by_name, visible
from trimcp.types import ListPromptsResult

if TYPE_CHECKING:
    from trimcp.server.completion import Completions
    from trimcp.server.components import Components
    from trimcp.server.context import Context
    from trimcp.server.dispatch import MethodRegistry
    from trimcp.server.listing import Pages
    from trimcp.server.providers import PromptComponent
    from trimcp.session.context import RequestContext
    from trimcp.types import (
        CompleteRequestParams,
        CompleteResult,
        GetPromptRequestParams,
        GetPromptResult,
        PaginatedRequestParams,
    )


class PromptHandlers:
    """The prompt and completion requests of one server: ``components`` it serves,
    ``pages`` of its lists, its ``completions``, ``context`` (the handlers'
    :class:`~trimcp.server.context.Context` of a request)."""

    __slots__ = ("completions", "components", "context", "pages")

    def __init__(
        self,
        components: Components,
        pages: Pages,
        completions: Completions,
        context: Callable[[RequestContext], Context],
    ) -> None:
        self.components = components
        self.pages = pages
        self.completions = completions
        self.context = context

    def install(self, methods: MethodRegistry) -> None:
        """Answer ``prompts/list``, ``prompts/get`` and ``completion/complete`` on
        ``methods``."""
        methods.add(LIST_PROMPTS, self.list_prompts)
        methods.add(GET_PROMPT, self.get_prompt)
        methods.add(COMPLETE, self.complete)

    async def list_prompts(
        self, ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        listed = visible(self.components.listed("prompts", ctx), ctx, GET_PROMPT.name, "name")
        prompts = [prompt.definition() for prompt in listed]
        page, cursor = self.pages.page(prompts, params, LIST_PROMPTS.name, by_name)
        return ListPromptsResult(prompts=page, next_cursor=cursor)

    async def get_prompt(
        self, ctx: RequestContext, params: GetPromptRequestParams
    ) -> GetPromptResult:
        name = params.name
        prompt: PromptComponent | None = self.components.get("prompts", name, ctx)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name[:200]}", {"prompt": name})
        return await prompt.get(params.arguments, self.context(ctx))

    async def complete(self, ctx: RequestContext, params: CompleteRequestParams) -> CompleteResult:
        # completion types load here: a server that never completes never loads them
        from trimcp.types import CompleteResult, PromptReference

        ref = params.ref
        target: Any
        if isinstance(ref, PromptReference):
            target = self.components.get("prompts", ref.name, ctx)
        else:
            target = self.components.get("templates", ref.uri, ctx)
        if target is not None and not hasattr(target, "choices"):
            target = _NO_CHOICES  # a provider's: it exists, its arguments name no choices
        completion = await self.completions.complete(params, target, self.context(ctx))
        return CompleteResult(completion=completion)


class _NoChoices:
    def choices(self, argument: str) -> list[str] | None:
        return None


_NO_CHOICES = _NoChoices()
