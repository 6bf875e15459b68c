"""Transforms: pure, composable steps between providers and the wire.

    app.add_provider(shop, transforms=[Namespace("shop"), Hide(tags={"internal"})])
    app.add_transform(Visibility())     # each caller sees what its scopes reach
    app.add_transform(ToolSearch())     # list two tools; find the rest by words

A transform sees the components below it (a provider's, or several providers' merged; see
:mod:`trimcp.server.providers`) through a :class:`~trimcp.server.providers.Layer` and
answers the two questions the server asks: what does ``kind`` list for this request
(:meth:`Transform.components`), and what does ``key`` reach (:meth:`Transform.component`)?
Both are synchronous and keep no per-request state; a transform may serve in several
chains at once. Transforms given to ``add_provider`` shape that provider only; those given
to ``add_transform`` shape everything, in the order added (the first is nearest the
providers).

Built in:

- :class:`Namespace`: ``name`` -> ``{prefix}_{name}`` for tools and prompts.
- :class:`Rename`: given names for given tools and prompts.
- :class:`Hide` / :class:`Show`: leave out (or keep only) components by name, URI or tag;
  what is left out is unknown to calls, reads and gets too.
- :class:`Visibility`: per caller, by the scope rules of the server's
  ``ProtectedResource`` (or a rule of your own): what a caller may not use, it does not
  see and cannot reach. 2026-07-28 list results are then cached ``private``.
- :class:`ToolSearch`: the tool list becomes a search tool and a call tool (plus the tools
  you keep listed); every tool stays callable by its name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from trimcp.auth.principal import AuthInfo
from trimcp.server.providers import KINDS, Kind, Layer, key_of
from trimcp.server.ranking import ToolIndex, describe
from trimcp.server.tools import TOOL_NAME, SchemaTool, ToolError
from trimcp.types import Tool, ToolAnnotations

if TYPE_CHECKING:
    from trimcp.server.context import Context
    from trimcp.server.hints import CacheHint
    from trimcp.server.providers import PromptComponent, ToolComponent
    from trimcp.server.tools import TaskStart
    from trimcp.session.context import RequestContext
    from trimcp.types import GetPromptResult, Prompt

#: A namespace prefix: what a name may start with, and no more than 64 characters.
PREFIX: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
#: The method whose scope rules decide whether a caller may use a component of a kind.
_METHOD: Final[Mapping[str, str]] = {
    "tools": "tools/call",
    "prompts": "prompts/get",
    "resources": "resources/read",
}


class Transform:
    """A step between the providers and the wire; the base class passes everything
    through. Override :meth:`components` and :meth:`component` (both, consistently:
    what a list leaves out, a lookup should not reach unless that is the point, as with
    :class:`ToolSearch`).

    ``per_principal``: True when the answer depends on who asks (``ctx.principal``); the
    server then marks 2026-07-28 list results ``cacheScope: "private"``.
    """

    per_principal: bool = False

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        """What ``kind`` lists for the request ``ctx`` (None: outside a request)."""
        return below.components(kind, ctx)

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        """What ``key`` reaches for the request ``ctx``, or None (unknown)."""
        return below.component(kind, key, ctx)


# --- renaming ---------------------------------------------------------------------------


class _ToolView:
    """A tool under another name: the same tool otherwise."""

    __slots__ = ("_definitions", "inner", "name")

    def __init__(self, inner: ToolComponent, name: str) -> None:
        self.inner = inner
        self.name = name
        self._definitions: dict[str | None, tuple[Tool, Tool]] = {}

    def __repr__(self) -> str:
        return f"<tool {self.name!r} -> {self.inner!r}>"

    @property
    def task_start(self) -> TaskStart:
        return self.inner.task_start

    @property
    def tags(self) -> frozenset[str]:
        return self.inner.tags

    @property
    def cache_hint(self) -> CacheHint | None:
        return self.inner.cache_hint

    def definition(self, version: str | None = None) -> Tool:
        source = self.inner.definition(version)
        cached = self._definitions.get(version)
        if cached is None or cached[0] is not source:
            cached = self._definitions[version] = (source, attrs.evolve(source, name=self.name))
        return cached[1]

    async def run(self, arguments: Mapping[str, Any] | None, ctx: Context) -> Any:
        return await self.inner.run(arguments, ctx)


class _PromptView:
    """A prompt under another name."""

    __slots__ = ("_definition", "inner", "name")

    def __init__(self, inner: PromptComponent, name: str) -> None:
        self.inner = inner
        self.name = name
        self._definition: tuple[Prompt, Prompt] | None = None

    def __repr__(self) -> str:
        return f"<prompt {self.name!r} -> {self.inner!r}>"

    @property
    def tags(self) -> frozenset[str]:
        return self.inner.tags

    @property
    def cache_hint(self) -> CacheHint | None:
        return self.inner.cache_hint

    def definition(self) -> Prompt:
        source = self.inner.definition()
        cached = self._definition
        if cached is None or cached[0] is not source:
            cached = self._definition = (source, attrs.evolve(source, name=self.name))
        return cached[1]

    async def get(self, arguments: Mapping[str, str] | None, ctx: Context) -> GetPromptResult:
        return await self.inner.get(arguments, ctx)


class _Views:
    """One view per component and name, kept while the component is served (a list
    request allocates nothing for components seen before). Keyed by ``id``: a view holds
    its component, so the id cannot be reused while the entry lives; entries of
    components no longer served are dropped when they outnumber the served ones."""

    def __init__(self) -> None:
        self._views: dict[int, Any] = {}

    def of(self, kind: Kind, inner: Any, name: str) -> Any:
        view = self._views.get(id(inner))
        if view is None or view.name != name:
            view = self._views[id(inner)] = _view(kind, inner, name)
        return view

    def all_of(self, kind: Kind, items: Sequence[Any], name: Callable[[Any], str]) -> list[Any]:
        views = self._views
        if len(views) > 2 * len(items) + 64:  # many components came and went: forget them
            self._views = views = {id(item): views[id(item)] for item in items if id(item) in views}
        found: list[Any] = []
        for item in items:
            view = views.get(id(item))
            wanted = name(item)
            if view is None or view.name != wanted:
                view = views[id(item)] = _view(kind, item, wanted)
            found.append(view)
        return found


def _view(kind: Kind, inner: Any, name: str) -> Any:
    return _ToolView(inner, name) if kind == "tools" else _PromptView(inner, name)


def _check_name(kind: Kind, name: object) -> str:
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"Invalid {kind[:-1]} name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
        )
    return name


class Namespace(Transform):
    """Serve tools and prompts as ``{prefix}{separator}{name}`` (``kinds`` says which);
    the old names are unknown. Resources keep their URIs."""

    def __init__(
        self, prefix: str, *, separator: str = "_", kinds: Iterable[Kind] = ("tools", "prompts")
    ) -> None:
        if not isinstance(prefix, str) or not PREFIX.fullmatch(prefix):
            raise ValueError(
                f"Invalid namespace prefix {prefix!r}: use 1-64 letters, digits, '_', '-' or "
                "'.', starting with a letter or digit"
            )
        if separator not in ("_", "-", ".", ""):
            raise ValueError(f"separator must be '_', '-', '.' or '', not {separator!r}")
        self.kinds = _names_only(kinds, "Namespace")
        self.prefix = prefix
        self.start = prefix + separator
        self._views = _Views()

    def __repr__(self) -> str:
        return f"Namespace({self.prefix!r})"

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        items = below.components(kind, ctx)
        if kind not in self.kinds:
            return items
        start = self.start
        return self._views.all_of(kind, items, lambda item: start + item.name)

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        if kind not in self.kinds:
            return below.component(kind, key, ctx)
        if not key.startswith(self.start):
            return None
        inner = below.component(kind, key[len(self.start) :], ctx)
        return None if inner is None else self._views.of(kind, inner, key)


class Rename(Transform):
    """Serve the tools (and prompts) named in ``tools`` (``prompts``) under new names:
    ``Rename(tools={"getPetById": "get_pet"})``. An old name is then unknown; names not
    mentioned pass through."""

    def __init__(
        self, tools: Mapping[str, str] | None = None, prompts: Mapping[str, str] | None = None
    ) -> None:
        self._names: dict[str, dict[str, str]] = {}
        self._reverse: dict[str, dict[str, str]] = {}
        given_names: tuple[tuple[Kind, Mapping[str, str] | None], ...] = (
            ("tools", tools),
            ("prompts", prompts),
        )
        for kind, given in given_names:
            names = {old: _check_name(kind, new) for old, new in (given or {}).items()}
            reverse = {new: old for old, new in names.items()}
            if len(reverse) != len(names):
                raise ValueError(f"Rename gives two {kind} the same name: {names}")
            self._names[kind], self._reverse[kind] = names, reverse
        self._views = _Views()

    def __repr__(self) -> str:
        return f"Rename(tools={self._names['tools']!r}, prompts={self._names['prompts']!r})"

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        items = below.components(kind, ctx)
        names = self._names.get(kind)
        if not names:
            return items
        return [
            self._views.of(kind, item, names[item.name]) if item.name in names else item
            for item in items
        ]

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        names = self._names.get(kind)
        if not names:
            return below.component(kind, key, ctx)
        old = self._reverse[kind].get(key)
        if old is not None:
            inner = below.component(kind, old, ctx)
            return None if inner is None else self._views.of(kind, inner, key)
        if key in names:
            return None  # renamed away
        return below.component(kind, key, ctx)


def _names_only(kinds: Iterable[Kind], what: str) -> frozenset[Kind]:
    chosen = frozenset(kinds)
    if not chosen <= {"tools", "prompts"}:
        raise ValueError(f"{what} applies to tools and prompts, not {sorted(chosen)}")
    return chosen


# --- selecting --------------------------------------------------------------------------


class _Selection(Transform):
    """Components chosen by key (name, URI, URI template) or tag, among ``kinds``."""

    keep_chosen: bool = False

    def __init__(self, *keys: str, tags: Iterable[str] = (), kinds: Iterable[Kind] = KINDS) -> None:
        self.keys = frozenset(keys)
        self.tags = frozenset(tags)
        self.kinds = frozenset(kinds)
        unknown = self.kinds - set(KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}: use {', '.join(KINDS)}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(keys={sorted(self.keys)}, tags={sorted(self.tags)})"

    def _chosen(self, kind: Kind, item: Any) -> bool:
        return key_of(kind, item) in self.keys or not self.tags.isdisjoint(
            getattr(item, "tags", ())
        )

    def _served(self, kind: Kind, item: Any) -> bool:
        return kind not in self.kinds or self._chosen(kind, item) == self.keep_chosen

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        items = below.components(kind, ctx)
        if kind not in self.kinds:
            return items
        return [item for item in items if self._served(kind, item)]

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        item = below.component(kind, key, ctx)
        return item if item is None or self._served(kind, item) else None


class Hide(_Selection):
    """Leave out the components named (tool or prompt name, resource URI, template) or
    tagged with any of ``tags``, among ``kinds``: not listed, and unknown to calls, reads
    and gets."""


class Show(_Selection):
    """Keep only the components named or tagged with any of ``tags``, among ``kinds``
    (other kinds pass untouched); the rest is left out as by :class:`Hide`."""

    keep_chosen = True


#: ``rule(principal, kind, component) -> bool``: whether the caller may see and use it.
VisibilityRule = Callable[[Hashable | None, Kind, Any], bool]


def scope_rule(principal: Hashable | None, kind: Kind, component: Any) -> bool:
    """The default :class:`Visibility` rule: the scope rules of the server's
    ``ProtectedResource`` (``tool_scopes``, ``prompt_scopes``, ``resource_scopes``) for
    the caller's token. Templates and callers without a token pass."""
    method = _METHOD.get(kind)
    if method is None or not isinstance(principal, AuthInfo):
        return True
    return principal.allows(method, key_of(kind, component))


