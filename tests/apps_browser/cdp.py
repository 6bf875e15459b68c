"""A small Chrome DevTools Protocol client over trio-websocket: commands by id, events
waited for by method (one browser connection; page and frame sessions by ``sessionId``)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import trio
from trio_websocket import WebSocketConnection

from tests.interop.ts_everything.conftest import Inbox

#: Screenshots come back base64-encoded in one message.
MAX_MESSAGE = 32 * 1024 * 1024


class CdpError(Exception):
    """The browser refused a command: ``method`` and what it said."""


class Cdp:
    """Commands and events on one DevTools websocket; :meth:`run` reads it (start it in a
    nursery). Every wait is bounded by the caller's ``fail_after``."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._replies: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.events: Inbox[dict[str, Any]] = Inbox()

    async def run(self) -> None:
        while True:
            message: dict[str, Any] = json.loads(await self._ws.get_message())
            if "id" in message:
                reply = self._replies.pop(message["id"], None)
                if reply is not None:
                    reply.send_nowait(message)
            else:
                self.events.append(message)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Run one command; its ``result``. Raises :class:`CdpError` if it failed."""
        ident = next(self._ids)
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._replies[ident] = send
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self._ws.send_message(json.dumps(message))
        reply = await receive.receive()
        if "error" in reply:
            raise CdpError(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def event(
        self, method: str, match: Callable[[dict[str, Any]], bool] = lambda _: True
    ) -> dict[str, Any]:
        """The first event ``method`` (already seen or still to come) whose whole message
        ``match`` accepts."""
        return await self.events.wait_for(
            lambda event: event["method"] == method and match(event), timeout=float("inf")
        )

    async def evaluate(self, expression: str, *, session: str, context: int | None = None) -> Any:
        """The value of ``expression`` (awaited if it is a promise); a thrown error fails."""
        params: dict[str, Any] = {
            "expression": expression,
            "awaitPromise": True,
            "returnByValue": True,
        }
        if context is not None:
            params["contextId"] = context
        result = await self.send("Runtime.evaluate", params, session=session)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")
