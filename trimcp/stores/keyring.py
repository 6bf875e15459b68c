"""The ``requestState`` keyring shared through the store: replicas agree, no secret in config.

Keys live in one Redis hash (``<prefix>rs-keys``), one field per rotation period: key id
``p<n>`` is the key of period ``n = floor(unix time / rotate_every)``. Every replica makes
the keys of this period and the next one with ``HSETNX`` (the first replica to ask wins,
so all hold the same bytes) and reads the hash back; it seals with this period's key and
opens with the previous, current and next ones. So keys rotate every ``rotate_every``
seconds without coordination, a state sealed just before a rotation still opens for a
whole period (``rotate_every`` must be at least the longest state TTL), and replicas whose
clocks differ by less than a period agree. Older fields are deleted, and the hash expires
after a few periods of disuse: nothing grows.

A keyring given in configuration (``RequestStateKeyring.from_secret``) is kept as it is:
this applies only to a server left with its default (random, per process) keyring.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import suppress

import trio

from trimcp.stores.base import Store, StoreUnavailable
from trimcp.stores.redis_client import RedisClient, RedisReplyError
from trimcp.stores.request_state import RequestStateKeyring

logger = logging.getLogger("trimcp.stores.keyring")

#: How often a replica re-reads the shared keys (at most; a shorter period reads more often).
REFRESH_EVERY = 60.0


async def load_shared_keyring(
    client: RedisClient,
    key: str,
    *,
    rotate_every: float,
    clock: Callable[[], float] = time.time,
) -> RequestStateKeyring:
    """The keyring of the current period from the hash ``key`` (made when missing).

    Raises StoreUnavailable (or RedisReplyError when ``key`` holds something else)."""
    if rotate_every <= 0:
        raise ValueError("rotate_every must be > 0 seconds")
    period = int(clock() // rotate_every)
    wanted = {f"p{period - 1}", f"p{period}", f"p{period + 1}"}
    keep_ms = max(1, int(rotate_every * 4 * 1000))
    replies = await client.pipeline(
        [
            ("HSETNX", key, f"p{period}", os.urandom(32)),
            ("HSETNX", key, f"p{period + 1}", os.urandom(32)),
            ("HGETALL", key),
            ("PEXPIRE", key, keep_ms),
        ]
    )
    fields = replies[2]
    if not isinstance(fields, list):
        raise RedisReplyError(f"{client.address}: {key} is not a keyring hash: {fields!r}")
    keys: dict[str, bytes] = {}
    stale: list[bytes] = []
    for name, value in zip(fields[::2], fields[1::2], strict=True):
        key_id = name.decode("ascii", "replace")
        if key_id in wanted and isinstance(value, bytes) and len(value) == 32:
            keys[key_id] = value
        else:
            stale.append(name)
    if stale:
        with suppress(StoreUnavailable):  # best effort: the next refresh tries again
            await client.execute("HDEL", key, *stale)
    return RequestStateKeyring(keys, current=f"p{period}")


async def keep_keyring_shared(
    store: Store,
    keyring: RequestStateKeyring,
    *,
    rotate_every: float = 24 * 3600.0,
    retry_every: float = 5.0,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Keep ``keyring`` holding the keys ``store`` shares, until cancelled.

    Started once the first load is done (or failed: then this process seals with its own
    key, logged, until the store answers; states it issued meanwhile open only here).
    Cancellation: stops refreshing; the keyring keeps its last keys.
    """
    started = False
    failing = False
    while True:
        try:
            shared = await store.request_state_keyring(rotate_every=rotate_every)
        except (StoreUnavailable, RedisReplyError) as error:
            if not failing:
                failing = True
                logger.error(
                    "the shared requestState keys could not be read (%s): this replica "
                    "seals with its own key until the store answers",
                    error,
                )
            wait = retry_every
        else:
            if shared is None:
                if not started:
                    task_status.started()
                return  # the store shares no keys (one process)
            if failing:
                failing = False
                logger.warning("the shared requestState keys are read again")
            keyring.adopt(shared)
            wait = min(REFRESH_EVERY, rotate_every / 8)
        if not started:
            started = True
            task_status.started()
        await trio.sleep(wait)
