"""State that outlives a call, the same in both protocol eras: ``ctx.user_state`` (per
user) and ``ctx.handles`` (per handle the server minted). See docs/state.md.

- **Per-user state**: JSON values by key, in a bucket keyed by the caller's principal key
  (:func:`trimcp.auth.principal_key`), so the same user finds the same values from any
  session, in either era, on any replica sharing the store. An anonymous caller has none:
  every call raises :class:`NoPrincipal`, saying what to configure.
- **Handles**: ``await ctx.handles.mint("cart", [])`` returns an opaque string a tool hands
  to the client; a later call passes it back and ``ctx.handles.open(handle, "cart")``
  gives its state. The handle is sealed (:mod:`trimcp.server.handles`), bound to the
  principal that minted it and to an expiry, and checked without a store lookup.

Where: the :class:`~trimcp.stores.user_state.UserStateStore` of the server (in memory by
default; served with ``store="redis://..."``, in Redis, shared by the replicas).

Writes: ``set`` is last-writer-wins; ``update(fn)`` is compare-and-set, read, ``fn``,
write-if-unchanged, retried on conflict (at most ``StateOptions.update_attempts`` times).
A write is one atomic step in the store.

Cancellation: reads stop where they are. A write, once started, is shielded and bounded
(``StateOptions.write_timeout``): it lands whole or not at all, then the cancellation
goes on. A cancel before the write starts writes nothing.

Every refusal is a :class:`StateError` (a :class:`~trimcp.server.tools.ToolError`: the
tool's caller reads why): no principal, a budget passed, a conflict that kept recurring,
the store unavailable, or an :class:`~trimcp.server.handles.InvalidHandle`.
"""

from __future__ import annotations

import inspect
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, TypeVar

import attrs
import trio

from trimcp._record import Record
from trimcp._validators import positive
from trimcp.auth.principal import principal_key
from trimcp.protocol.jsonrpc import dump_json, parse_json
from trimcp.server.handles import HandleClaims, InvalidHandle, check_kind, open_handle, seal_handle
from trimcp.server.tools import ToolError
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.request_state import RequestStateKeyring
from trimcp.stores.user_state import (
    Entry,
    MemoryUserStateStore,
    StateBudget,
    StateFull,
    UserStateStore,
    VersionMismatch,
    entry_bytes,
)

__all__ = [
    "MAX_KEY_BYTES",
    "HandleState",
    "Handles",
    "InvalidHandle",
    "NoPrincipal",
    "StateBudget",
    "StateConflict",
    "StateError",
    "StateKeeper",
    "StateLimit",
    "StateOptions",
    "StateUnavailable",
    "UserState",
]

logger = logging.getLogger("trimcp.server.state")

T = TypeVar("T")

#: The longest per-user key, in UTF-8 bytes.
MAX_KEY_BYTES: Final = 256

#: The longest pause between two attempts of one ``update`` (seconds).
_MAX_BACKOFF: Final = 0.05

_USER: Final = "u:"
_HANDLE: Final = "h:"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StateOptions(Record):
    """How a :class:`~trimcp.Server` keeps ``ctx.user_state`` and ``ctx.handles``.

    ``budget``: sizes and TTLs (:class:`~trimcp.stores.user_state.StateBudget`).
    ``store``: where the values live (None: this process's memory, or the shared store
    the server is served with, ``serve_http(store="redis://...")``; a store given here
    wins). ``update_attempts``: how many times ``update(fn)`` tries before it gives up
    with :class:`StateConflict`. ``write_timeout``: the bound of one write (shielded
    from cancellation, so it needs one of its own). ``clock``: wall-clock seconds for
    handle expiry (replicas compare them).
    """

    budget: StateBudget = attrs.field(factory=StateBudget)
    store: UserStateStore | None = None
    update_attempts: int = attrs.field(default=32, validator=positive)
    write_timeout: float = attrs.field(default=5.0, validator=positive)
    clock: Callable[[], float] = time.time


