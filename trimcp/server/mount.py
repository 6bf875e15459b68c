"""Composition: one server's tools, resources, templates, prompts and completions served
by another under a prefix (``app.mount(other, prefix="weather")``).

Names: a tool or prompt ``name`` becomes ``{prefix}_{name}``; a resource URI or template
``scheme://rest`` becomes ``scheme://{prefix}/rest`` (a URI without ``://`` becomes
``{prefix}:{uri}``). Calls, reads and gets run the mounted server's own function with a
:class:`~trimcp.server.context.Context` of the mounted server (its ``ctx.lifespan``, its
``mask_error_details``), in the request's task and cancel scope, through the *mounting*
server's middleware (the mounted server's own middleware applies only when it is served by
itself). Returned resource contents carry the prefixed URI.

A mounted server is a provider of the mounting one (:class:`Mount`, see
:mod:`trimcp.server.providers`): it serves the mounted server's own components (its
decorated ones and, in turn, those of the servers mounted into it; not its other
providers) after the mounting server's own, so listing, pagination, scopes, cache hints and
``list_changed`` apply to them as to any provider's. A name or URI the mounting server
serves already when mounting is refused (``ValueError``); one that collides later is
served by whoever came first (the mounting server's own components first).

Lifespans: the mounted server's lifespan is entered with the mounting server's, once (and
shared with any other serving loop that enters it). List changes: adding, removing,
enabling or disabling anything on the mounted server afterwards updates the mounting
server, whose sessions get ``notifications/*/list_changed``; its
``notify_resource_updated(uri)`` reaches the subscribers of the prefixed URI. Completers
registered on the mounted server, before ``mount`` or after it, are carried over under
the new names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from trimcp.server.context import Context
from trimcp.server.prompts import RegisteredPrompt
from trimcp.server.providers import KINDS, Kind, Provider
from trimcp.server.resources import RegisteredResource, RegisteredTemplate
from trimcp.server.tools import RegisteredTool
from trimcp.server.uri_template import UriTemplate

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.types import GetPromptResult, ResourceContents

PREFIX: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def prefixed_uri(prefix: str, uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    if sep:
        return f"{scheme}://{prefix}/{rest}"
    return f"{prefix}:{uri}"


def unprefixed_uri(prefix: str, uri: str) -> str | None:
    """The mounted server's URI for ``uri``, or None when ``uri`` is not under ``prefix``."""
    scheme, sep, rest = uri.partition("://")
    if sep:
        head, slash, tail = rest.partition("/")
        return f"{scheme}://{tail}" if slash and head == prefix else None
    start = f"{prefix}:"
    return uri[len(start) :] if uri.startswith(start) else None


def _copy(cls: type[Any], source: Any) -> Any:
    mirror = object.__new__(cls)
    mirror.__dict__.update(source.__dict__)
    mirror._source = source
    return mirror


def _child_context(child: Server, ctx: Context) -> Context:
    return Context(child, ctx.request_context)


class MountedTool(RegisteredTool[..., Any]):
    """A mounted server's tool as the mounting server lists and calls it."""

    _source: RegisteredTool[..., Any]
    _child: Server

    @classmethod
    def of(cls, source: RegisteredTool[..., Any], child: Server, name: str) -> MountedTool:
        mirror: MountedTool = _copy(cls, source)
        mirror._child = child
        mirror.name = name
        mirror._tool = attrs.evolve(source.definition(), name=name)
        mirror._legacy_tool = None
        return mirror

    def __repr__(self) -> str:
        return f"<MountedTool {self.name!r} -> {self._source!r}>"

    async def run(self, arguments: Any, ctx: Context) -> Any:
        return await self._source.run(arguments, _child_context(self._child, ctx))


class MountedPrompt(RegisteredPrompt):
    _source: RegisteredPrompt
    _child: Server

    @classmethod
    def of(cls, source: RegisteredPrompt, child: Server, name: str) -> MountedPrompt:
        mirror: MountedPrompt = _copy(cls, source)
        mirror._child = child
        mirror.name = name
        mirror._prompt = attrs.evolve(source.definition(), name=name)
        return mirror

    def __repr__(self) -> str:
        return f"<MountedPrompt {self.name!r} -> {self._source!r}>"

    async def get(self, arguments: Any, ctx: Context) -> GetPromptResult:
        return await self._source.get(arguments, _child_context(self._child, ctx))


def _relabel(contents: list[Any], uri: str) -> list[Any]:
    return [
        attrs.evolve(c, uri=uri) if getattr(c, "uri", None) is not None else c for c in contents
    ]


class MountedResource(RegisteredResource):
    _source: RegisteredResource
    _child: Server

    @classmethod
    def of(cls, source: RegisteredResource, child: Server, prefix: str) -> MountedResource:
        mirror: MountedResource = _copy(cls, source)
        mirror._child = child
        mirror.uri = prefixed_uri(prefix, source.uri)
        return mirror

    async def read(self, uri: str, ctx: Context) -> list[ResourceContents]:
        contents = await self._source.read(self._source.uri, _child_context(self._child, ctx))
        return _relabel(contents, uri)


