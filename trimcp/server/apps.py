"""MCP Apps on the server: tools with an app page, the pages as ``ui://`` resources.

A tool declares its page with ``@app.tool(ui="ui://dashboard/main")`` (or a
:class:`~trimcp.protocol.apps_ext.ToolUi` to choose who may call it); the page is
registered with ``@app.ui_resource("ui://dashboard/main", csp=..., permissions=...)`` on a
function returning the HTML (often built by :func:`app_page`), or with
``app.add_ui_resource(uri, html)`` for a fixed string or a file. The server then declares
``io.modelcontextprotocol/ui`` in its capabilities (``initialize`` and
``server/discover`` alike), lists the page with the app MIME type and its ``_meta.ui``,
and puts the same ``_meta.ui`` on what ``resources/read`` returns (where hosts look for
it).

A page cannot fetch other ``ui://`` resources by URL (hosts load it from a string into a
sandboxed frame), so its scripts and styles go inline (:func:`app_page` takes them) or
come from origins declared in ``csp.resource_domains``; data comes from tool calls, or
from ``resources/read`` through the host bridge.

The tool should still answer with meaningful ``content``: a host without the extension
shows only that.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from trimcp.protocol import apps_ext
from trimcp.protocol.apps_ext import (
    MIME_TYPE,
    Csp,
    Permission,
    ToolUi,
    UiResourceMeta,
    tool_meta,
)
from trimcp.server.resources import RegisteredResource
from trimcp.types import BlobResourceContents, ResourceContents, TextResourceContents

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.server.context import Context

__all__ = [
    "Csp",
    "RegisteredUiResource",
    "ToolUi",
    "UiResourceMeta",
    "app_page",
    "client_renders_apps",
    "tool_meta",
]


def client_renders_apps(ctx: Context) -> bool:
    """Whether the client of this request declared it renders app pages (the extension
    with the app MIME type), in either era. A tool can answer differently without."""
    return apps_ext.renders_pages(ctx.client_capabilities)


def declares_extension(server: Server) -> bool:
    """Whether ``server`` has anything of the extension registered (a page or a tool
    naming one), so its capabilities declare it."""
    if any(isinstance(resource, RegisteredUiResource) for resource in server.resources):
        return True
    return any(ToolUi.from_meta(tool.definition().meta) is not None for tool in server.tools)


HtmlSource = str | Path | Callable[..., Any]


class RegisteredUiResource(RegisteredResource):
    """An app page: a ``ui://`` resource with the app MIME type and its ``_meta.ui``."""

    def __init__(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        ui: UiResourceMeta,
        mime_type: str | None = None,
        meta: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not apps_ext.is_ui_uri(uri):
            raise ValueError(
                f"An app page's URI starts with {apps_ext.SCHEME!r} (e.g. 'ui://dashboard/main'): "
                f"got {uri!r}"
            )
        if mime_type not in (None, MIME_TYPE):
            raise ValueError(
                f"An app page is served as {MIME_TYPE!r}, not {mime_type!r}: drop mime_type="
            )
        merged = dict(meta or {})
        if apps_ext.META_KEY in merged:
            raise ValueError(
                "Give an app page's settings as csp=/permissions=/domain=/prefers_border=, "
                "not as meta['ui']"
            )
        wire = ui.to_wire()
        if wire:
            merged[apps_ext.META_KEY] = wire
        super().__init__(uri, fn, mime_type=MIME_TYPE, meta=merged or None, **kwargs)
        self.ui = ui

    def __repr__(self) -> str:
        return f"<RegisteredUiResource {self.uri!r}>"

    async def read(self, uri: str, ctx: Context) -> list[Any]:
        """The page's contents, each carrying the page's ``_meta.ui`` (hosts read it from
        the contents). Cancellation: the function is cancelled with the request."""
        contents = await super().read(uri, ctx)
        return [self._with_meta(item) for item in contents]

    def _with_meta(self, item: ResourceContents) -> ResourceContents:
        if not isinstance(item, TextResourceContents | BlobResourceContents):
            return item
        if self.meta is None or (item.meta and apps_ext.META_KEY in item.meta):
            return item
        return attrs.evolve(item, meta={**(item.meta or {}), **self.meta})


def page_function(source: HtmlSource) -> Callable[..., Any]:
    """The resource function serving ``source``: a fixed string, a file (read on each
    read, off the event loop, so edits show without a restart), or a function as is."""
    if isinstance(source, str):
        text = source

        def fixed() -> str:
            return text

        return fixed
    if isinstance(source, Path):
        path = source

        async def from_file() -> str:
            return await trio.Path(path).read_text(encoding="utf-8")

        return from_file
    if callable(source):
        return source
    raise TypeError(f"An app page is HTML text, a pathlib.Path or a function, got {source!r}")


def resource_meta(
    csp: Csp | Mapping[str, Iterable[str]] | None,
    permissions: Iterable[Permission],
    domain: str | None,
    prefers_border: bool | None,
) -> UiResourceMeta:
    if isinstance(csp, Mapping):
        csp = Csp(**csp)
    return UiResourceMeta(
        csp=csp, permissions=frozenset(permissions), domain=domain, prefers_border=prefers_border
    )


# --- building a page ------------------------------------------------------------------------

#: The page side of the host bridge: JSON-RPC over postMessage with the host (the page's
#: parent frame). It performs the ``ui/initialize`` handshake, then offers
#: ``window.mcpApp``: callTool, readResource, sendMessage, openLink, log, and ``on(event,
#: fn)`` for "toolinput", "toolresult", "toolcancelled", "hostcontext" and "teardown". The
#: latest tool input and result are kept, so a handler registered late still sees them.
BRIDGE_SCRIPT = """\
(() => {
  const APP_INFO = __APP_INFO__;
  const pending = new Map();
  const listeners = {toolinput: [], toolresult: [], toolcancelled: [], hostcontext: [],
                     teardown: []};
  const latest = {};
  let nextId = 1;
  const post = (message) => window.parent.postMessage(message, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, {resolve, reject});
    post({jsonrpc: "2.0", id, method, params: params || {}});
  });
  const notify = (method, params) => post({jsonrpc: "2.0", method, params: params || {}});
  const emit = (event, value) => {
    latest[event] = value;
    for (const fn of listeners[event]) fn(value);
  };
  const answer = async (message) => {
    let result = {};
    if (message.method === "ui/resource-teardown") {
      for (const fn of listeners.teardown) await fn(message.params);
    } else if (message.method !== "ping") {
      post({jsonrpc: "2.0", id: message.id,
            error: {code: -32601, message: "Method not found: " + message.method}});
      return;
    }
    post({jsonrpc: "2.0", id: message.id, result});
  };
  const NOTIFIED = {
    "ui/notifications/tool-input": (p) => emit("toolinput", (p && p.arguments) || {}),
    "ui/notifications/tool-result": (p) => emit("toolresult", p),
    "ui/notifications/tool-cancelled": (p) => emit("toolcancelled", p),
    "ui/notifications/host-context-changed": (p) => emit("hostcontext", p),
  };
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error) {
        const error = new Error(message.error.message);
        error.code = message.error.code;
        error.data = message.error.data;
        waiter.reject(error);
      } else {
        waiter.resolve(message.result);
      }
    } else if (message.id !== undefined) {
      answer(message);
    } else if (NOTIFIED[message.method]) {
      NOTIFIED[message.method](message.params);
    }
  });
  const ready = request("ui/initialize", {
    appInfo: APP_INFO, appCapabilities: {}, protocolVersion: "2026-01-26",
  }).then((result) => {
    notify("ui/notifications/initialized");
    if (result && result.hostContext) emit("hostcontext", result.hostContext);
    if (typeof ResizeObserver === "function") {
      let last = "";
      new ResizeObserver(() => {
        const root = document.documentElement;
        const size = {width: Math.ceil(root.scrollWidth), height: Math.ceil(root.scrollHeight)};
        const key = size.width + "x" + size.height;
        if (key !== last) { last = key; notify("ui/notifications/size-changed", size); }
      }).observe(document.documentElement);
    }
    return result;
  });
  const after = (method) => async (params) => { await ready; return request(method, params); };
  window.mcpApp = {
    ready,
    callTool: async (name, args) => after("tools/call")({name, arguments: args || {}}),
    readResource: async (uri) => after("resources/read")({uri}),
    sendMessage: async (text) =>
      after("ui/message")({role: "user", content: [{type: "text", text}]}),
    openLink: async (url) => after("ui/open-link")({url}),
    log: (level, data) => ready.then(() => notify("notifications/message", {level, data})),
    on(event, fn) {
      if (!listeners[event]) throw new Error("mcpApp.on: unknown event " + event);
      listeners[event].push(fn);
      if (event in latest) fn(latest[event]);
    },
  };
})();
"""


def app_page(
    *,
    title: str,
    body: str = "",
    script: str = "",
    style: str = "",
    head: str = "",
    app_name: str | None = None,
    app_version: str = "1.0.0",
    bridge: bool = True,
    lang: str = "en",
) -> str:
    """A complete HTML5 app page: ``title`` (escaped), ``style`` and ``head`` in the head,
    ``body`` (HTML, as is), then the host bridge and ``script``.

    With ``bridge`` (default), the page gets ``window.mcpApp`` (see
    :data:`BRIDGE_SCRIPT`): ``await mcpApp.callTool("name", {...})`` returns the
    ``CallToolResult`` (wire form), ``mcpApp.on("toolresult", fn)`` receives the result of
    the call the host rendered the page for. ``app_name`` names the page to the host
    (default the title). Everything but ``title`` is the author's own markup and code,
    inserted unchanged.
    """
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{html.escape(lang, quote=True)}">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
    ]
    if style:
        parts.append(f"<style>\n{style}\n</style>")
    if head:
        parts.append(head)
    parts += ["</head>", "<body>", body]
    if bridge:
        info = {"name": app_name or title, "version": app_version}
        # "</" cannot end the script early once escaped this way.
        encoded = json.dumps(info).replace("</", "<\\/")
        parts.append(f"<script>\n{BRIDGE_SCRIPT.replace('__APP_INFO__', encoded)}</script>")
    if script:
        parts.append(f"<script>\n{script}\n</script>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
