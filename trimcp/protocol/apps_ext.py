"""The MCP Apps extension (``io.modelcontextprotocol/ui``, SEP-1865), as data.

Sans-IO. A tool names, in ``_meta.ui.resourceUri``, a ``ui://`` resource holding an HTML
page (MIME type ``text/html;profile=mcp-app``); a host that declared the extension reads
that resource, renders it in a sandboxed frame and relays the page's JSON-RPC requests
(``tools/call``, ``resources/read``, ...) to the server. The resource's ``_meta.ui`` tells
the host which origins the page may reach (the content security policy), which browser
permissions it would like, and how to frame it. Nothing here changes the core protocol:
the extension adds metadata, a URI scheme and a MIME type, no method the server answers.

The metadata classes below are written and read by hand (not by the wire converter)
because the host side must tolerate what it does not know: :meth:`ToolUi.from_meta` and
:meth:`UiResourceMeta.from_meta` skip malformed fields rather than fail a listing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
"""The extension's identifier (in ``capabilities.extensions``)."""

MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of an app page (the only one the extension defines so far)."""

SCHEME: Final = "ui://"
"""Every app resource's URI starts with this."""

META_KEY: Final = "ui"
"""The ``_meta`` key of a tool's and a resource's app metadata."""

LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"
"""The flat ``_meta`` key early hosts and servers used; read, never written."""

Visibility = Literal["model", "app"]
"""Who may call a tool: the model (listed to the agent) and/or the app (from its page)."""

Permission = Literal["camera", "microphone", "geolocation", "clipboard_write"]
"""A browser permission an app page may ask for."""

_PERMISSION_WIRE: Final[dict[str, str]] = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboardWrite",
}
_PERMISSION_POLICY: Final[dict[str, str]] = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboard-write",
}


def client_settings(mime_types: Iterable[str] = (MIME_TYPE,)) -> dict[str, Any]:
    """What a host declares under the extension: the page types it can render."""
    return {"mimeTypes": list(mime_types)}


def declared_settings(capabilities: Any) -> dict[str, Any] | None:
    """The extension's settings in ``capabilities`` (wire form or typed), or None."""
    if capabilities is None:
        return None
    extensions = (
        capabilities.get("extensions")
        if isinstance(capabilities, Mapping)
        else getattr(capabilities, "extensions", None)
    )
    if not isinstance(extensions, Mapping):
        return None
    settings = extensions.get(EXTENSION_ID)
    return dict(settings) if isinstance(settings, Mapping) else None


def renders_pages(capabilities: Any) -> bool:
    """Whether client ``capabilities`` declare the extension with the app page MIME type."""
    settings = declared_settings(capabilities)
    if settings is None:
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and MIME_TYPE in mime_types


def is_ui_uri(uri: str) -> bool:
    """Whether ``uri`` is an app resource's (``ui://...``, scheme in any case)."""
    return uri[: len(SCHEME)].lower() == SCHEME and len(uri) > len(SCHEME)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str))
    return ()


# --- content security policy sources --------------------------------------------------------

#: One DNS label: letters, digits and inner hyphens (CSP's host-char, nothing else).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#: An origin a page may use, as the spec's examples write them: scheme, host (its first
#: label may be ``*``), optional port. A subset of CSP's host-source with no path: nothing
#: in it can end a source (a space), a directive (``;``) or a header line (CR LF), quote
#: a keyword (``'unsafe-eval'``) or widen it to every host (``*``, ``https:``).
_ORIGIN = re.compile(
    rf"(?:https?|wss?)://(?P<host>(?:\*\.)?{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[0-9]{{1,5}}))?",
    re.ASCII | re.IGNORECASE,
)
#: A host name is at most 253 characters (DNS).
_MAX_HOST = 253
#: How much of a refused value a message or a log line repeats.
_SHOWN = 100
#: Refused values :attr:`Csp.refused` names one by one (the rest are counted).
_NAMED_REFUSALS = 20

#: The :class:`Csp` fields and their wire names.
CSP_FIELDS: Final[dict[str, str]] = {
    "connect_domains": "connectDomains",
    "resource_domains": "resourceDomains",
    "frame_domains": "frameDomains",
    "base_uri_domains": "baseUriDomains",
}