class MountedTemplate(RegisteredTemplate):
    _source: RegisteredTemplate
    _child: Server
    _prefix: str

    @classmethod
    def of(cls, source: RegisteredTemplate, child: Server, prefix: str) -> MountedTemplate:
        mirror: MountedTemplate = _copy(cls, source)
        mirror._child = child
        mirror._prefix = prefix
        mirror.template = UriTemplate(prefixed_uri(prefix, source.uri_template))
        return mirror

    def match(self, uri: str) -> dict[str, Any] | None:
        inner = unprefixed_uri(self._prefix, uri)
        return None if inner is None else self._source.match(inner)

    async def read(self, uri: str, kwargs: dict[str, Any], ctx: Context) -> list[Any]:
        inner = unprefixed_uri(self._prefix, uri)
        assert inner is not None
        contents = await self._source.read(inner, kwargs, _child_context(self._child, ctx))
        return _relabel(contents, uri)


class Mount(Provider):
    """One server mounted into another: a provider of the mounted server's components
    under the prefix (see the module docstring), its mirrors rebuilt when the mounted
    server changes (:meth:`sync`, one of its change listeners)."""

    def __init__(self, parent: Server, child: Server, prefix: str) -> None:
        if not PREFIX.fullmatch(prefix):
            raise ValueError(
                f"Invalid mount prefix {prefix!r}: use 1-64 letters, digits, '_', '-' or '.', "
                "starting with a letter or digit"
            )
        if child is parent:
            raise ValueError("A server cannot be mounted into itself")
        self.parent = parent
        self.child = child
        self.prefix = prefix
        self._mirrors: dict[Kind, dict[str, Any]] = {kind: {} for kind in KINDS}
        self._listed: dict[Kind, list[Any]] = {kind: [] for kind in KINDS}
        for kind in KINDS:
            self._mirror_all(kind)

    def __repr__(self) -> str:
        return f"<Mount {self.prefix!r} -> {self.child!r}>"

    def name(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def components(self, kind: Kind) -> Sequence[Any]:
        return self._listed[kind]

    def component(self, kind: Kind, key: str) -> Any | None:
        return self._mirrors[kind].get(key)

    def keys(self, kind: Kind) -> list[str]:
        """The names or URIs this mount serves ``kind`` under."""
        return list(self._mirrors[kind])

    def sync(self, kind: str) -> None:
        """Mirror the mounted server's ``kind`` components again (templates with
        resources) and tell the servers serving this provider."""
        kinds: tuple[Kind, ...] = (
            ("resources", "templates") if kind in ("resources", "templates") else (_kind(kind),)
        )
        for each in kinds:
            self._mirror_all(each)
            self.changed(each)

    def _mirror_all(self, kind: Kind) -> None:
        mirrors: dict[str, Any] = {}
        for source in self.child.own_components(kind):
            mirror, key = self._mirror(kind, source)
            mirrors.setdefault(key, mirror)
        self._mirrors[kind] = mirrors
        self._listed[kind] = list(mirrors.values())

    def _mirror(self, kind: Kind, source: Any) -> tuple[Any, str]:
        child, prefix = self.child, self.prefix
        if kind == "tools":
            tool = MountedTool.of(source, child, self.name(source.name))
            return tool, tool.name
        if kind == "prompts":
            prompt = MountedPrompt.of(source, child, self.name(source.name))
            return prompt, prompt.name
        if kind == "resources":
            resource = MountedResource.of(source, child, prefix)
            return resource, resource.uri
        template = MountedTemplate.of(source, child, prefix)
        return template, template.uri_template

    def copy_completers(self) -> None:
        """Mirror the mounted server's completers here (at mount, and after each one it
        adds later: this is one of its completion registry's listeners)."""
        theirs, ours = self.child.completions, self.parent.completions
        arguments = {
            (kind, self._key(kind, key), argument): completer
            for (kind, key, argument), completer in theirs._arguments.items()
        }
        refs = {
            (kind, self._key(kind, key)): completer
            for (kind, key), completer in theirs._refs.items()
        }
        ours.adopt(arguments, refs)

    def _key(self, kind: str, key: str) -> str:
        return self.name(key) if kind == "prompt" else prefixed_uri(self.prefix, key)


def _kind(kind: str) -> Kind:
    for known in KINDS:
        if known == kind:
            return known
    raise ValueError(f"not a kind of component: {kind!r}")


class Composition:
    """Where one server sits among mounted servers: the mounts serving other servers'
    components in it (:attr:`mounts`, in mount order) and the mounts serving its own
    components elsewhere (:attr:`mounted_into`: they hear its list changes and its
    resource updates)."""

    __slots__ = ("mounted_into", "mounts")

    def __init__(self) -> None:
        self.mounts: list[Mount] = []
        self.mounted_into: list[Mount] = []

    def servers(self) -> list[Server]:
        """The servers mounted into this one (directly), in mount order."""
        return [mount.child for mount in self.mounts]

    def below(self) -> list[Server]:
        """Every server mounted into this one, directly or through others."""
        found: list[Server] = []
        for child in self.servers():
            found.append(child)
            found.extend(child.mounted_servers(deep=True))
        return found

    def components(self, kind: Kind) -> list[Any]:
        """The components the mounts serve in this server, in mount order."""
        return [item for mount in self.mounts for item in mount.components(kind)]

    def changed(self, kind: str) -> None:
        """This server's ``kind`` list changed: the mounts serving it elsewhere follow."""
        for mount in self.mounted_into:
            mount.sync(kind)

    async def resource_updated(self, uri: str) -> None:
        """Tell the servers this one is mounted into that ``uri`` (canonical) was updated:
        their subscribers of the prefixed URI hear it. Cancellation: stops telling."""
        for mount in self.mounted_into:
            await mount.parent.notify_resource_updated(prefixed_uri(mount.prefix, uri))
