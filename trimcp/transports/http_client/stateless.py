"""What the Streamable HTTP client keeps for 2026-07-28 (stateless) requests.

A 2026 request is recognised by the protocol version in its ``_meta``. It goes out with
no session id and with the headers :mod:`trimcp.protocol.modern` computes; for ``tools/call`` that
includes ``Mcp-Param-*`` for the tool's annotated arguments, learnt from the latest
``tools/list`` answer that passed through (tools with invalid annotations are dropped from
that answer, with a warning). Cancelling a 2026 request leaves its stream: the server
takes the disconnect as the cancellation, so no ``notifications/cancelled`` is POSTed (a
``tools/call`` half-closes and still reads an answer on its way, which may name a task to
cancel: ``StreamableHttpClient._leave_post``).
"""

from __future__ import annotations

import logging
from typing import Any

from trimcp.protocol.jsonrpc import RequestId, dump_json
from trimcp.protocol.modern import header_parameters, parameter_headers, standard_headers
from trimcp.transports.http_client.answers import Sink
from trimcp.transports.http_client.messages import Inbound, OutgoingInfo

logger = logging.getLogger("trimcp.http_client")

#: Tools whose annotated parameters are remembered; the oldest are forgotten past this.
MAX_TOOLS = 10_000


class StatelessRequests:
    """Headers and bookkeeping for 2026 requests on one endpoint (no I/O)."""

    def __init__(self) -> None:
        #: Ids of 2026 requests whose POST is still under way.
        self.in_flight: set[RequestId] = set()
        self._params: dict[str, dict[str, tuple[str, ...]]] = {}

    def headers(self, info: OutgoingInfo) -> dict[str, str]:
        """The 2026 headers of one request (``info.modern_version`` must be set)."""
        assert info.modern_version is not None
        assert info.method is not None
        params = info.params or {}
        headers = standard_headers(info.method, params, info.modern_version)
        if info.method == "tools/call":
            annotated = self._params.get(params.get("name"))  # type: ignore[arg-type]
            arguments = params.get("arguments")
            if annotated and isinstance(arguments, dict):
                headers.update(parameter_headers(arguments, annotated))
        return {name.lower(): value for name, value in headers.items()}

    def tools_list_sink(self, deliver: Sink) -> Sink:
        """A sink that learns (and filters) the tools of a ``tools/list`` answer."""

        async def sink(item: Inbound, pending: set[RequestId]) -> None:
            if item.answers is not None and item.result is not None:
                item = self._learn(item)
            await deliver(item, pending)

        return sink

    def _learn(self, item: Inbound) -> Inbound:
        assert item.result is not None
        tools = item.result.get("tools")
        if not isinstance(tools, list):
            return item
        kept: list[Any] = []
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                kept.append(tool)  # not ours to judge; the protocol core will
                continue
            schema = tool.get("inputSchema")
            try:
                annotated = header_parameters(schema) if isinstance(schema, dict) else {}
            except ValueError as exc:
                logger.warning("leaving out tool %r: %s", tool["name"], exc)
                continue
            self._remember(tool["name"], annotated)
            kept.append(tool)
        if len(kept) == len(tools):
            return item
        result = {**item.result, "tools": kept}
        data = dump_json({"jsonrpc": "2.0", "id": item.answers, "result": result})
        return Inbound(data=data, answers=item.answers, result=result)

    def _remember(self, name: str, annotated: dict[str, tuple[str, ...]]) -> None:
        self._params.pop(name, None)
        if annotated:
            self._params[name] = annotated
            if len(self._params) > MAX_TOOLS:
                del self._params[next(iter(self._params))]