def csp_source_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a source of an app page's policy, or None when it is an
    origin: ``http``, ``https``, ``ws`` or ``wss``, ``://``, a host whose first label may
    be ``*`` (``https://*.example.com``), an optional port, and nothing else (no path)."""
    if not isinstance(value, str):
        return f"not a string ({type(value).__name__})"
    found = _ORIGIN.fullmatch(value)
    if found is None:
        return "not an origin"
    if len(found["host"]) > _MAX_HOST:
        return f"not an origin (a host name has at most {_MAX_HOST} characters)"
    if found["port"] is not None and not 0 < int(found["port"]) < 65536:
        return "not an origin (a port is 1-65535)"
    return None


def _shown(value: Any) -> str:
    """``value`` as a message repeats it: quoted and escaped (so a CR LF cannot start a
    log line), cut to a readable length."""
    return repr(value[:_SHOWN]) if isinstance(value, str) else repr(value)[:_SHOWN]


def _sources(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        return tuple(value)
    raise TypeError(f"CSP sources are a list of origins, got {_shown(value)}")


def _origins_only(instance: Any, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
    for item in value:
        problem = csp_source_problem(item)
        if problem is not None:
            raise ValueError(
                f"{attribute.name}: {_shown(item)} is {problem}: an app page's CSP names "
                "origins, scheme://host[:port] (http, https, ws or wss; the host may start "
                "with '*.'; no path, space, ';', ',' or quote)"
            )


@attrs.frozen(kw_only=True)
class Csp:
    """The origins an app page may use; a host allows these and nothing more.

    Empty lists are the secure default: no network, no outside scripts or styles, no
    nested frames, base URI only the page's own. Every source is an origin,
    ``scheme://host[:port]`` (see :func:`csp_source_problem`): building a ``Csp`` with
    anything else raises ``ValueError`` naming it, and :meth:`from_wire` drops it and
    names it in :attr:`refused`, so no declared string can change the policy's grammar.
    """

    #: fetch/XHR/WebSocket targets (``connect-src``)
    connect_domains: tuple[str, ...] = attrs.field(
        default=(), converter=_sources, validator=_origins_only
    )
    #: scripts, styles, images, fonts, media (``script-src``, ``style-src``, ...)
    resource_domains: tuple[str, ...] = attrs.field(
        default=(), converter=_sources, validator=_origins_only
    )
    #: nested frames (``frame-src``)
    frame_domains: tuple[str, ...] = attrs.field(
        default=(), converter=_sources, validator=_origins_only
    )
    #: ``<base href>`` targets (``base-uri``)
    base_uri_domains: tuple[str, ...] = attrs.field(
        default=(), converter=_sources, validator=_origins_only
    )
    #: what :meth:`from_wire` dropped, each as ``wireName 'value'`` (the first 20, then
    #: ``and N more``; not compared)
    refused: tuple[str, ...] = attrs.field(default=(), eq=False, converter=_strings)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        for field, key in CSP_FIELDS.items():
            values = getattr(self, field)
            if values:
                wire[key] = list(values)
        return wire

    @classmethod
    def from_wire(cls, value: Any) -> Csp:
        """The policy a server declared, keeping its origins only: anything else (not a
        string, or not ``scheme://host[:port]``) is dropped and named in
        :attr:`refused`. Dropping a source only makes the page's policy stricter."""
        if not isinstance(value, Mapping):
            return cls(refused=(f"csp {_shown(value)}",))
        kept: dict[str, list[str]] = {}
        refused: list[str] = []
        dropped = 0

        def refuse(key: str, item: Any) -> None:
            nonlocal dropped
            dropped += 1
            if dropped <= _NAMED_REFUSALS:  # a flood of junk is counted, not copied
                refused.append(f"{key} {_shown(item)}")

        for field, key in CSP_FIELDS.items():
            declared = value.get(key, ())
            items = (declared,) if isinstance(declared, str) else declared
            if not isinstance(items, list | tuple):
                refuse(key, declared)
                continue
            kept[field] = []
            for item in items:
                if csp_source_problem(item) is None:
                    kept[field].append(item)
                else:
                    refuse(key, item)
        if dropped > _NAMED_REFUSALS:
            refused.append(f"and {dropped - _NAMED_REFUSALS} more")
        return cls(**kept, refused=tuple(refused))

    def header(self) -> str:
        """The ``Content-Security-Policy`` a host applies to the page (the spec's
        construction: nothing by default, inline script and style allowed)."""
        resources = " ".join(self.resource_domains)
        frames = " ".join(self.frame_domains) or "'none'"
        bases = " ".join(self.base_uri_domains) or "'self'"

        def directive(name: str, base: str, extra: str) -> str:
            return f"{name} {base} {extra}".rstrip()

        return "; ".join(
            [
                "default-src 'none'",
                directive("script-src", "'self' 'unsafe-inline'", resources),
                directive("style-src", "'self' 'unsafe-inline'", resources),
                directive("connect-src", "'self'", " ".join(self.connect_domains)),
                directive("img-src", "'self' data:", resources),
                directive("font-src", "'self'", resources),
                directive("media-src", "'self' data:", resources),
                f"frame-src {frames}",
                "object-src 'none'",
                f"base-uri {bases}",
            ]
        )


def _permissions(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        value = (value,)
    chosen = frozenset(value)
    unknown = chosen - _PERMISSION_WIRE.keys()
    if unknown:
        raise ValueError(
            f"Unknown app permission(s) {', '.join(sorted(unknown))}: use "
            f"{', '.join(sorted(_PERMISSION_WIRE))}"
        )
    return chosen


@attrs.frozen(kw_only=True)
class UiResourceMeta:
    """An app resource's ``_meta.ui``: security policy and framing preferences."""

    #: the origins the page may use (None: the host's restrictive default)
    csp: Csp | None = None
    #: browser permissions the page asks for (a host may refuse; feature-detect in JS)
    permissions: frozenset[str] = attrs.field(default=frozenset(), converter=_permissions)
    #: a dedicated sandbox origin, in the form the host documents
    domain: str | None = None
    #: True: ask for a visible border and background; False: none; None: host decides
    prefers_border: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        if self.csp is not None:
            wire["csp"] = self.csp.to_wire()
        if self.permissions:
            wire["permissions"] = {_PERMISSION_WIRE[name]: {} for name in sorted(self.permissions)}
        if self.domain is not None:
            wire["domain"] = self.domain
        if self.prefers_border is not None:
            wire["prefersBorder"] = self.prefers_border
        return wire

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> UiResourceMeta:
        """Read from a resource's (or its contents') ``_meta``; malformed fields are
        skipped."""
        ui = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        if not isinstance(ui, Mapping):
            return cls()
        wire_permissions = ui.get("permissions")
        permissions = (
            [
                name
                for name, key in _PERMISSION_WIRE.items()
                if isinstance(wire_permissions.get(key), Mapping)
            ]
            if isinstance(wire_permissions, Mapping)
            else []
        )
        domain = ui.get("domain")
        border = ui.get("prefersBorder")
        return cls(
            csp=Csp.from_wire(ui["csp"]) if "csp" in ui else None,
            permissions=permissions,
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
        )

    def allow_attribute(self) -> str:
        """The frame's ``allow`` attribute granting the asked permissions (Permission
        Policy names, ``;``-separated)."""
        return "; ".join(_PERMISSION_POLICY[name] for name in sorted(self.permissions))


def _visibility(value: Iterable[str] | None) -> tuple[Visibility, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    chosen: list[Visibility] = []
    for item in dict.fromkeys(value):
        if item == "model":
            chosen.append("model")
        elif item == "app":
            chosen.append("app")
        else:
            raise ValueError(f"Unknown tool visibility {item!r}: use 'model' and/or 'app'")
    if not chosen:
        raise ValueError("A tool's visibility needs 'model', 'app' or both")
    return tuple(chosen)


@attrs.frozen
class ToolUi:
    """A tool's ``_meta.ui``: the app page that renders its results, and who may call it.

    ``visibility`` None means the default, both the model and the app; ``("app",)`` hides
    the tool from the agent (a host lists it only to the page).
    """

    resource_uri: str
    visibility: tuple[Visibility, ...] | None = attrs.field(
        default=None, converter=_visibility, kw_only=True
    )

    def __attrs_post_init__(self) -> None:
        if not is_ui_uri(self.resource_uri):
            raise ValueError(
                f"An app resource URI starts with {SCHEME!r}: got {self.resource_uri!r}"
            )

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"resourceUri": self.resource_uri}
        if self.visibility is not None:
            wire["visibility"] = list(self.visibility)
        return wire

    @property
    def model_visible(self) -> bool:
        """Whether a host may list the tool to the agent."""
        return self.visibility is None or "model" in self.visibility

    @property
    def app_callable(self) -> bool:
        """Whether a host may let the app page call the tool."""
        return self.visibility is None or "app" in self.visibility

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> ToolUi | None:
        """Read from a tool's ``_meta`` (also the deprecated flat ``ui/resourceUri``);
        None when it names no usable app resource."""
        if not isinstance(meta, Mapping):
            return None
        ui = meta.get(META_KEY)
        uri: Any = ui.get("resourceUri") if isinstance(ui, Mapping) else None
        if not isinstance(uri, str):
            uri = meta.get(LEGACY_RESOURCE_URI_KEY)
        if not isinstance(uri, str) or not is_ui_uri(uri):
            return None
        raw = ui.get("visibility") if isinstance(ui, Mapping) else None
        known = [v for v in _strings(raw) if v in ("model", "app")] if raw is not None else None
        return cls(uri, visibility=known or None)


def tool_meta(ui: ToolUi | str, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool's ``_meta`` with ``ui`` set from ``ui`` (a URI or a :class:`ToolUi`); a
    ``ui`` key already in ``meta`` is refused, so the two cannot disagree."""
    if isinstance(ui, str):
        ui = ToolUi(ui)
    elif not isinstance(ui, ToolUi):
        raise TypeError(f"ui= takes a 'ui://...' URI or a ToolUi, got {ui!r}")
    merged = dict(meta or {})
    if META_KEY in merged:
        raise ValueError(
            "Give the tool's app page either as ui= or as meta['ui'], not both: drop "
            "meta['ui'] and pass ui=ToolUi(...)"
        )
    merged[META_KEY] = ui.to_wire()
    return merged
