"""``ctx.user_state`` and ``ctx.handles`` on the in-memory store (trimcp.server.state).

The API straight on a :class:`StateKeeper` (as a Context reaches it), under the autojump
clock: bounds (per value, per user, in total, the key length), expiry of values and of
handles, every way a handle is refused (forged, another user, another kind, expired, a
key rotated out) without a store lookup, an old handle opening while its key is still
held, compare-and-set and ``update`` retrying, anonymous callers, and cancellation
before and during a write. Then the same through a served :class:`~trimcp.Server` in both
eras (an ``authenticate`` hook names the user).
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from tests.server.helpers import text_of
from trimcp import Context, Server, connect_http
from trimcp.server.handles import InvalidHandle
from trimcp.server.state import (
    MAX_KEY_BYTES,
    NoPrincipal,
    StateConflict,
    StateKeeper,
    StateLimit,
    StateOptions,
    StateUnavailable,
)
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.request_state import RequestStateKeyring
from trimcp.stores.user_state import (
    Entry,
    MemoryUserStateStore,
    StateBudget,
    UserStateStore,
)
from trimcp.transports.http_server import HttpServerConfig, serve_http

OLD_SECRET = "an old secret of sixteen bytes or more"
NEW_SECRET = "a new secret of sixteen bytes or more"


class Wall:
    """A wall clock the test moves (handle expiry is on wall-clock seconds)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def keeper(
    *,
    budget: StateBudget | None = None,
    store: UserStateStore | None = None,
    keyring: RequestStateKeyring | None = None,
    clock: Wall | None = None,
    attempts: int = 32,
) -> StateKeeper:
    ring = keyring or RequestStateKeyring()
    options = StateOptions(
        budget=budget or StateBudget(),
        store=store,
        clock=clock or Wall(),
        update_attempts=attempts,
    )
    return StateKeeper(options, lambda: ring)


# --- per-user state ---------------------------------------------------------------------


async def test_each_user_sees_only_their_own_values() -> None:
    state = keeper()
    alice, bob = state.user_state("alice"), state.user_state("bob")
    assert await alice.get("color") is None
    assert await alice.get("color", "none") == "none"
    await alice.set("color", "blue")
    await alice.set("prefs", {"units": "metric", "days": [1, 2]})
    assert await alice.get("color") == "blue"
    assert await alice.get("prefs") == {"units": "metric", "days": [1, 2]}
    assert await bob.get("color") is None
    # The same principal in a new request (a new object) finds the same values.
    assert await state.user_state("alice").get("color") == "blue"
    assert await alice.delete("color") is True
    assert await alice.delete("color") is False
    assert await alice.get("color") is None


async def test_an_anonymous_caller_is_told_why_it_has_no_state() -> None:
    state = keeper()
    with pytest.raises(NoPrincipal, match=r"anonymous.*authenticate its callers"):
        await state.user_state(None).get("color")
    with pytest.raises(NoPrincipal, match="Server\\(auth=ProtectedResource"):
        await state.handles(None).mint("cart")
    with pytest.raises(NoPrincipal):
        state.handles(None).open("v1.x.y")


async def test_values_are_bounded_per_value_per_user_and_in_total() -> None:
    # An entry counts its slot and its JSON: "u:a" and 80 x's in quotes are 85 bytes.
    budget = StateBudget(max_value_bytes=100, max_user_bytes=200, max_total_bytes=400)
    store = MemoryUserStateStore(budget)
    state = keeper(budget=budget, store=store)
    alice, bob, carol = (state.user_state(name) for name in ("alice", "bob", "carol"))
    with pytest.raises(StateLimit, match="over the 100 bytes one value") as big:
        await alice.set("k", "x" * 100)
    assert big.value.limit == "StateBudget.max_value_bytes"
    await alice.set("a", "x" * 80)
    await alice.set("b", "x" * 80)
    with pytest.raises(StateLimit, match="this user keeps 170 of the 200 bytes") as mine:
        await alice.set("c", "x" * 80)
    assert mine.value.limit == "StateBudget.max_user_bytes"
    assert await alice.get("c") is None  # refused: nothing written
    await alice.set("a", "y" * 80)  # replacing a value by one as big always fits
    await alice.set("a", "short")  # and a smaller one gives bytes back
    await alice.set("c", "x" * 80)
    await bob.set("a", "x" * 80)
    await bob.set("b", "x" * 80)
    assert store.total_bytes == 350
    with pytest.raises(StateLimit, match="the server keeps 350 of the 400 bytes") as total:
        await carol.set("c", "x" * 80)
    assert total.value.limit == "StateBudget.max_total_bytes"
    await alice.delete("b")
    await carol.set("c", "x" * 80)  # the bytes alice gave back
    assert store.total_bytes == 350
    assert store.owner_bytes(state_owner("alice")) == 95


