"""MCP Apps on the client: what a host needs to render a tool's app page.

:func:`tool_ui` reads a tool's ``_meta.ui`` (the page's ``ui://`` URI and who may call
the tool); ``await client.ui_resource(tool)`` reads the page and returns a
:class:`UiPage`: its HTML, its ``_meta.ui`` (content security policy, permissions,
framing), and the ``Content-Security-Policy`` and frame ``allow`` values a host applies.
Rendering it (a sandboxed frame and the postMessage bridge) is the host's part; a Trio
host relays the page's ``tools/call`` with ``client.call_tool`` after checking
:attr:`~trimcp.protocol.apps_ext.ToolUi.app_callable`.

To tell servers this client renders pages, declare the extension with
:func:`~trimcp.protocol.apps_ext.client_settings` under
``capabilities.extensions["io.modelcontextprotocol/ui"]``.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import TYPE_CHECKING

import attrs

from trimcp.errors import INTERNAL_ERROR, RemoteProtocolError
from trimcp.protocol import apps_ext
from trimcp.protocol.apps_ext import MIME_TYPE, ToolUi, UiResourceMeta
from trimcp.types import BlobResourceContents, ReadResourceResult, TextResourceContents, Tool

if TYPE_CHECKING:
    from trimcp.client.client import Client

logger = logging.getLogger("trimcp.client")

#: The policy a host applies to a page that declares no ``csp`` (the spec's restrictive
#: default: no network at all).
RESTRICTIVE_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; media-src 'self' data:; connect-src 'none'"
)


class UiResourceError(RemoteProtocolError):
    """The server's app page is not what the extension requires (wrong MIME type, no
    contents for the URI, undecodable HTML). ``uri`` names the page."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"App page {uri!r} from the server is unusable: {reason}",
            {"uri": uri, "reason": reason},
        )
        self.uri = uri
        self.reason = reason


@attrs.frozen(kw_only=True)
class UiPage:
    """An app page as read from the server, ready for a host to render."""

    #: the page's ``ui://`` URI
    uri: str
    #: the HTML document
    html: str
    #: its ``_meta.ui`` (from the read contents, else from the listing)
    meta: UiResourceMeta
    #: the ``_meta.ui`` of the tool it was read for (None when read by URI)
    tool: ToolUi | None = None

    @property
    def csp_header(self) -> str:
        """The ``Content-Security-Policy`` to render the page under: built from its
        declared origins, or the restrictive default when it declares none. Declared
        sources that are not origins are not in it (see ``meta.csp.refused``)."""
        return RESTRICTIVE_CSP if self.meta.csp is None else self.meta.csp.header()

    @property
    def allow_attribute(self) -> str:
        """The frame's ``allow`` attribute for the permissions the page asked for."""
        return self.meta.allow_attribute()


def tool_ui(tool: Tool) -> ToolUi | None:
    """The app metadata of ``tool`` (its page and visibility), or None when it has none."""
    return ToolUi.from_meta(tool.meta)


def page_from(uri: str, result: ReadResourceResult, tool: ToolUi | None = None) -> UiPage:
    """The :class:`UiPage` in a ``resources/read`` result for ``uri``; raises
    :class:`UiResourceError` when the server answered with something else."""
    found = [item for item in result.contents if item.uri == uri]
    if not found:
        raise UiResourceError(uri, "the read returned no contents for this URI")
    item = found[0]
    if not isinstance(item, TextResourceContents | BlobResourceContents):
        raise UiResourceError(uri, f"unexpected contents {type(item).__name__}")
    mime = (item.mime_type or "").replace(" ", "").lower()
    if mime != MIME_TYPE:
        raise UiResourceError(
            uri, f"its MIME type is {item.mime_type!r}, the extension requires {MIME_TYPE!r}"
        )
    if isinstance(item, TextResourceContents):
        html = item.text
    else:
        try:
            html = base64.b64decode(item.blob, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise UiResourceError(uri, f"its blob is not base64 UTF-8 HTML ({exc})") from None
    return UiPage(uri=uri, html=html, meta=UiResourceMeta.from_meta(item.meta), tool=tool)


async def read_page(client: Client, target: Tool | str) -> UiPage:
    """Read the app page of ``target``: a :class:`Tool`, a tool name (from the latest
    listing, else listed now) or a ``ui://`` URI. Declared CSP sources that are not
    origins are dropped with a warning on the ``trimcp.client`` logger naming the server,
    the page and each value. Raises ``LookupError`` for a tool without one,
    :class:`UiResourceError` for a page the server serves wrongly, and what
    ``read_resource`` raises. Cancellation: as ``read_resource`` (and ``list_tools``)."""
    if isinstance(target, str) and apps_ext.is_ui_uri(target):
        uri, ui = target, None
    else:
        tool = await _tool(client, target) if isinstance(target, str) else target
        ui = tool_ui(tool)
        if ui is None:
            raise LookupError(
                f"Tool {tool.name!r} has no app page (no _meta.ui.resourceUri in its listing)"
            )
        uri = ui.resource_uri
    page = page_from(uri, await client.read_resource(uri), ui)
    _warn_refused(client, page)
    return page


def _warn_refused(client: Client, page: UiPage) -> None:
    """Say which declared CSP sources were dropped (not origins), naming the server and
    the page: the page renders under a stricter policy than its author meant."""
    refused = page.meta.csp.refused if page.meta.csp is not None else ()
    if not refused:
        return
    logger.warning(
        "Server %r: the app page %r declares CSP sources that are not origins "
        "(scheme://host[:port]); dropped, the page gets a stricter policy: %s",
        client.server_info.name[:100],
        page.uri[:200],
        ", ".join(refused),
    )


async def _tool(client: Client, name: str) -> Tool:
    known = client.known_tool(name)
    if known is not None:
        return known
    async for tool in client.iter_tools():
        if tool.name == name:
            return tool
    raise LookupError(f"The server lists no tool {name!r}; check the name with list_tools()")