class StateError(ToolError):
    """A ``ctx.user_state`` or ``ctx.handles`` call that could not be done; the message
    says why and what to do (the tool's caller sees it as an ``isError`` result)."""


class NoPrincipal(StateError):
    """The caller is anonymous: there is no user to keep state for."""


class StateLimit(StateError):
    """A :class:`~trimcp.stores.user_state.StateBudget` limit (or the key length) refused
    a write; nothing was written. ``limit`` names it (``"StateBudget.max_user_bytes"``)."""

    def __init__(self, message: str, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class StateConflict(StateError):
    """A compare-and-set found the value changed: ``set(..., if_version=)`` with a stale
    version, or ``update`` losing every one of its attempts to other writers."""


class StateUnavailable(StateError):
    """The store did not answer (in time); the server log says why."""


def _encode(what: str, value: Any) -> bytes:
    try:
        return dump_json(value)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{what}: the value must be JSON (dict, list, str, number...): {error}"
        ) from None


def _fresh(value: Any) -> Any:
    """A copy of a JSON value that ``fn`` may change in place (``default`` is reused on
    every attempt)."""
    return parse_json(dump_json(value))


class _Entries:
    """The calls on one owner's entries, with the guarantees the module states."""

    def __init__(self, keeper: StateKeeper, owner: str | None) -> None:
        self._keeper = keeper
        self._owner = owner

    def owner(self, doing: str) -> str:
        if self._owner is None:
            raise NoPrincipal(
                f"{doing} needs to know who is calling, and this request is anonymous: the "
                "server keeps state per user, so it must authenticate its callers "
                "(Server(auth=ProtectedResource(...)), trimcp run --auth-issuer ..., or an "
                "authenticate= hook over HTTP; stdio and in-memory connections have no user)"
            )
        return self._owner

    async def read(self, owner: str, slot: str) -> Entry | None:
        # A cancelled caller asks nothing (the Redis client sends before it first waits).
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            return await self._keeper.store.get(owner, slot)
        except StoreUnavailable as error:
            raise self._unavailable(error) from None

    async def write(
        self, owner: str, slot: str, name: str, value: Any, *, ttl: float, expected: int | None
    ) -> int:
        keeper = self._keeper
        data = _encode(name, value)
        budget = keeper.store.budget
        size = entry_bytes(slot, data)
        if size > budget.max_value_bytes:  # refused before anything is sent
            raise self._full(name, StateFull("max_value_bytes", budget.max_value_bytes, size, 0))
        try:
            return await self._shielded(
                partial(keeper.store.put, owner, slot, data, ttl=ttl, expected=expected),
                f"writing {name}",
                "it may or may not have been kept; read it back before writing again",
            )
        except StateFull as full:
            raise self._full(name, full) from None

    async def remove(self, owner: str, slot: str, name: str, expected: int | None = None) -> bool:
        return await self._shielded(
            partial(self._keeper.store.delete, owner, slot, expected=expected),
            f"deleting {name}",
            "it may or may not be gone",
        )

    async def _shielded(self, call: Callable[[], Awaitable[T]], doing: str, unknown: str) -> T:
        """``call()`` (a write), not begun when the caller is cancelled already, else
        finished whole before a cancellation goes on: shielded, so a cancelled caller never
        leaves its outcome unknown, and bounded, since a shield would otherwise let a
        stuck store hold the request for ever."""
        await trio.lowlevel.checkpoint_if_cancelled()
        timeout = self._keeper.options.write_timeout
        done: list[T] = []
        with trio.CancelScope(shield=True), trio.move_on_after(timeout):
            try:
                done.append(await call())
            except StoreUnavailable as error:
                raise self._unavailable(error) from None
        if not done:
            raise StateUnavailable(f"{doing} did not finish within {timeout:g} s: {unknown}")
        await trio.lowlevel.checkpoint_if_cancelled()  # done: now the cancellation goes on
        return done[0]

    async def update(
        self, owner: str, slot: str, name: str, fn: Callable[[Any], Any], default: Any, ttl: float
    ) -> Any:
        attempts = self._keeper.options.update_attempts
        for attempt in range(attempts):
            entry = await self.read(owner, slot)
            current = _fresh(default) if entry is None else parse_json(entry.data)
            new = fn(current)
            if inspect.isawaitable(new):
                if inspect.iscoroutine(new):
                    new.close()
                raise TypeError(
                    "update() takes a plain function (it may run several times, so it must "
                    "not wait on anything): read, then set(..., if_version=) for more"
                )
            try:
                await self.write(
                    owner, slot, name, new, ttl=ttl, expected=0 if entry is None else entry.version
                )
            except VersionMismatch:
                # Another writer won: read again, after a pause that grows and is drawn
                # at random, so writers that keep colliding spread out.
                await trio.sleep(random.uniform(0, min(_MAX_BACKOFF, 0.001 * 2**attempt)))
                continue
            return new
        raise StateConflict(
            f"{name} changed under this update {attempts} times in a row (other calls keep "
            "updating it): try again"
        )

    def _full(self, name: str, full: StateFull) -> StateLimit:
        limit = f"StateBudget.{full.limit}"
        if full.limit == "max_value_bytes":
            text = (
                f"{name} would take {full.size} bytes, over the {full.value} bytes one value "
                f"may ({limit}): keep less in it"
            )
        elif full.limit == "max_user_bytes":
            text = (
                f"{name} ({full.size} bytes) does not fit: this user keeps {full.held} of the "
                f"{full.value} bytes one user may ({limit}); delete values, or let old ones "
                "expire"
            )
        else:
            text = (
                f"{name} ({full.size} bytes) does not fit: the server keeps {full.held} of "
                f"the {full.value} bytes it may ({limit}); try again later"
            )
        return StateLimit(text, limit, full.value)

    def _unavailable(self, error: StoreUnavailable) -> StateUnavailable:
        logger.log(
            logging.DEBUG if error.reported else logging.ERROR, "state store call failed: %s", error
        )
        return StateUnavailable(
            "the server's state store is unavailable right now: nothing was read or kept; "
            "try again shortly"
        )