def state_owner(principal: object) -> str:
    from trimcp.auth.principal import principal_key

    key = principal_key(principal)
    assert key is not None
    return key


async def test_a_key_is_bounded() -> None:
    alice = keeper().user_state("alice")
    await alice.set("k" * MAX_KEY_BYTES, 1)
    with pytest.raises(StateLimit, match=f"at most {MAX_KEY_BYTES} bytes"):
        await alice.set("k" * (MAX_KEY_BYTES + 1), 1)
    with pytest.raises(TypeError, match="must be JSON"):
        await alice.set("k", {1, 2})


async def test_values_expire_ttl_seconds_after_their_last_write(autojump_clock: Any) -> None:
    budget = StateBudget(ttl=100)
    store = MemoryUserStateStore(budget)
    alice = keeper(budget=budget, store=store).user_state("alice")
    await alice.set("kept", 1)
    await alice.set("refreshed", 1)
    await trio.sleep(60)
    await alice.set("refreshed", 2)  # a write keeps it another ttl
    await trio.sleep(50)
    assert await alice.get("kept") is None
    assert await alice.get("refreshed") == 2
    await trio.sleep(60)
    assert await alice.get("refreshed") is None
    assert store.total_bytes == 0  # expired values give their bytes back


async def test_rewriting_keeps_the_expiry_heap_small(autojump_clock: Any) -> None:
    store = MemoryUserStateStore()
    alice = keeper(store=store).user_state("alice")
    for n in range(1000):
        await alice.set("counter", n)
    assert len(store._expiries) <= 2 * 1 + 64 + 1


# --- compare-and-set and update ---------------------------------------------------------


async def test_set_with_a_version_is_compare_and_set() -> None:
    alice = keeper().user_state("alice")
    with pytest.raises(StateConflict, match="version 0, not 5"):
        await alice.set("n", 1, if_version=5)
    first = await alice.set("n", 1, if_version=0)  # 0: only while there is none
    value, version = await alice.versioned("n")
    assert (value, version) == (1, first)
    with pytest.raises(StateConflict, match="another call changed it"):
        await alice.set("n", 2, if_version=0)
    second = await alice.set("n", 2, if_version=version)
    assert second != first
    with pytest.raises(StateConflict):
        await alice.set("n", 3, if_version=first)  # stale
    assert await alice.get("n") == 2
    # Deleted and made again: a version never seen before, so no stale one matches.
    await alice.delete("n")
    third = await alice.set("n", 3)
    assert third not in (first, second)
    with pytest.raises(StateConflict):
        await alice.set("n", 4, if_version=second)


class Racing:
    """A memory store where another writer changes the value between each read and the
    write that follows it, ``times`` times."""

    def __init__(self, times: int) -> None:
        self.inner = MemoryUserStateStore()
        self.times = times

    @property
    def budget(self) -> StateBudget:
        return self.inner.budget

    async def get(self, owner: str, slot: str) -> Entry | None:
        entry = await self.inner.get(owner, slot)
        if self.times > 0:
            self.times -= 1
            await self.inner.put(owner, slot, b"100", ttl=60)  # someone else's write
        return entry

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        return await self.inner.put(owner, slot, data, ttl=ttl, expected=expected)

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        return await self.inner.delete(owner, slot, expected=expected)