class Visibility(Transform):
    """Per caller: components ``rule`` refuses are not listed to that caller and unknown
    to its calls, reads and gets. The default rule is the server's scope rules
    (:func:`scope_rule`), so a caller sees exactly what its token may use, whether or
    not the ``ProtectedResource`` says ``hide_unauthorized``. Outside a request (``ctx``
    None) everything passes."""

    per_principal = True

    def __init__(self, rule: VisibilityRule = scope_rule) -> None:
        self.rule = rule

    def __repr__(self) -> str:
        return f"Visibility({getattr(self.rule, '__name__', self.rule)!r})"

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        items = below.components(kind, ctx)
        if ctx is None:
            return items
        principal, rule = ctx.principal, self.rule
        return [item for item in items if rule(principal, kind, item)]

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        item = below.component(kind, key, ctx)
        if item is None or ctx is None or self.rule(ctx.principal, kind, item):
            return item
        return None


# --- tool search ------------------------------------------------------------------------

#: The most results one search returns, whatever it asks for.
MAX_SEARCH_RESULTS: Final = 50


class ToolSearch(Transform):
    """For catalogs too large to list: ``tools/list`` shows a search tool and a call tool
    (plus the tools named in ``keep``); every tool below stays callable by its own name.

    ``search_tools(query, limit?)`` ranks the tools the caller may use by the words of
    ``query`` against their names, titles, descriptions and argument names
    (:mod:`trimcp.server.ranking`, BM25) and returns up to ``limit`` (default
    ``max_results``, at most 50), each with its input schema. ``call_tool(name,
    arguments)`` calls one of them, with the caller's scopes checked for that tool, in
    the request's task and cancel scope (its progress, logging and input requests are
    the call's own). A tool that must run as a task is called by its own name.

    Lists change with the tools below: ``notifications/tools/list_changed`` still
    reaches 2025-era sessions when they change (the results of a search would), and the
    listed tools' cache hints are the search tools' (the server's defaults).
    """

    def __init__(
        self,
        *,
        max_results: int = 5,
        keep: Iterable[str] = (),
        search_tool: str = "search_tools",
        call_tool: str = "call_tool",
    ) -> None:
        if isinstance(max_results, bool) or not 1 <= max_results <= MAX_SEARCH_RESULTS:
            raise ValueError(f"max_results must be 1-{MAX_SEARCH_RESULTS}, not {max_results!r}")
        if search_tool == call_tool:
            raise ValueError("the search tool and the call tool need different names")
        self.max_results = max_results
        self.keep = frozenset(keep)
        self.search_name = _check_name("tools", search_tool)
        self.call_name = _check_name("tools", call_tool)
        self._search_definition = _search_definition(self.search_name, self.call_name, max_results)
        self._call_definition = _call_definition(self.call_name, self.search_name)
        self._bound: tuple[Layer, SchemaTool, SchemaTool] | None = None
        self._index: tuple[tuple[Tool, ...], ToolIndex] | None = None

    def __repr__(self) -> str:
        return f"ToolSearch(max_results={self.max_results}, keep={sorted(self.keep)})"

    def _tools(self, below: Layer) -> tuple[SchemaTool, SchemaTool]:
        bound = self._bound
        if bound is None or bound[0] is not below:

            async def search(arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
                return self._search(arguments, below, ctx)

            async def call(arguments: dict[str, Any], ctx: Context) -> Any:
                return await self._call(arguments, below, ctx)

            bound = self._bound = (
                below,
                SchemaTool(self._search_definition, search),
                SchemaTool(self._call_definition, call),
            )
        return bound[1], bound[2]

    def components(self, kind: Kind, below: Layer, ctx: RequestContext | None) -> Sequence[Any]:
        if kind != "tools":
            return below.components(kind, ctx)
        own = self._tools(below)
        mine = (self.search_name, self.call_name)
        kept = [
            tool
            for tool in below.components(kind, ctx)
            if tool.name in self.keep and tool.name not in mine
        ]
        return [*own, *kept]

    def component(
        self, kind: Kind, key: str, below: Layer, ctx: RequestContext | None
    ) -> Any | None:
        if kind == "tools" and key in (self.search_name, self.call_name):
            search, call = self._tools(below)
            return search if key == self.search_name else call
        return below.component(kind, key, ctx)

    def _usable(self, below: Layer, ctx: Context) -> list[Tool]:
        """The definitions of the tools the caller may use (its scopes, when its token
        comes with rules), the search tools left out."""
        version = ctx.protocol_version
        auth = ctx.auth
        mine = (self.search_name, self.call_name)
        return [
            tool.definition(version)
            for tool in below.components("tools", ctx.request_context)
            if tool.name not in mine and (auth is None or auth.allows("tools/call", tool.name))
        ]

    def _search(self, arguments: Mapping[str, Any], below: Layer, ctx: Context) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query: give a few words saying what the tool should do")
        limit = arguments.get("limit", self.max_results)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ToolError(f"limit: a whole number from 1 to {MAX_SEARCH_RESULTS}")
        tools = tuple(self._usable(below, ctx))
        index = self._index
        if index is None or index[0] != tools:  # Tool compares by identity: cheap
            index = self._index = (tools, ToolIndex(tools))
        found = index[1].search(query, min(limit, MAX_SEARCH_RESULTS))
        return {"tools": [describe(tool) for tool, _ in found]}

    async def _call(self, arguments: Mapping[str, Any], below: Layer, ctx: Context) -> Any:
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise ToolError(f"name: the name of a tool, as {self.search_name} returned it")
        given = arguments.get("arguments")
        if given is not None and not isinstance(given, Mapping):
            raise ToolError("arguments: an object holding the tool's arguments")
        if name in (self.search_name, self.call_name):
            raise ToolError(f"{name!r} is called directly, not through {self.call_name}")
        tool = below.component("tools", name, ctx.request_context)
        if tool is None:
            raise ToolError(
                f"Unknown tool {name[:200]!r}: call {self.search_name} to find tools by words"
            )
        auth = ctx.auth
        if auth is not None and not auth.allows("tools/call", name):
            needed = " ".join(sorted(_needed(auth, name)))
            raise ToolError(f"Tool {name[:200]!r} needs scope {needed}; your token lacks it")
        return await tool.run(given, ctx)


def _needed(auth: AuthInfo, name: str) -> Collection[str]:
    rules = auth.rules
    return (rules("tools/call", name) - auth.scopes) if rules is not None else ()


def _search_definition(name: str, call_name: str, max_results: int) -> Tool:
    found = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "inputSchema": {"type": "object"},
        },
        "required": ["name", "inputSchema"],
    }
    return Tool(
        name=name,
        title="Search tools",
        description=(
            "Find the tools for a task: give a few words saying what you want to do. Returns "
            f"the best matching tools with their input schemas; call one with {call_name}, "
            "or directly by its name."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what the tool should do"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_RESULTS,
                    "description": f"how many tools to return (default {max_results})",
                },
            },
            "required": ["query"],
        },
        output_schema={
            "type": "object",
            "properties": {"tools": {"type": "array", "items": found}},
            "required": ["tools"],
        },
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )


def _call_definition(name: str, search_name: str) -> Tool:
    return Tool(
        name=name,
        title="Call a tool",
        description=(
            f"Call a tool found with {search_name}: its name and its arguments (an object "
            "matching its input schema)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name"},
                "arguments": {"type": "object", "description": "the tool's arguments"},
            },
            "required": ["name"],
        },
    )
