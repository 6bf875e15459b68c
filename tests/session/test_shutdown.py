"""Deterministic shutdown: bounded grace, cancelled stragglers, failed waiters, peer EOF."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tests.support import make_server, raw_client, session_pair
from trimcp.errors import SessionClosed
from trimcp.session import RequestContext, SessionOptions


def sleepy_server(record: dict[str, Any]) -> Any:
    server = make_server()

    @server.request_handler("sleep")
    async def sleep(ctx: RequestContext) -> dict[str, Any]:
        seconds = ctx.params["seconds"]
        record.setdefault("started", 0)
        record["started"] += 1
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            record.setdefault("cancelled", []).append(seconds)
            raise
        record.setdefault("finished", []).append(seconds)
        return {"slept": seconds}

    return server


async def test_close_gives_grace_then_cancels_and_is_bounded(autojump_clock: Any) -> None:
    record: dict[str, Any] = {}
    options = SessionOptions(shutdown_grace=5)
    answers: list[Any] = []
    async with raw_client(sleepy_server(record), options=options) as (peer, session):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "sleep", "params": {"seconds": 2}})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "sleep", "params": {"seconds": 60}})
        await trio.testing.wait_all_tasks_blocked()
        assert record["started"] == 2
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.aclose)

            async def drain() -> None:
                try:
                    while True:
                        answers.append(await peer.receive())
                except trio.EndOfChannel:
                    pass

            nursery.start_soon(drain)
        elapsed = trio.current_time() - start
    assert record["finished"] == [2]
    assert record["cancelled"] == [60]
    # The quick handler's answer was flushed; the cancelled one got none.
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {"slept": 2}}]
    assert elapsed == pytest.approx(5, abs=0.01)
    assert elapsed <= options.close_bound


async def test_idle_close_is_immediate(autojump_clock: Any) -> None:
    async with session_pair(make_server()) as (client, server):
        start = trio.current_time()
        await client.aclose()
        assert trio.current_time() - start == pytest.approx(0)
        await server.wait_closed()


async def test_peer_eof_fails_pending_requests_at_once(autojump_clock: Any) -> None:
    async with raw_client(make_server()) as (peer, session):
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                with pytest.raises(SessionClosed):
                    await session.send_request("ping", timeout=None)

            nursery.start_soon(ask)
            await peer.receive()  # the ping
            start = trio.current_time()
            await peer.transport.aclose()
        assert trio.current_time() - start == pytest.approx(0)
        await session.wait_closed()
        with pytest.raises(SessionClosed):
            await session.send_request("ping")


async def test_peer_eof_mid_request_cancels_the_handler(autojump_clock: Any) -> None:
    record: dict[str, Any] = {}
    options = SessionOptions(shutdown_grace=1)
    async with raw_client(sleepy_server(record), options=options) as (peer, session):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "sleep", "params": {"seconds": 30}})
        await trio.testing.wait_all_tasks_blocked()
        await peer.transport.aclose()
        await session.wait_closed()
    assert record["cancelled"] == [30]


async def test_body_exception_surfaces_unwrapped(autojump_clock: Any) -> None:
    with pytest.raises(ZeroDivisionError) as info:
        async with session_pair(make_server()) as (_client, _server):
            1 / 0  # noqa: B018
    # Alone: no exception group hangs on it as "during handling of the above exception".
    assert not isinstance(info.value.__context__, BaseExceptionGroup)


async def test_outer_cancel_still_closes_within_bound(autojump_clock: Any) -> None:
    record: dict[str, Any] = {}
    options = SessionOptions(shutdown_grace=3)
    with trio.move_on_after(10):
        async with raw_client(sleepy_server(record), options=options) as (peer, _session):
            await peer.send(
                {"jsonrpc": "2.0", "id": 1, "method": "sleep", "params": {"seconds": 1000}}
            )
            await trio.sleep_forever()
    assert record["cancelled"] == [1000]
    assert trio.current_time() <= 10 + options.close_bound


async def test_keepalive_closes_after_missed_pings(autojump_clock: Any) -> None:
    options = SessionOptions(keepalive_interval=10, keepalive_misses=3)
    async with raw_client(make_server(), options=options) as (peer, session):
        # The raw peer never answers the pings.
        await session.wait_closed()
        assert session.close_reason is not None
        assert "keepalive" in session.close_reason
        assert trio.current_time() == pytest.approx(60)  # 3 x (10 s wait + 10 s timeout)
        pings = [m for m in peer.receive_nowait_all() if m.get("method") == "ping"]
        assert len(pings) == 3