async def test_update_retries_on_conflict_and_gives_up_when_bounded() -> None:
    racing = Racing(times=3)
    alice = keeper(store=racing).user_state("alice")
    calls: list[Any] = []

    def add_one(n: int) -> int:
        calls.append(n)
        return n + 1

    assert await alice.update("n", add_one, default=0) == 101
    assert calls == [0, 100, 100, 100]  # three lost races, each read again
    assert await alice.get("n") == 101
    always = keeper(store=Racing(times=10**6), attempts=4).user_state("alice")
    with pytest.raises(StateConflict, match="changed under this update 4 times"):
        await always.update("n", add_one, default=0)


async def test_update_gets_a_fresh_default_each_attempt() -> None:
    alice = keeper(store=Racing(times=0)).user_state("alice")
    default: list[str] = []
    assert await alice.update("items", lambda items: items.append("x") or items, default=default)
    assert default == []  # fn changed a copy


async def test_update_refuses_an_async_function() -> None:
    alice = keeper().user_state("alice")

    async def later(value: Any) -> Any:
        return value

    with pytest.raises(TypeError, match="plain function"):
        await alice.update("n", later)


async def test_concurrent_updates_in_one_process_lose_nothing(autojump_clock: Any) -> None:
    # 30 writers at once, each read-then-write: every round one wins, so none loses more
    # than 29 races, within the 32 attempts.
    alice = keeper().user_state("alice")
    async with trio.open_nursery() as nursery:
        for _ in range(30):
            nursery.start_soon(partial(alice.update, "n", lambda n: n + 1, default=0))
    assert await alice.get("n") == 30


# --- cancellation -----------------------------------------------------------------------


class Gated:
    """A store whose writes wait at a gate, as a round trip to Redis does: the test
    cancels the caller while a write is under way."""

    def __init__(self) -> None:
        self.inner = MemoryUserStateStore()
        self.writing = trio.Event()
        self.gate = trio.Event()

    @property
    def budget(self) -> StateBudget:
        return self.inner.budget

    async def get(self, owner: str, slot: str) -> Entry | None:
        return await self.inner.get(owner, slot)

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        self.writing.set()
        await self.gate.wait()
        return await self.inner.put(owner, slot, data, ttl=ttl, expected=expected)

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        return await self.inner.delete(owner, slot, expected=expected)


async def test_a_write_under_way_when_the_caller_is_cancelled_lands_whole() -> None:
    gated = Gated()
    alice = keeper(store=gated).user_state("alice")
    await gated.inner.put(state_owner("alice"), "u:cart", b'["apple"]', ttl=60)
    outcome: list[str] = []
    request = trio.CancelScope()  # the request's scope, as the engine holds it

    async def add() -> None:
        with request:
            try:
                await alice.update("cart", lambda items: [*items, "pear"], default=[])
            except trio.Cancelled:
                outcome.append("cancelled")
                raise
            outcome.append("returned")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(add)
            await gated.writing.wait()
            request.cancel()  # mid-write
            await trio.testing.wait_all_tasks_blocked()
            assert outcome == []  # still writing: the write is shielded
            gated.gate.set()
    assert outcome == ["cancelled"]  # the cancellation went on, after the write
    assert await alice.get("cart") == ["apple", "pear"]


async def test_a_cancel_before_the_write_writes_nothing() -> None:
    gated = Gated()
    alice = keeper(store=gated).user_state("alice")
    writes = (
        partial(alice.update, "cart", lambda items: [*items, "pear"], default=[]),
        partial(alice.set, "cart", ["pear"]),
        partial(alice.delete, "cart"),
        partial(keeper(store=gated).handles("alice").mint, "cart", []),
    )
    for write in writes:
        with trio.CancelScope() as scope:
            scope.cancel()
            await write()
        assert scope.cancelled_caught
    assert not gated.writing.is_set()
    assert await alice.get("cart") is None


class Stuck(Gated):
    """A store whose writes never finish."""


async def test_a_stuck_write_is_bounded_even_though_it_is_shielded(autojump_clock: Any) -> None:
    stuck = Stuck()
    state = StateKeeper(StateOptions(store=stuck, write_timeout=3.0), lambda: RequestStateKeyring())
    with (
        pytest.raises(StateUnavailable, match="did not finish within 3 s"),
        trio.move_on_after(1) as request,  # the request's own deadline: shielded from
    ):
        await state.user_state("alice").set("k", 1)
    assert request.cancel_called


