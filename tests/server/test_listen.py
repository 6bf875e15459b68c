"""subscriptions/listen bounds: stream count, idle end, keepalive, resource subscriptions."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from trimcp import Server
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import Request
from trimcp.protocol.stateless import prepare
from trimcp.server.stateless import StatelessOptions
from trimcp.session.stateless import Answer, run_request


class Outlet:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.keepalives = 0
        self.changed = trio.Event()

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: Any = None
    ) -> None:
        self.sent.append((method, params))
        self.changed.set()
        self.changed = trio.Event()

    async def keepalive(self) -> None:
        self.keepalives += 1


def listen_request(request_id: int, notifications: dict[str, Any]) -> Request:
    meta = {modern.META_PROTOCOL_VERSION: "2026-07-28", modern.META_CLIENT_CAPABILITIES: {}}
    return Request(
        id=request_id,
        method="subscriptions/listen",
        params={"_meta": meta, "notifications": notifications},
    )


def make_server(**options: Any) -> Server:
    app = Server("listen", "1.0", stateless=StatelessOptions(**options))
    app.add_tool(lambda: "x", name="tool")

    @app.resource("test://watched")
    def watched() -> str:
        return "w"

    return app


async def open_listen(
    app: Server, request_id: int, notifications: dict[str, Any], nursery: trio.Nursery
) -> tuple[Outlet, list[Answer]]:
    outlet = Outlet()
    answers: list[Answer] = []
    prepared = prepare(app, listen_request(request_id, notifications))

    async def run() -> None:
        answers.append(await run_request(app, prepared, outlet))

    nursery.start_soon(run)
    await trio.testing.wait_all_tasks_blocked()
    return outlet, answers


async def test_a_quiet_stream_ends_gracefully_after_the_idle_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = make_server(listen_idle_timeout=60, listen_keepalive=15)
    async with trio.open_nursery() as nursery:
        outlet, answers = await open_listen(app, 1, {"toolsListChanged": True}, nursery)
        assert outlet.sent[0][0] == "notifications/subscriptions/acknowledged"
    # Ended by itself (the nursery could close): with its result, after keepalives.
    [answer] = answers
    assert answer.error is None
    assert answer.result.meta == {modern.META_SUBSCRIPTION_ID: 1}
    assert outlet.keepalives == 3  # at 15, 30 and 45 s; the end at 60 s
    assert app.listen_hub.open_streams == 0


async def test_changes_before_delivery_merge_and_resource_updates_are_tagged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = make_server()
    async with trio.open_nursery() as nursery:
        outlet, _ = await open_listen(
            app,
            2,
            {"toolsListChanged": True, "resourceSubscriptions": ["test://watched"]},
            nursery,
        )
        ack = outlet.sent[0][1]
        assert ack["notifications"] == {
            "toolsListChanged": True,
            "resourceSubscriptions": ["test://watched"],
        }
        for name in ("a", "b", "c"):  # three changes while the stream is not looking
            app.add_tool(lambda: "x", name=name)
        await app.notify_resource_updated("test://watched")
        await app.notify_resource_updated("test://unwatched")
        await trio.testing.wait_all_tasks_blocked()
        methods = [method for method, _ in outlet.sent[1:]]
        assert methods == ["notifications/tools/list_changed", "notifications/resources/updated"]
        assert outlet.sent[2][1] == {
            "_meta": {modern.META_SUBSCRIPTION_ID: 2},
            "uri": "test://watched",
        }
        nursery.cancel_scope.cancel()


async def test_streams_past_the_limit_are_refused(autojump_clock: trio.testing.MockClock) -> None:
    app = make_server(listen_max_streams=2)
    async with trio.open_nursery() as nursery:
        await open_listen(app, 1, {"toolsListChanged": True}, nursery)
        await open_listen(app, 2, {"toolsListChanged": True}, nursery)
        outlet, answers = await open_listen(app, 3, {"toolsListChanged": True}, nursery)
        [refused] = answers
        assert refused.error is not None
        assert "Too many subscriptions/listen streams" in refused.error.message
        assert outlet.sent == []
        assert app.listen_hub.open_streams == 2
        nursery.cancel_scope.cancel()
    assert app.listen_hub.open_streams == 0  # cancelled streams leave nothing behind


async def test_kinds_the_server_cannot_honour_are_left_out_of_the_ack(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = make_server()  # no prompts registered: no prompts.listChanged
    async with trio.open_nursery() as nursery:
        outlet, _ = await open_listen(
            app,
            4,
            {"promptsListChanged": True, "resourceSubscriptions": ["test://nope"]},
            nursery,
        )
        assert outlet.sent[0][1]["notifications"] == {"resourceSubscriptions": []}
        nursery.cancel_scope.cancel()


async def test_one_caller_gets_exactly_its_share_of_streams(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``listen_max_streams_per_principal`` streams of one caller are open at once, and
    not one more (every anonymous caller together is one caller), while the server-wide
    bound has room left."""
    app = make_server(listen_max_streams_per_principal=3, listen_max_streams=10)
    async with trio.open_nursery() as nursery:
        for request_id in (1, 2, 3):
            outlet, answers = await open_listen(
                app, request_id, {"toolsListChanged": True}, nursery
            )
            assert answers == []  # open: it answers only when it ends
            assert outlet.sent[0][0] == "notifications/subscriptions/acknowledged"
        outlet, answers = await open_listen(app, 4, {"toolsListChanged": True}, nursery)
        [refused] = answers
        assert refused.error is not None
        assert "listen_max_streams_per_principal" in refused.error.message
        assert outlet.sent == []
        assert app.listen_hub.streams_of(None) == 3
        nursery.cancel_scope.cancel()
