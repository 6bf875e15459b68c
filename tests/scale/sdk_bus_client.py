"""The official SDK client (PyPI ``mcp``) in one 2025-11-25 session through a balancer,
exercising what crosses replicas: elicitation and sampling answered through the balancer,
resource updates and list changes raised on any replica, a cancel reaching the replica
running the call.

Usage: ``python sdk_bus_client.py URL [--rounds N]``. Prints a JSON report. Imports nothing
from trimcp. Exit 0 when every step ran.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning


class Recorder:
    def __init__(self) -> None:
        self.updated: Counter[str] = Counter()
        self.notifications: Counter[str] = Counter()
        self.errors: list[str] = []
        self.elicited = 0
        self.sampled = 0
        self.rooted = 0
        self.logs: list[str] = []
        self._changed = anyio.Event()

    def poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while not ready():
                await self._changed.wait()
            return True
        return False

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.errors.append(repr(message))
        elif isinstance(message, types.ServerNotification | types.Notification):
            method = getattr(message, "method", "?")
            self.notifications[method] += 1
            if isinstance(message, types.ResourceUpdatedNotification):
                self.updated[str(message.params.uri)] += 1
        self.poke()

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited += 1
        return types.ElicitResult(action="accept", content={"name": "Ann"})

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(f"{params.level} {params.data}")

    async def on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.rooted += 1
        self.poke()
        root = types.Root(uri="file:///work", name="work")  # type: ignore[arg-type]
        return types.ListRootsResult(roots=[root])

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled += 1
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="short"),
            model="sdk-model",
            stop_reason="endTurn",
        )


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    return block.text if isinstance(block, types.TextContent) else repr(block)


async def exercise(url: str, rounds: int, report: dict[str, Any]) -> None:
    rec = Recorder()
    with anyio.fail_after(180):
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(
                read,
                write,
                read_timeout_seconds=20,
                elicitation_callback=rec.on_elicitation,
                sampling_callback=rec.on_sampling,
                list_roots_callback=rec.on_list_roots,
                logging_callback=rec.on_log,
                message_handler=rec.on_message,
            ) as session,
        ):
            try:
                await _steps(session, rec, rounds, report)
            finally:
                report["notifications"] = dict(rec.notifications)
                report["updated"] = dict(rec.updated)
                report["errors"] = rec.errors


async def _steps(
    session: ClientSession, rec: Recorder, rounds: int, report: dict[str, Any]
) -> None:
    report["protocol_version"] = (await session.initialize()).protocol_version
    # The log level is set through one replica; log messages come from every replica.
    await session.set_logging_level("error")
    # The GET stream opens on some replica after the handshake; wait until it answers
    # (a ping round trip through the balancer) before changes are raised.
    await session.send_ping()
    report["chatter_pids"] = [_text(await session.call_tool("chatter", {})) for _ in range(rounds)]
    report["logs"] = list(rec.logs)
    # Elicitation and sampling: each call runs on some replica, the answer is POSTed
    # through the balancer and may land on another.
    report["asked"] = [_text(await session.call_tool("ask", {})) for _ in range(rounds)]
    report["summarized"] = [
        _text(await session.call_tool("summarize", {"text": "abc"})) for _ in range(rounds)
    ]
    report["elicited"], report["sampled"] = rec.elicited, rec.sampled
    # Resource updates raised on every replica reach the GET stream, each once.
    uris = [f"bus://{n}" for n in range(rounds)]
    for uri in uris:
        await session.subscribe_resource(uri)
    touched = [_text(await session.call_tool("touch", {"n": n})) for n in range(rounds)]
    report["touched_pids"] = touched
    report["all_updated"] = await rec.wait_for(lambda: set(rec.updated) >= set(uris), 15)
    for _ in range(3):  # a few more round trips: a duplicate would arrive meanwhile
        await session.send_ping()
    await session.unsubscribe_resource(uris[0])
    await session.call_tool("touch", {"n": 0})
    report["grown_pids"] = [
        _text(await session.call_tool("grow", {"name": f"g{n}"})) for n in range(rounds)
    ]
    report["list_changed"] = await rec.wait_for(
        lambda: rec.notifications["notifications/tools/list_changed"] >= 1, 15
    )
    for _ in range(3):
        await session.send_ping()
    # Server requests not tied to a client request: each roots/list_changed lands on some
    # replica, whose handler sends roots/list on the GET stream (open on one replica).
    for _ in range(rounds):
        await session.send_roots_list_changed()
    report["rooted"] = await rec.wait_for(lambda: rec.rooted >= rounds, 30)
    report["roots_requests"] = rec.rooted
    # A cancel: the call runs on one replica, the notifications/cancelled POST may land
    # on any; the call's own task must see it.
    cancelled = []
    for n in range(rounds):
        with anyio.move_on_after(1.5):
            await session.call_tool("hold", {"tag": f"c{n}"})
        cancelled.append(f"c{n}")
    report["cancelled_tags"] = cancelled
    report["whoami"] = sorted(
        {_text(await session.call_tool("whoami", {})) for _ in range(2 * rounds)}
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots: deprecated in 2026 only
    report: dict[str, Any] = {}
    code = 0
    try:
        anyio.run(exercise, args.url, args.rounds, report)
    except BaseException:
        report["error"] = traceback.format_exc()
        code = 1
    json.dump(report, sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