class Down:
    """A store that cannot be reached."""

    budget = StateBudget()

    async def get(self, owner: str, slot: str) -> Entry | None:
        raise StoreUnavailable("the shared store at redis://x is unavailable (refused)")

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        raise StoreUnavailable("the shared store at redis://x is unavailable (refused)")

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        raise StoreUnavailable("the shared store at redis://x is unavailable (refused)")


async def test_an_unavailable_store_is_a_tool_error_without_its_address() -> None:
    alice = keeper(store=Down()).user_state("alice")
    for call in (alice.get("k"), alice.set("k", 1), alice.delete("k")):
        with pytest.raises(StateUnavailable, match="unavailable right now") as error:
            await call
        assert "redis://" not in str(error.value)


# --- handles ----------------------------------------------------------------------------


async def test_a_handle_keeps_its_state_for_the_user_it_was_minted_for() -> None:
    state = keeper()
    cart = await state.handles("alice").mint("cart", [])
    assert isinstance(cart, str)
    opened = state.handles("alice").open(cart, "cart")
    assert await opened.update(lambda items: [*items, "apple"]) == ["apple"]
    again = state.handles("alice").open(cart)  # another call, the same handle
    assert await again.update(lambda items: [*items, "pear"]) == ["apple", "pear"]
    assert again.kind == "cart"
    other = await state.handles("alice").mint("cart", ["fig"])
    assert await state.handles("alice").open(other).get() == ["fig"]  # its own state
    assert await state.handles("alice").open(cart).get() == ["apple", "pear"]


class Counting(MemoryUserStateStore):
    """Counts store calls: opening a handle must make none."""

    calls = 0

    async def get(self, owner: str, slot: str) -> Entry | None:
        Counting.calls += 1
        return await super().get(owner, slot)


async def test_handles_are_refused_with_the_reason_and_without_a_store_lookup() -> None:
    clock = Wall()
    store = Counting(StateBudget(handle_ttl=600))
    state = keeper(store=store, clock=clock, budget=StateBudget(handle_ttl=600))
    cart = await state.handles("alice").mint("cart", [])
    Counting.calls = 0
    refusals: dict[str, tuple[object, str | None, str]] = {
        "other user": ("bob", None, "minted for another user"),
        "other kind": ("alice", "note", "is a 'cart' handle, not a 'note' one"),
    }
    for reason, (who, kind, text) in refusals.items():
        with pytest.raises(InvalidHandle, match=text) as refused:
            state.handles(who).open(cart, kind)
        assert refused.value.reason == reason
    body = cart.rsplit(".", 1)[1]
    flipped = "A" if body[10] != "A" else "B"
    for forged in (
        cart[:-12] + "AAAAAAAAAAAA",
        cart.rsplit(".", 1)[0] + "." + body[:10] + flipped + body[11:],
        "not a handle",
        "v1..",
        "",
    ):
        with pytest.raises(InvalidHandle, match="not a handle this server minted") as refused:
            state.handles("alice").open(forged)
        assert refused.value.reason == "forged"
    clock.now += 601
    with pytest.raises(InvalidHandle, match=r"cart handle .* expired at") as refused:
        state.handles("alice").open(cart)
    assert refused.value.reason == "expired"
    assert Counting.calls == 0


async def test_a_handle_state_lives_as_long_as_the_handle(autojump_clock: Any) -> None:
    budget = StateBudget(handle_ttl=300)
    store = MemoryUserStateStore(budget)
    state = keeper(store=store, budget=budget)
    await state.handles("alice").mint("cart", ["x"], ttl=100)
    await trio.sleep(101)
    assert store.total_bytes == 0  # gone with its handle
    with pytest.raises(ValueError, match="at most 300 s"):
        await state.handles("alice").mint("cart", [], ttl=301)
    with pytest.raises(ValueError, match="handle kind"):
        await state.handles("alice").mint("a cart", [])


async def test_a_handle_cannot_pass_as_a_request_state_nor_the_reverse() -> None:
    ring = RequestStateKeyring()
    state = keeper(keyring=ring)
    sealed = ring.seal(b'{"i":"x","k":"cart","o":"p:0","e":9e12}', b"something else")
    with pytest.raises(InvalidHandle, match="not a handle this server minted"):
        state.handles("alice").open(sealed)


