"""How a server hears and tells other replicas, in one process (no Redis): two servers
joined by a loopback bus stand for two replicas. Deterministic (autojump clock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
import trio.testing

import trimcp
from trimcp.stores.bus import Bus, BusHandler, BusMessage, Subscribers


class LoopbackBus:
    """A shared bus of one process: what one publishes, the others hear (never itself)."""

    def __init__(self, tag: int, peers: list[LoopbackBus], subscriptions: dict[str, set[str]]):
        self._tag = tag
        self.peers = peers
        peers.append(self)
        self.subscriptions = subscriptions
        self._subscribers = Subscribers(handler_timeout=5.0)
        self._send, self._receive = trio.open_memory_channel[BusMessage](64)

    @property
    def shared(self) -> bool:
        return True

    @property
    def tag(self) -> int:
        return self._tag

    def subscribe(self, handler: BusHandler) -> Callable[[], None]:
        return self._subscribers.add(handler)

    def publish_nowait(self, message: BusMessage) -> None:
        for peer in self.peers:
            if peer is not self:
                peer._send.send_nowait(message)

    def send_nowait(self, tag: int, message: BusMessage) -> None:
        for peer in self.peers:
            if peer.tag == tag:
                peer._send.send_nowait(message)

    async def send(self, tag: int | None, message: BusMessage) -> int:
        """As Redis's PUBLISH counts: every replica for all (this one too), else the one."""
        if tag is None:
            self.publish_nowait(message)
            return len(self.peers)
        self.send_nowait(tag, message)
        return sum(1 for peer in self.peers if peer.tag == tag)

    async def deliver(self, message: BusMessage) -> None:
        await self._subscribers.deliver(message)

    async def add_subscription(self, session_id: str, uri: str, limit: int) -> bool:
        self.subscriptions.setdefault(session_id, set()).add(uri)
        return True

    async def remove_subscription(self, session_id: str, uri: str) -> None:
        self.subscriptions.get(session_id, set()).discard(uri)

    async def subscribed(self, session_ids: list[str], uri: str) -> list[bool]:
        return [uri in self.subscriptions.get(s, set()) for s in session_ids]

    async def save_session_value(self, session_id: str, name: str, value: str) -> None:
        return None

    async def load_session_value(self, session_id: str, name: str) -> str | None:
        return None

    async def set_stream_holder(self, session_id: str, ttl: float) -> None:
        return None

    async def stream_holder(self, session_id: str) -> int | None:
        return None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for message in self._receive:
            await self._subscribers.deliver(message)


def two_replicas() -> tuple[trimcp.Server, trimcp.Server, LoopbackBus, LoopbackBus]:
    peers: list[LoopbackBus] = []
    subscriptions: dict[str, set[str]] = {}
    bus_a, bus_b = LoopbackBus(1, peers, subscriptions), LoopbackBus(2, peers, subscriptions)
    assert isinstance(bus_a, Bus)
    servers = []
    for bus in (bus_a, bus_b):
        app = trimcp.Server("replica")

        @app.tool()
        def base() -> str:
            """A tool."""
            return "base"

        @app.resource("memo://{n}")
        def memo(n: str) -> str:
            """A memo."""
            return n

        app.attach_bus(bus)
        servers.append(app)
    return servers[0], servers[1], bus_a, bus_b


async def test_a_change_on_one_replica_reaches_clients_of_every_replica_once(
    autojump_clock: Any,
) -> None:
    a, b, bus_a, bus_b = two_replicas()
    heard: dict[str, list[str]] = {"a": [], "b": []}

    def recorder(name: str) -> Callable[[], Any]:
        async def changed() -> None:
            heard[name].append("tools")

        return changed

    async with (
        trio.open_nursery() as nursery,
        trimcp.connect_memory(a, on_tools_list_changed=recorder("a")),
        trimcp.connect_memory(b, on_tools_list_changed=recorder("b")),
    ):
        nursery.start_soon(bus_a.run)
        nursery.start_soon(bus_b.run)
        a.add_tool(lambda: "x", name="grown")
        await trio.testing.wait_all_tasks_blocked()
        # The raising replica told its own client directly, and the bus did not hand the
        # event back to it: one notification each.
        assert heard == {"a": ["tools"], "b": ["tools"]}
        nursery.cancel_scope.cancel()


async def test_a_resource_update_reaches_subscribers_on_another_replica(
    autojump_clock: Any,
) -> None:
    a, b, bus_a, bus_b = two_replicas()
    updated: list[str] = []

    async def on_updated(uri: str) -> None:
        updated.append(uri)

    async with (
        trio.open_nursery() as nursery,
        trimcp.connect_memory(b, on_resource_updated=on_updated) as client,
    ):
        nursery.start_soon(bus_a.run)
        nursery.start_soon(bus_b.run)
        await client.subscribe_resource("memo://1")
        await a.notify_resource_updated("memo://2")  # nobody follows it
        await a.notify_resource_updated("memo://1")
        await trio.testing.wait_all_tasks_blocked()
        assert updated == ["memo://1"]
        nursery.cancel_scope.cancel()


async def test_after_a_gap_every_list_is_said_to_have_changed(autojump_clock: Any) -> None:
    a, _, bus_a, _ = two_replicas()
    heard: list[str] = []

    async def tools() -> None:
        heard.append("tools")

    async def prompts() -> None:
        heard.append("prompts")

    async def resources() -> None:
        heard.append("resources")

    async with trimcp.connect_memory(
        a,
        on_tools_list_changed=tools,
        on_prompts_list_changed=prompts,
        on_resources_list_changed=resources,
    ):
        await bus_a.deliver({"t": "gap"})
        await trio.testing.wait_all_tasks_blocked()
        # This server has tools and resources (no prompts: it declares no such list).
        assert sorted(heard) == ["resources", "tools"]


async def test_a_failing_subscriber_does_not_stop_the_others(autojump_clock: Any) -> None:
    subscribers = Subscribers(handler_timeout=1.0)
    seen: list[str] = []

    async def broken(message: BusMessage) -> None:
        raise RuntimeError("boom")

    async def stuck(message: BusMessage) -> None:
        await trio.sleep_forever()

    async def fine(message: BusMessage) -> None:
        seen.append(message["t"])

    for handler in (broken, stuck, fine):
        subscribers.add(handler)
    start = trio.current_time()
    await subscribers.deliver({"t": "x"})
    assert seen == ["x"]
    assert trio.current_time() - start == 1.0  # the stuck one was cut at its bound


class _BusOnlyStore:
    """The parts of a shared store the relay uses."""

    def __init__(self, bus: LoopbackBus) -> None:
        self.bus = bus

    async def request_state_keyring(self, *, rotate_every: float) -> None:
        return None


async def test_a_server_hears_the_store_bus_only_while_served(autojump_clock: Any) -> None:
    from trimcp.stores.bus import MemoryBus
    from trimcp.transports.http_server.relay import ReplicaRelay

    a, _, bus_a, _ = two_replicas()
    a.attach_bus(None)
    relay = ReplicaRelay(None, _BusOnlyStore(bus_a))  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(relay.run, a)
        assert a._replicas.bus is bus_a
        nursery.cancel_scope.cancel()
    assert isinstance(a._replicas.bus, MemoryBus)