def _user_slot(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a user_state key is a str, got {type(key).__name__}")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise StateLimit(
            f"the key {key[:32]!r}… is {size} bytes; a key is at most {MAX_KEY_BYTES} bytes",
            "MAX_KEY_BYTES",
            MAX_KEY_BYTES,
        )
    return _USER + key


class UserState:
    """``ctx.user_state``: the caller's own JSON values by key, kept across calls,
    sessions, eras and replicas (see the module docstring). Every call raises
    :class:`NoPrincipal` for an anonymous caller and :class:`StateUnavailable` when the
    store does not answer."""

    def __init__(self, keeper: StateKeeper, owner: str | None) -> None:
        self._entries = _Entries(keeper, owner)
        self._keeper = keeper

    async def get(self, key: str, default: Any = None) -> Any:
        """The value kept under ``key``, or ``default`` when there is none (never set,
        deleted or expired). Cancellation: stops, nothing changed."""
        value, _ = await self.versioned(key, default)
        return value

    async def versioned(self, key: str, default: Any = None) -> tuple[Any, int]:
        """``(value, version)``: the version to pass to ``set(..., if_version=)`` (0 when
        there is no value; ``default`` is returned then). Cancellation: as :meth:`get`."""
        owner = self._entries.owner("ctx.user_state")
        entry = await self._entries.read(owner, _user_slot(key))
        if entry is None:
            return default, 0
        return parse_json(entry.data), entry.version

    async def set(self, key: str, value: Any, *, if_version: int | None = None) -> int:
        """Keep ``value`` (any JSON value) under ``key`` for ``StateBudget.ttl`` seconds;
        returns its new version. Last writer wins, unless ``if_version`` is given: then the
        value is written only while its version is that one (0: only while there is none),
        else :class:`StateConflict`. Raises :class:`StateLimit` past a budget.
        Cancellation: the write, once started, completes (bounded) before the
        cancellation goes on; never half written."""
        owner = self._entries.owner("ctx.user_state")
        name = f"user_state[{key[:64]!r}]"
        try:
            return await self._entries.write(
                owner,
                _user_slot(key),
                name,
                value,
                ttl=self._keeper.store.budget.ttl,
                expected=if_version,
            )
        except VersionMismatch as mismatch:
            raise StateConflict(
                f"{name} is at version {mismatch.current}, not {if_version}: another call "
                "changed it; read it again"
            ) from None

    async def update(self, key: str, fn: Callable[[Any], Any], *, default: Any = None) -> Any:
        """Replace the value under ``key`` with ``fn(value)`` (``fn(default)`` when there
        is none) and return the new value, safely against concurrent writers on any
        replica: compare-and-set, retried with a fresh read when another write came
        first (``fn`` may run several times: keep it a plain function of its argument).
        Raises :class:`StateConflict` after ``StateOptions.update_attempts`` lost races.
        Cancellation: as :meth:`set`; a cancel between attempts writes nothing more."""
        owner = self._entries.owner("ctx.user_state")
        name = f"user_state[{key[:64]!r}]"
        return await self._entries.update(
            owner, _user_slot(key), name, fn, default, self._keeper.store.budget.ttl
        )

    async def delete(self, key: str) -> bool:
        """Forget the value under ``key``; False when there was none. Cancellation: as
        :meth:`set`."""
        owner = self._entries.owner("ctx.user_state")
        return await self._entries.remove(owner, _user_slot(key), f"user_state[{key[:64]!r}]")