async def test_an_old_handle_opens_while_its_key_is_held_during_rotation() -> None:
    ring = RequestStateKeyring.from_secret(OLD_SECRET)
    state = keeper(keyring=ring)
    cart = await state.handles("alice").mint("cart", ["apple"])
    # Rotation begins: the new key seals, the old one still opens.
    ring.adopt(RequestStateKeyring.from_secret(NEW_SECRET, OLD_SECRET))
    assert await state.handles("alice").open(cart).get() == ["apple"]
    fresh = await state.handles("alice").mint("cart", [])
    assert fresh.split(".")[1] != cart.split(".")[1]  # sealed with the new key
    # Rotation over: the old key is dropped, and its handles with it.
    ring.adopt(RequestStateKeyring.from_secret(NEW_SECRET))
    with pytest.raises(InvalidHandle, match="key this server no longer holds") as refused:
        state.handles("alice").open(cart)
    assert refused.value.reason == "unknown key"
    assert await state.handles("alice").open(fresh).get() == []


# --- through a served Server, both eras -------------------------------------------------


def cart_server() -> Server:
    app = Server("state-test")

    @app.tool()
    async def remember(key: str, value: str, ctx: Context) -> str:
        await ctx.user_state.set(key, value)
        return "ok"

    @app.tool()
    async def recall(key: str, ctx: Context) -> str:
        value: str = await ctx.user_state.get(key, "(nothing)")
        return value

    @app.tool()
    async def open_cart(ctx: Context) -> str:
        return await ctx.handles.mint("cart", [])

    @app.tool()
    async def add_item(cart: str, item: str, ctx: Context) -> list[str]:
        items: list[str] = await ctx.handles.open(cart, "cart").update(lambda items: [*items, item])
        return items

    return app


async def by_header(scope: dict[str, Any]) -> Hashable | None:
    headers: dict[bytes, bytes] = dict(scope["headers"])
    value = headers.get(b"authorization")
    return None if value is None else value.decode().removeprefix("Bearer ")


async def test_a_served_server_keeps_state_across_calls_and_eras() -> None:
    app = cart_server()

    async def call(url: str, user: str | None, mode: str, tool: str, **args: str) -> Any:
        headers = {} if user is None else {"Authorization": f"Bearer {user}"}
        async with connect_http(url, headers=headers, mode=mode) as client:
            result = await client.call_tool(tool, args)
            return result.is_error, text_of(result)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            config = HttpServerConfig(authenticate=by_header)
            port = await nursery.start(partial(serve_http, app, port=0, config=config))
            url = f"http://127.0.0.1:{port}/mcp"
            new, old = "2026-07-28", "2025-11-25"
            assert await call(url, "alice", new, "remember", key="k", value="v") == (None, "ok")
            assert (await call(url, "alice", old, "recall", key="k"))[1] == "v"
            assert (await call(url, "bob", new, "recall", key="k"))[1] == "(nothing)"
            error, text = await call(url, None, new, "recall", key="k")
            assert error
            assert "anonymous" in text
            _, cart = await call(url, "alice", new, "open_cart")
            assert (await call(url, "alice", old, "add_item", cart=cart, item="a"))[1] == '["a"]'
            _, items = await call(url, "alice", new, "add_item", cart=cart, item="b")
            assert items == '["a", "b"]'
            error, text = await call(url, "bob", old, "add_item", cart=cart, item="c")
            assert error
            assert "another user" in text
            nursery.cancel_scope.cancel()


def test_a_mounted_server_keeps_state_where_the_serving_one_does() -> None:
    parent, child = Server("parent"), Server("child")
    parent.mount(child, "shop")
    shared = MemoryUserStateStore()
    parent.attach_state_store(shared)  # as serve_http(store="redis://...") does
    assert child.state.store is shared
    assert child.state.keyring is parent.request_state_keyring
    assert parent.state_budget is parent.state.options.budget
    parent.attach_state_store(None)
    assert child.state.store is parent.state.store is not shared  # its memory again
