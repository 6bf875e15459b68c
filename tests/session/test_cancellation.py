"""Cancellation both ways: one cancel scope per inbound request; outbound cancels notify."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import trio
import trio.testing

from tests.support import make_server, raw_client, session_pair
from trimcp.session import RequestContext


class SlowServer:
    """A server whose ``slow`` method blocks until cancelled or released."""

    def __init__(self) -> None:
        self.server = make_server()
        self.started = trio.Event()
        self.release = trio.Event()
        self.finally_ran = False
        self.saw_cancelled = False
        self.server.request_handler("slow")(self.slow)
        self.server.request_handler("fast")(self.fast)

    async def slow(self, ctx: RequestContext) -> dict[str, Any]:
        self.started.set()
        try:
            await self.release.wait()
            return {"done": True}
        except trio.Cancelled:
            self.saw_cancelled = True
            raise
        finally:
            self.finally_ran = True

    async def fast(self, ctx: RequestContext) -> dict[str, Any]:
        return {"fast": True}

    async def handle_request(self, ctx: RequestContext) -> Any:
        return await self.server.handle_request(ctx)

    async def handle_notification(self, *args: Any) -> None:
        return None


async def test_cancelling_a_call_cancels_the_server_handler(autojump_clock: Any) -> None:
    slow = SlowServer()
    async with session_pair(slow) as (client, _server):
        with trio.move_on_after(5) as scope:
            await client.send_request("slow", timeout=None)
        assert scope.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        assert slow.saw_cancelled
        assert slow.finally_ran
        # The session is still usable after the cancel.
        assert await client.send_request("fast") == {"fast": True}


async def test_peer_cancel_sends_no_response(autojump_clock: Any) -> None:
    slow = SlowServer()
    async with raw_client(slow) as (peer, _session):
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "slow"})
        await slow.started.wait()
        await peer.notify("notifications/cancelled", {"requestId": 7, "reason": "user"})
        await trio.testing.wait_all_tasks_blocked()
        assert slow.saw_cancelled
        assert slow.finally_ran
        assert peer.receive_nowait_all() == []
        # A later request on the same connection is answered normally.
        assert (await peer.request(8, "fast"))["result"] == {"fast": True}


async def test_handler_that_swallows_cancel_still_sends_nothing(autojump_clock: Any) -> None:
    server = make_server()
    started = trio.Event()

    @server.request_handler("stubborn")
    async def stubborn(ctx: RequestContext) -> dict[str, Any]:
        started.set()
        with contextlib.suppress(trio.Cancelled):
            await trio.sleep_forever()
        return {"answered": "anyway"}

    async with raw_client(server) as (peer, _session):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "stubborn"})
        await started.wait()
        await peer.notify("notifications/cancelled", {"requestId": 1})
        await trio.testing.wait_all_tasks_blocked()
        assert peer.receive_nowait_all() == []


@pytest.mark.parametrize(
    "cancel_params",
    [
        {"requestId": 999},  # unknown
        {"requestId": None},  # malformed
        {"requestId": True},  # malformed
        {},  # missing
        {"requestId": 0},  # initialize: not cancellable, and finished anyway
    ],
)
async def test_odd_cancels_are_ignored(autojump_clock: Any, cancel_params: Any) -> None:
    slow = SlowServer()
    async with raw_client(slow) as (peer, _session):
        await peer.notify("notifications/cancelled", cancel_params)
        await trio.testing.wait_all_tasks_blocked()
        assert peer.receive_nowait_all() == []
        assert (await peer.request(3, "fast"))["result"] == {"fast": True}


async def test_cancel_after_completion_is_ignored(autojump_clock: Any) -> None:
    slow = SlowServer()
    async with raw_client(slow) as (peer, _session):
        reply = await peer.request(4, "fast")
        assert reply["id"] == 4
        await peer.notify("notifications/cancelled", {"requestId": 4})
        await trio.testing.wait_all_tasks_blocked()
        assert peer.receive_nowait_all() == []


async def test_cancel_arriving_with_the_request_sends_nothing(autojump_clock: Any) -> None:
    # The request and its cancel arrive back to back: whether or not the handler got to
    # start, it ends cancelled and nothing is sent.
    slow = SlowServer()
    async with raw_client(slow) as (peer, _session):
        peer.transport.send_raw_nowait(b'{"jsonrpc":"2.0","id":5,"method":"slow"}')
        peer.transport.send_raw_nowait(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}'
        )
        await trio.testing.wait_all_tasks_blocked()
        assert slow.saw_cancelled or not slow.started.is_set()
        assert peer.receive_nowait_all() == []


@pytest.mark.parametrize("yields_before_cancel", range(6))
async def test_cancel_racing_completion_gives_at_most_one_reply(
    autojump_clock: Any, yields_before_cancel: int
) -> None:
    # The handler finishes after a few scheduling points; the cancel lands at each possible
    # point. Whatever the interleaving: at most one reply, and none once the cancel won.
    server = make_server()
    outcome: dict[str, bool] = {}

    @server.request_handler("racy")
    async def racy(ctx: RequestContext) -> dict[str, Any]:
        try:
            for _ in range(3):
                await trio.lowlevel.checkpoint()
        except trio.Cancelled:
            outcome["cancelled"] = True
            raise
        outcome["completed"] = True
        return {"ok": True}

    async with raw_client(server) as (peer, _session):
        peer.transport.send_raw_nowait(b'{"jsonrpc":"2.0","id":9,"method":"racy"}')
        for _ in range(yields_before_cancel):
            await trio.lowlevel.checkpoint()
        await peer.notify("notifications/cancelled", {"requestId": 9})
        await trio.testing.wait_all_tasks_blocked()
        replies = peer.receive_nowait_all()
        assert len(replies) <= 1
        if outcome.get("cancelled") or not outcome.get("completed"):
            assert replies == []
        else:
            # It finished first; the reply may have left before the cancel was read.
            assert replies in ([], [{"jsonrpc": "2.0", "id": 9, "result": {"ok": True}}])


async def test_outbound_cancel_sends_cancelled_notification(autojump_clock: Any) -> None:
    slow = SlowServer()
    async with raw_client(slow) as (peer, server_session):
        # The server asks the raw client something, then gives up on it.
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                with trio.move_on_after(1):
                    await server_session.send_request("ping", timeout=None)

            nursery.start_soon(ask)
            request = await peer.receive()
            assert request["method"] == "ping"
        cancel = await peer.receive()
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"]["requestId"] == request["id"]
        # A late answer is dropped without fuss.
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        await trio.testing.wait_all_tasks_blocked()
        assert peer.receive_nowait_all() == []


async def test_initialize_cannot_be_cancelled(autojump_clock: Any) -> None:
    server = make_server()
    async with raw_client(server, initialize=False) as (peer, _session):
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"},
                },
            }
        )
        await peer.notify("notifications/cancelled", {"requestId": 1})
        reply = await peer.receive()
        assert reply["result"]["protocolVersion"] == "2025-06-18"