class HandleState:
    """The state behind one handle that opened for this caller (``ctx.handles.open``).

    ``handle`` is the handle itself, ``kind`` what it stands for, ``expires_at`` when it
    stops opening (Unix seconds). The state is kept until then. Methods: as
    :class:`UserState`'s, for the one value of this handle.
    """

    def __init__(self, keeper: StateKeeper, owner: str, handle: str, claims: HandleClaims) -> None:
        self._entries = _Entries(keeper, owner)
        self._keeper = keeper
        self._owner = owner
        self._slot = _HANDLE + claims.id
        self._name = f"the {claims.kind} handle's state"
        self.handle = handle
        self.kind = claims.kind
        self.expires_at = claims.expires_at

    def _ttl(self) -> float:
        left = self.expires_at - self._keeper.options.clock()
        if left <= 0:
            raise InvalidHandle("expired", f"the {self.kind} handle expired: get a new one")
        return left

    async def get(self, default: Any = None) -> Any:
        """The handle's value (``default``: none kept). Cancellation: stops."""
        value, _ = await self.versioned(default)
        return value

    async def versioned(self, default: Any = None) -> tuple[Any, int]:
        """``(value, version)``, as :meth:`UserState.versioned`."""
        entry = await self._entries.read(self._owner, self._slot)
        if entry is None:
            return default, 0
        return parse_json(entry.data), entry.version

    async def set(self, value: Any, *, if_version: int | None = None) -> int:
        """Keep ``value`` as the handle's state until the handle expires; as
        :meth:`UserState.set`."""
        try:
            return await self._entries.write(
                self._owner, self._slot, self._name, value, ttl=self._ttl(), expected=if_version
            )
        except VersionMismatch as mismatch:
            raise StateConflict(
                f"{self._name} is at version {mismatch.current}, not {if_version}: another "
                "call changed it; read it again"
            ) from None

    async def update(self, fn: Callable[[Any], Any], *, default: Any = None) -> Any:
        """``fn(value)`` becomes the handle's state, safely against concurrent writers;
        as :meth:`UserState.update`."""
        return await self._entries.update(
            self._owner, self._slot, self._name, fn, default, self._ttl()
        )

    async def delete(self) -> bool:
        """Forget the handle's state (the handle still opens, with no value)."""
        return await self._entries.remove(self._owner, self._slot, self._name)


