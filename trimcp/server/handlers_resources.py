"""``resources/list``, ``resources/templates/list`` and ``resources/read``, as a
:class:`~trimcp.Server` answers them (and ``ctx.read_resource``).

Resources and templates are what the server's components list for the request
(:mod:`trimcp.server.components`), in pages (:mod:`trimcp.server.listing`); resources the
caller's token does not reach are left out when its ``ProtectedResource`` hides them. A
read resolves the URI to its canonical name first and checks the caller's resource scopes
on it (:mod:`trimcp.server.resolve`), then runs the resource's or template's function in
the request's task and cancel scope; the contents carry the canonical URI asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from trimcp.protocol.methods import LIST_RESOURCE_TEMPLATES, LIST_RESOURCES, READ_RESOURCE
from trimcp.server.listing import by_template, by_uri, visible
from trimcp.server.resources import not_found
from trimcp.types import ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult

if TYPE_CHECKING:
    from trimcp.server.components import Components
    from trimcp.server.context import Context
    from trimcp.server.dispatch import MethodRegistry
    from trimcp.server.listing import Pages
    from trimcp.server.resolve import Resolved
    from trimcp.session.context import RequestContext
    from trimcp.types import PaginatedRequestParams, ReadResourceRequestParams, ResourceContents


class ResourceHandlers:
    """The resource requests of one server: ``components`` it serves, ``pages`` of its
    lists, ``context`` (the handlers' :class:`~trimcp.server.context.Context` of a
    request)."""

    __slots__ = ("components", "context", "pages")

    def __init__(
        self,
        components: Components,
        pages: Pages,
        context: Callable[[RequestContext], Context],
    ) -> None:
        self.components = components
        self.pages = pages
        self.context = context

    def install(self, methods: MethodRegistry) -> None:
        """Answer ``resources/list``, ``resources/templates/list`` and ``resources/read``
        on ``methods``."""
        methods.add(LIST_RESOURCES, self.list_resources)
        methods.add(LIST_RESOURCE_TEMPLATES, self.list_templates)
        methods.add(READ_RESOURCE, self.read_resource)

    async def list_resources(
        self, ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        listed = self.components.listed("resources", ctx)
        resources = [r.definition() for r in visible(listed, ctx, READ_RESOURCE.name, "uri")]
        page, cursor = self.pages.page(resources, params, LIST_RESOURCES.name, by_uri)
        return ListResourcesResult(resources=page, next_cursor=cursor)

    async def list_templates(
        self, ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        templates = [t.definition() for t in self.components.listed("templates", ctx)]
        method = LIST_RESOURCE_TEMPLATES.name
        page, cursor = self.pages.page(templates, params, method, by_template)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def read_resource(
        self, ctx: RequestContext, params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        resolved = self.components.admit_resource(ctx, READ_RESOURCE.name, params.uri)
        contents = await read_resolved(resolved, self.context(ctx))
        return ReadResourceResult(contents=contents)

    async def read_contents(self, uri: str, ctx: Context) -> list[ResourceContents]:
        """Read ``uri`` for ``ctx``'s request (``ctx.read_resource``): ``-32002`` when
        nothing serves it, ``-32602`` for a URI with no single reading."""
        resolved = self.components.resolve_resource(uri, ctx.request_context)
        if resolved is None:
            raise not_found(uri)
        return await read_resolved(resolved, ctx)


async def read_resolved(resolved: Resolved, ctx: Context) -> list[ResourceContents]:
    """Read what ``resolved`` names; the contents carry the canonical URI asked for."""
    if resolved.resource is not None:
        return await resolved.resource.read(resolved.uri, ctx)
    assert resolved.template is not None
    return await resolved.template.read(resolved.uri, resolved.arguments, ctx)