class Handles:
    """``ctx.handles``: mint handles for state, and open the ones callers pass back."""

    def __init__(self, keeper: StateKeeper, owner: str | None) -> None:
        self._keeper = keeper
        self._entries = _Entries(keeper, owner)

    async def mint(self, kind: str, value: Any = None, *, ttl: float | None = None) -> str:
        """A new handle for a ``kind`` thing (``"cart"``; 1-64 letters, digits, ``_.-``)
        whose state starts as ``value``, valid ``ttl`` seconds (default and most:
        ``StateBudget.handle_ttl``) for this caller only. Return it to the client; take
        it back as a tool argument and :meth:`open` it. Raises :class:`NoPrincipal` for
        an anonymous caller, :class:`StateLimit` past a budget. Cancellation: as
        :meth:`UserState.set` (a handle whose write was cancelled is never returned)."""
        owner = self._entries.owner("ctx.handles")
        keeper = self._keeper
        longest = keeper.store.budget.handle_ttl
        if ttl is None:
            ttl = longest
        if not 0 < ttl <= longest:
            raise ValueError(f"a handle's ttl is > 0 and at most {longest} s (handle_ttl)")
        claims = HandleClaims(
            id=secrets.token_urlsafe(16),
            kind=check_kind(kind),
            owner=owner,
            expires_at=round(keeper.options.clock() + ttl, 3),
        )
        handle = seal_handle(keeper.keyring, claims)
        await self._entries.write(
            owner, _HANDLE + claims.id, f"the new {kind} handle's state", value, ttl=ttl, expected=0
        )
        return handle

    def open(self, handle: str, kind: str | None = None) -> HandleState:
        """The state behind ``handle``, which a tool of this server minted for this caller
        (of ``kind``, when given). Reads nothing: raises :class:`InvalidHandle` (forged or
        altered, sealed with a key rotated out, another user's, another kind, expired) or
        :class:`NoPrincipal`, each a tool error saying why."""
        owner = self._entries.owner("a handle")
        keeper = self._keeper
        claims = open_handle(
            keeper.keyring, handle, owner=owner, kind=kind, now=keeper.options.clock()
        )
        return HandleState(keeper, owner, handle, claims)


class StateKeeper:
    """One server's state keeping: its options, the store in use, the keyring sealing its
    handles. ``Server.state`` holds it; a mounted server follows the one it is mounted
    into (its tools keep state where the serving server does)."""

    def __init__(self, options: StateOptions, keyring: Callable[[], RequestStateKeyring]) -> None:
        self.options = options
        self._keyring = keyring
        self._attached: UserStateStore | None = None
        self._memory: MemoryUserStateStore | None = None
        self._parent: StateKeeper | None = None

    @property
    def store(self) -> UserStateStore:
        """The store in use: the parent's when mounted, else the one given in the
        options, else the one attached while served, else this process's memory."""
        if self._parent is not None:
            return self._parent.store
        if self.options.store is not None:
            return self.options.store
        if self._attached is not None:
            return self._attached
        if self._memory is None:
            self._memory = MemoryUserStateStore(self.options.budget)
        return self._memory

    @property
    def keyring(self) -> RequestStateKeyring:
        """The keyring sealing handles: the server's ``requestState`` one (shared by the
        replicas on a shared store, rotated with it)."""
        if self._parent is not None:
            return self._parent.keyring
        return self._keyring()

    def attach(self, store: UserStateStore | None) -> None:
        """Keep state in ``store`` (the shared one the server is served with) unless the
        options name a store; None: back to this process's memory. Called by
        ``serve_http(store=...)``."""
        self._attached = store

    def follow(self, parent: StateKeeper) -> None:
        """Keep state where ``parent`` does (this server was mounted into its server)."""
        if parent is self or self._parent is not None:
            return  # mounted twice: the first server it was mounted into serves it
        self._parent = parent

    def user_state(self, principal: object) -> UserState:
        """``ctx.user_state`` for a request acting for ``principal``."""
        return UserState(self, principal_key(principal))

    def handles(self, principal: object) -> Handles:
        """``ctx.handles`` for a request acting for ``principal``."""
        return Handles(self, principal_key(principal))
