"""The task runner: a nursery owned by whoever runs the tasks, in which every task runs.

Written for the server (below); a client running tasks for its server uses the same
runner with ``holder="client"``, opened inside its session
(:mod:`trimcp.client.task_receiver`); only the wording of errors differs.

Lifetimes on a server (see ``docs/tasks.md``):

- :meth:`TaskManager.open` opens the nursery. Every serving function of ``trimcp.Server``
  enters it (shared: the first entry owns it); a task therefore belongs to the server, not
  to the session or the request that created it. A client that disconnects does not stop
  its tasks.
- Each task runs in its own :class:`trio.CancelScope` whose deadline is the task's expiry
  (``created + ttl``): ``tasks/cancel`` cancels that scope, and the TTL ends the work.
  With a store the replicas share, the task runs where it was created; a ``tasks/cancel``
  that reaches another replica records the cancel and tells the others
  (:attr:`TaskManager.cancelled_elsewhere`), and the runner stops the work
  (:meth:`TaskManager.stop_if_cancelled`).
- When the nursery's owner leaves (server shutdown), no new task is accepted, running
  tasks get ``TaskOptions.shutdown_grace`` seconds to finish, then they are cancelled and
  their final status (``cancelled``, "the server shut down") is recorded in the store.
- How the work ended goes through the one outcome mapping
  (:func:`trimcp.session.outcome.settle`, as a request's handler): a result completes the
  task, an ``McpError`` fails it with that error, anything else it raises
  (``SystemExit``, ``KeyboardInterrupt`` included) fails it with ``-32603`` and is
  logged; the runner goes on. The work runs KI-protected: a real Ctrl-C goes to the
  main task.

A task is *durably created* before its handle is returned: its record is in the
:class:`~trimcp.tasks.store.TaskStore` (so ``tasks/get`` finds it) before the work
starts and before ``CreateTaskResult`` is sent.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final, Literal

import attrs
import trio

from trimcp import serde
from trimcp._groups import open_nursery_unwrapped
from trimcp._record import Record
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    McpError,
    SessionClosed,
)
from trimcp.protocol.methods import lookup
from trimcp.protocol.pagination import paginate
from trimcp.session.outcome import Outcome, settle
from trimcp.tasks.inputs import InputQueue, PendingInput
from trimcp.tasks.store import MemoryTaskStore, TaskBudget, TaskRecord, TaskStore, TaskStoreFull
from trimcp.types import RELATED_TASK_META_KEY, TaskStatus

logger = logging.getLogger("trimcp.tasks")

#: Seconds a store call made while recording a final status may take (it is shielded).
STORE_TIMEOUT: Final = 5.0
#: A task id's random bytes: ids are their lower-case hex, and only such ids are looked up.
TASK_ID_BYTES: Final = 16
_TASK_ID: Final = re.compile(rf"[0-9a-f]{{{2 * TASK_ID_BYTES}}}")

#: How often a ``tasks/update`` that no other replica heard asks after the task's record.
RUNNER_CHECK: Final = 0.25

#: ``forward(method, params)`` sends one of a task's questions to the client and returns
#: the typed answer (the ``tasks/result`` handler's session does it).
Forward = Callable[[str, dict[str, Any]], Awaitable[Any]]
#: Called with the record after each status change (status notifications).
StatusListener = Callable[[TaskRecord], Awaitable[None]]


_NOT_RUNNING: Final = {
    "server": "This server is not running tasks now (it is shutting down, or it is served "
    "without its task runner: serve it with app.run(), a serve_* function, or inside "
    "`async with app.tasks.open():`)",
    "client": "This client is not running tasks now (it is closing, or it was attached "
    "without its task runner: use an opener, or `async with client.open_task_runner():`)",
}
_TOO_MANY: Final = {
    "server": "Too many running tasks ({limit}) for this client; "
    "wait for some to finish or cancel them",
    "client": "This client already runs {limit} tasks for the server, its limit "
    "(TaskOptions.max_running); wait for some to finish or cancel them with tasks/cancel",
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskOptions(Record):
    """Limits and hints for a server's tasks (seconds unless said otherwise).

    ``default_ttl``: the TTL of a task whose client asked none. ``min_ttl``/``max_ttl``:
    a requested TTL is clamped into this range (a TTL of 0 becomes ``min_ttl``; a huge
    one ``max_ttl``): the TTL is both the work's deadline and how long the result is kept.
    ``poll_interval``: the ``pollInterval`` hint. ``shutdown_grace``: how long running
    tasks may go on when the server stops before they are cancelled. ``max_running``:
    tasks running at once per owner (principal); more are refused with ``-32603``.
    ``max_pending_inputs``: questions (elicitation, sampling) one task may wait on at once.
    ``input_timeout``: how long a task waits for each answer (None: until its TTL).
    ``page_size``: tasks per ``tasks/list`` page. ``notify_timeout``: how long a status
    notification may wait for a slow session before it is skipped. ``answer_timeout``:
    with a store the replicas share, how long a ``tasks/update`` taken by a replica that
    does not run the task waits for the one running it to confirm that it has the answers
    and has recorded them (past it the update fails ``-32603``; send it again).
    ``budget``: what the task records may hold, per owner and in total
    (:class:`~trimcp.tasks.store.TaskBudget`; the server's own in-memory store and a
    shared store it is given while serving keep it).
    """

    default_ttl: float = 3600.0
    min_ttl: float = 1.0
    max_ttl: float = 86_400.0
    poll_interval: float = 1.0
    shutdown_grace: float = 5.0
    max_running: int = 1000
    max_pending_inputs: int = 16
    input_timeout: float | None = None
    page_size: int = 100
    notify_timeout: float = 1.0
    answer_timeout: float = 5.0
    budget: TaskBudget = attrs.Factory(TaskBudget)

    def __attrs_post_init__(self) -> None:
        if not 0 < self.min_ttl <= self.default_ttl <= self.max_ttl:
            raise ValueError("TaskOptions needs 0 < min_ttl <= default_ttl <= max_ttl")
        if self.max_running < 1 or self.max_pending_inputs < 1 or self.page_size < 1:
            raise ValueError("max_running, max_pending_inputs and page_size must be >= 1")
        if self.shutdown_grace < 0 or self.poll_interval <= 0:
            raise ValueError("shutdown_grace must be >= 0 and poll_interval > 0")
        if self.answer_timeout <= 0:
            raise ValueError("answer_timeout must be > 0")

    def ttl_ms(self, requested: int | None) -> int:
        """The TTL granted for a requested one (milliseconds), clamped as documented."""
        seconds = self.default_ttl if requested is None else max(requested, 0) / 1000
        return round(min(max(seconds, self.min_ttl), self.max_ttl) * 1000)


class _Live:
    """What only this process has of a running task."""

    __slots__ = ("changed", "inputs", "listener", "reason", "record", "scope", "writing")

    def __init__(self, record: TaskRecord, limit: int, listener: StatusListener | None) -> None:
        self.record = record
        deadline = record.expires_at if record.expires_at is not None else math.inf
        self.scope = trio.CancelScope(deadline=deadline)
        self.changed = trio.Event()
        self.inputs = InputQueue(limit, self.touch)
        self.listener = listener
        #: Why the scope was cancelled: "request", "shutdown", "unanswered" (its creating
        #: request ended without its answer) (a passed deadline: None).
        self.reason: str | None = None
        #: Held while the record is written to the store: this process is the one writer
        #: of a running task's record, and its writes land in the order they were made
        #: (each writes the state of the moment it goes out), never an older one last.
        self.writing = trio.Lock()

    def touch(self) -> None:
        """Wake everyone waiting for a change (``tasks/result``, watchers)."""
        self.changed.set()
        self.changed = trio.Event()


class TaskManager:
    """Creates, runs, finds and cancels the tasks of one server (see the module docs)."""

    def __init__(
        self,
        store: TaskStore | None = None,
        options: TaskOptions | None = None,
        *,
        holder: Literal["server", "client"] = "server",
    ) -> None:
        self.options = options or TaskOptions()
        self.store: TaskStore = (
            store if store is not None else MemoryTaskStore(budget=self.options.budget)
        )
        #: The store the server was made with (None: its own in-memory one).
        self._given = store
        self._own = self.store
        #: Who runs the tasks: a server (for its clients) or a client (for its server,
        #: :mod:`trimcp.client.task_receiver`); only the wording of errors differs.
        self.holder = holder
        self._nursery: trio.Nursery | None = None
        self._accepting = False
        self._live: dict[str, _Live] = {}
        self._running_by_owner: dict[str | None, int] = {}
        self._cursor_salt = secrets.token_hex(16) + "tasks/list"
        self._clock: tuple[float, float] | None = None  # (unix time, trio time) at open
        self._idle = trio.Event()
        self._idle.set()
        #: Called with the id of a task cancelled here whose work does not run here (it
        #: runs on another replica of a shared store): the server tells the other
        #: replicas, whose :meth:`stop_if_cancelled` ends it. None: nobody to tell.
        self.cancelled_elsewhere: Callable[[str], None] | None = None
        #: Called with a task id and ``tasks/update``'s answers taken here for a task
        #: that runs on another replica: the server passes them on and returns True once
        #: the replica running it confirms that it has them and has recorded the task's
        #: questions left (:meth:`answer_here` there); False when no replica will (None:
        #: nobody to tell). Waited for at most ``options.answer_timeout``.
        self.answered_elsewhere: Callable[[str, dict[str, Any]], Awaitable[bool]] | None = None

    # --- lifetime -------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the nursery is open and new tasks are accepted."""
        return self._accepting

    def share(self, store: TaskStore | None) -> bool:
        """Keep task records in ``store`` from now on (the store replicas share, so a task
        is readable from any of them); None: in this process again.

        Ignored (False) when the server was made with its own ``task_store`` (that choice
        wins), or while tasks run here (their records stay where they were made).
        """
        if self._given is not None or self._live:
            return False
        self.store = self._own if store is None else store
        return True

    def live_count(self) -> int:
        """How many tasks run in this process now."""
        return len(self._live)

    async def wait_idle(self) -> None:
        """Wait until no task runs in this process. Cancellation: stops waiting."""
        await self._idle.wait()

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        """Run the task nursery for the body; shared when it already runs.

        On exit (the owner's): refuse new tasks, wait up to ``options.shutdown_grace`` for
        running ones, cancel the rest and record their final status; bounded and shielded.
        Cancellation: the same sequence runs (the body's cancellation does not cut it short).
        """
        if self._nursery is not None:
            yield
            return
        async with open_nursery_unwrapped() as nursery:
            self._nursery = nursery
            self._accepting = True
            self._clock = (time.time(), trio.current_time())
            try:
                yield
            finally:
                self._accepting = False
                await self._grace()
                self.cancel_all()
                self._nursery = None

    async def end_tasks(self) -> None:
        """End every task running in this process now, as a shutdown does: refuse new
        tasks, wait up to ``options.shutdown_grace`` for running ones, cancel the rest and
        wait until their ends are recorded in the store (bounded).

        For whoever closes the store the tasks record into while the nursery's owner lives
        on (the HTTP server closes its shared store before a lifespan entered around it
        ends): their final status must reach the store while it is open. New tasks are
        accepted again afterwards if the nursery is still open. Shielded: cancellation
        does not cut it short.
        """
        was_accepting = self._accepting
        self._accepting = False
        await self._grace()
        self.cancel_all()
        with trio.CancelScope(shield=True), trio.move_on_after(STORE_TIMEOUT + 1.0):
            await self._idle.wait()  # each task records its end, bounded by STORE_TIMEOUT
        self._accepting = was_accepting and self._nursery is not None

    async def _grace(self) -> None:
        with trio.CancelScope(shield=True) as grace:
            grace.deadline = trio.current_time() + self.options.shutdown_grace
            await self._idle.wait()

    def cancel_all(self) -> None:
        """Cancel every task running in this process now (recorded ``cancelled``, "shut
        down"); new tasks are still accepted while the nursery is open."""
        for live in self._live.values():
            live.reason = "shutdown"
            live.scope.cancel()

    def now(self) -> float:
        """Unix time, advancing with Trio's clock (so tests under a mock clock agree)."""
        if self._clock is None:
            return time.time()
        unix, trio_time = self._clock
        return unix + (trio.current_time() - trio_time)

    # --- creating and running -------------------------------------------------------

    async def create(
        self,
        run: Callable[[_TaskHandle], Awaitable[Any]],
        *,
        owner: str | None,
        method: str,
        protocol_version: str | None,
        ttl_ms: int | None,
        listener: StatusListener | None = None,
    ) -> TaskRecord:
        """Record a new task, start ``run(handle)`` in the server's nursery, return the record.

        The record is in the store before this returns. ``run`` returns the request's
        result (an attrs result or a JSON object) or raises :class:`McpError`. Raises
        :class:`McpError` ``-32603`` when the server is not running tasks (not served,
        shutting down), the owner has ``max_running`` tasks running, or the store is full.
        Cancellation: if cancelled before the record is stored, nothing was created.
        """
        nursery = self._nursery
        if nursery is None or not self._accepting:
            raise McpError(INTERNAL_ERROR, _NOT_RUNNING[self.holder])
        if self._running_by_owner.get(owner, 0) >= self.options.max_running:
            raise McpError(
                INTERNAL_ERROR,
                _TOO_MANY[self.holder].format(limit=self.options.max_running),
            )
        granted = self.options.ttl_ms(ttl_ms)
        now = self.now()
        record = TaskRecord(
            task_id=secrets.token_hex(TASK_ID_BYTES),
            owner=owner,
            method=method,
            protocol_version=protocol_version,
            created_at=now,
            updated_at=now,
            ttl_ms=granted,
            poll_interval_ms=round(self.options.poll_interval * 1000),
            expires_at=trio.current_time() + granted / 1000,
        )
        try:
            await self.store.create(record)
        except TaskStoreFull as exc:
            reason = str(exc)
            if self.holder == "client":  # the store's own words speak of a server
                reason = (
                    "this client keeps no more tasks (running, or finished and kept until "
                    "their TTL); wait for some to expire"
                )
            data = {"limit": f"TaskBudget.{exc.limit}", "max": exc.value} if exc.limit else None
            raise McpError(INTERNAL_ERROR, f"Cannot create a task now: {reason}", data) from None
        live = _Live(record, self.options.max_pending_inputs, listener)
        self._live[record.task_id] = live
        self._running_by_owner[owner] = self._running_by_owner.get(owner, 0) + 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        nursery.start_soon(self._run, live, run, name=f"task {record.task_id}")
        return record

    async def _run(self, live: _Live, run: Callable[[_TaskHandle], Awaitable[Any]]) -> None:
        outcome: Outcome | None = None
        # Shielded: a task is cancelled only through its own scope (tasks/cancel, its TTL,
        # the end of the grace period), never by whatever cancels the code serving it.
        with trio.CancelScope(shield=True):
            try:
                # The one outcome mapping (BaseException included: the task fails, the
                # runner goes on), KI-protected as a request's handler is.
                outcome = await settle(run, _TaskHandle(self, live), live.scope, _describe)
            finally:
                with trio.move_on_after(STORE_TIMEOUT):
                    try:
                        await self._finish(live, outcome)
                    except Exception:  # a store failure must not take the nursery down
                        logger.exception("cannot record the end of task %s", live.record.task_id)

    async def _finish(self, live: _Live, outcome: Outcome | None) -> None:
        record = live.record
        try:
            if not record.terminal:
                if outcome is None or outcome.cancelled:
                    self._record_cancelled(live)
                elif outcome.error is not None:
                    error = outcome.error
                    record.status, record.error = "failed", error.to_error_object()
                    record.status_message = error.message
                else:
                    self._record_result(record, outcome.result)
                record.updated_at = self.now()
                async with live.writing:
                    try:
                        await self.store.save(record)
                    except TaskStoreFull as exc:
                        # Over a byte budget: the task fails, saying which limit; the
                        # result is dropped here, never kept half-accounted.
                        self._record_refused(record, exc)
                        await self.store.save(record)
                await self._changed(live)
        finally:
            for item in list(live.inputs.pending.values()):
                item.resolve(error=McpError(INTERNAL_ERROR, "the task ended"))
            del self._live[record.task_id]
            left = self._running_by_owner[record.owner] - 1
            if left:
                self._running_by_owner[record.owner] = left
            else:
                del self._running_by_owner[record.owner]
            if not self._live:
                self._idle.set()
            live.touch()

    def _record_cancelled(self, live: _Live) -> None:
        record = live.record
        if live.reason == "shutdown":
            record.status = "cancelled"
            record.status_message = f"The {self.holder} shut down before the task finished"
        elif live.reason == "request":
            record.status = "cancelled"
            record.status_message = "The task was cancelled by request"
        elif live.reason == "unanswered":
            record.status = "cancelled"
            record.status_message = (
                "The request that created the task was cancelled before its answer was sent"
            )
        else:  # the deadline (its TTL) passed
            record.status = "failed"
            record.status_message = f"The task ran past its TTL of {record.ttl_ms} ms"
            record.error = McpError(REQUEST_TIMEOUT, record.status_message).to_error_object()

    def _record_refused(self, record: TaskRecord, refused: TaskStoreFull) -> None:
        message = f"The task's result was not kept: {refused}"
        data = {"limit": f"TaskBudget.{refused.limit}", "max": refused.value}
        record.status, record.status_message, record.result = "failed", message, None
        record.error = McpError(INTERNAL_ERROR, message, data).to_error_object()

    def _record_result(self, record: TaskRecord, value: Any) -> None:
        wire = serde.unstructure(value) if not isinstance(value, dict) else value
        record.result = wire
        is_error = isinstance(wire, dict) and wire.get("isError") is True
        # 2025-11-25: a tool result with isError fails the task; the extension (2026)
        # keeps protocol failures for `failed` and completes such a task.
        if is_error and record.protocol_version == "2025-11-25":
            record.status = "failed"
            record.status_message = _first_text(wire) or "The tool reported an error"
        else:
            record.status = "completed"
            record.status_message = None  # a progress message means nothing any more

    async def _set_status(
        self, live: _Live, status: TaskStatus, message: str | None, *, force: bool = False
    ) -> None:
        """Record a running task's new status (and the questions it waits on) in the
        store; ``force``: write even when nothing changed here (an earlier write may have
        failed). Raises what the store raises."""
        record = live.record
        async with live.writing:
            questions = _questions(live) if status == "input_required" else None
            if record.terminal or (
                not force
                and record.status == status
                and record.status_message == message
                and record.input_requests == questions
            ):
                return
            record.status, record.status_message = status, message
            record.input_requests = questions
            record.updated_at = self.now()
            await self.store.save(record)
        await self._changed(live)

    async def _record_questions(self, live: _Live, *, force: bool = False) -> None:
        """Record the questions ``live`` still waits on: ``input_required`` with them, or
        ``working`` once none is left (answered, withdrawn)."""
        questions = _questions(live)
        if questions:
            message = live.record.status_message
            if live.record.status != "input_required":
                first = next(iter(questions.values()))
                message = f"Waiting for the client: {first['method']}"
            await self._set_status(live, "input_required", message, force=force)
        else:  # a progress message of a working task stays; "waiting for..." goes
            record = live.record
            message = None if record.status == "input_required" else record.status_message
            await self._set_status(live, "working", message, force=force)

    async def _changed(self, live: _Live) -> None:
        live.touch()
        if live.listener is not None:
            # The session that created the task may be gone: polls still work.
            with (
                trio.move_on_after(self.options.notify_timeout),
                contextlib.suppress(McpError, trio.BrokenResourceError, trio.ClosedResourceError),
            ):
                await live.listener(live.record)

    # --- questions to the client -----------------------------------------------------

    async def ask(self, live: _Live, method: str, params: Any, timeout: float | None) -> Any:
        """Ask the client (elicitation, sampling...) on behalf of a running task: the task
        turns ``input_required`` until the answer arrives through ``tasks/result`` or
        ``tasks/update``. Raises the client's error as :class:`McpError`,
        :class:`~trimcp.errors.RequestTimeout` after ``timeout``. Cancellation: the
        question is withdrawn."""
        raw = serde.unstructure(params) if params is not None else {}
        raw = dict(raw) if isinstance(raw, dict) else {}
        meta = raw.get("_meta")
        raw["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            RELATED_TASK_META_KEY: {"taskId": live.record.task_id},
        }
        item = live.inputs.add(method, raw)
        try:
            await self._set_status(live, "input_required", f"Waiting for the client: {method}")
            with trio.move_on_after(math.inf if timeout is None else timeout):
                return await item.wait()
            raise McpError(REQUEST_TIMEOUT, f"{method} got no answer within {timeout:g}s")
        finally:
            # Withdrawn (cancelled, timed out): a tasks/result forwarding it stops too.
            item.resolve(error=McpError(INTERNAL_ERROR, f"the task no longer waits for {method}"))
            live.inputs.remove(item)
            if not waited_cancelled(live):
                with trio.CancelScope(shield=True) as bound:
                    bound.deadline = trio.current_time() + STORE_TIMEOUT
                    # The questions left (those not answered yet), where replicas read them.
                    await self._record_questions(live)

    def pending_inputs(self, task_id: str) -> Sequence[PendingInput]:
        """The questions task ``task_id`` waits on now (none when it runs elsewhere)."""
        live = self._live.get(task_id)
        return list(live.inputs.pending.values()) if live is not None else ()

    async def answer_anywhere(self, task_id: str, responses: dict[str, Any]) -> None:
        """Deliver ``tasks/update``'s answers and return once the task's record shows
        them (read your writes): a ``tasks/get`` on any replica then lists only the
        questions still open.

        The process running the task is the one writer of its record. If the task runs
        here, :meth:`answer_here`; else (a store the replicas share) the answers go to
        the replica running it through :attr:`answered_elsewhere`, which confirms once it
        has written the record, within ``options.answer_timeout``. Unknown, answered or
        superseded keys are ignored, as the extension says (a task that ended takes no
        answers: returns at once; one whose replica died while it waited is one, once
        its record reads failed). Raises :class:`McpError` ``-32603`` when no replica
        confirmed in that time and the task still runs (send the answers again), and
        StoreUnavailable. Cancellation: the answers may or may not have been delivered.
        """
        if await self.answer_here(task_id, responses) or self.answered_elsewhere is None:
            return
        # Not against the stored questions: those may lag behind the ones a tasks/get on
        # the running replica showed the client. Only a task that ended needs no answer.
        if not await self._still_running(task_id):
            return
        with trio.move_on_after(self.options.answer_timeout):
            if await self.answered_elsewhere(task_id, responses):
                return
            # No replica but this one heard the answers: the one running the task is gone
            # from the bus (dead, or cut off from the store). If it died, its record reads
            # failed once its heartbeat lapses, within the bound: the task has ended and
            # takes no answers, and the client's next tasks/get shows why.
            while True:  # (a record in another process: asked after, no event to wait on)
                if not await self._still_running(task_id):
                    return
                await trio.sleep(RUNNER_CHECK)
        if await self._still_running(task_id):
            raise McpError(
                INTERNAL_ERROR,
                f"the replica running task {task_id} did not confirm these answers (waited "
                f"at most {self.options.answer_timeout:g}s: TaskOptions.answer_timeout); "
                "send them again (answers the task already has are ignored)",
            )

    async def _still_running(self, task_id: str) -> bool:
        """Whether the stored record of ``task_id`` exists and has not ended."""
        record = await self.store.get(task_id)
        return record is not None and not record.terminal

    async def answer_here(self, task_id: str, responses: dict[str, Any]) -> bool:
        """Deliver ``tasks/update``'s answers to task ``task_id`` if it runs here, and
        write its record (the questions left) before returning True; False when it does
        not run here. Unknown or answered keys are ignored; the record is written all the
        same (a retry after a failed write repairs it). Raises what the store raises.
        Cancellation: the answers may be delivered and the record not yet written."""
        live = self._live.get(task_id)
        if live is None:
            return False
        for key, response in responses.items():
            self.answer(task_id, key, response)
        await self._record_questions(live, force=True)
        return True

    def answer(self, task_id: str, key: str, response: Any) -> bool:
        """Deliver the wire-form answer to question ``key`` (``tasks/update``). Unknown or
        answered keys are ignored (False). A response that does not fit the question's
        result type is delivered as a ``-32602`` error to the task."""
        live = self._live.get(task_id)
        item = live.inputs.pending.get(key) if live is not None else None
        if item is None or item.done:
            return False
        spec = lookup(item.method)
        if spec is None or spec.result_type is None:
            return item.resolve(response)
        try:
            return item.resolve(serde.structure(response, spec.result_type))
        except serde.ShapeError as exc:
            return item.resolve(
                error=McpError(INVALID_PARAMS, f"invalid answer to {item.method}: {exc}")
            )

    # --- what the tasks/* methods need ---------------------------------------------

    async def find(self, task_id: str, owner: str | None) -> TaskRecord:
        """The record of ``task_id`` if ``owner`` may see it, else ``-32602`` (the same
        error for another principal's task as for an unknown one)."""
        if not isinstance(task_id, str) or _TASK_ID.fullmatch(task_id) is None:
            # Not an id this manager makes: unknown, without asking the store.
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        record = await self.store.get(task_id)
        if record is None or record.owner != owner:
            if record is None and await self.store.expired(task_id):
                raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task has expired")
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return record

    async def wait_terminal(
        self, task_id: str, owner: str | None, forward: Forward | None = None
    ) -> TaskRecord:
        """Wait until the task ends and return its record (``tasks/result``).

        With ``forward``, each question the task asks meanwhile is sent to the client
        through it and the answer handed back. A task another replica runs (a shared
        store) is polled at the hinted pace; its stored questions are forwarded too, once
        each, and the answers sent to that replica (:meth:`answer_anywhere`); a question
        the client refuses there is not asked again (the task's own timeout ends its wait:
        an error does not cross replicas). Cancellation: stops waiting; a question being
        forwarded is given back for the next ``tasks/result``.
        """
        asked_here: set[str] = set()  # questions of a task run elsewhere, forwarded by this call
        while True:
            record = await self.find(task_id, owner)
            if record.terminal:
                return record
            live = self._live.get(task_id)
            if live is None:
                if forward is not None and self.answered_elsewhere is not None:
                    waiting = record.input_requests or {}
                    key = next((k for k in waiting if k not in asked_here), None)
                    if key is not None:
                        asked_here.add(key)
                        await self._forward_elsewhere(record, key, forward)
                        continue
                await trio.sleep(self.options.poll_interval)
                continue
            item = live.inputs.first_untaken() if forward is not None else None
            if item is None:
                await live.changed.wait()
                if live.record.terminal:
                    # Answer from the record we watched: one that ended by its TTL has
                    # expired from the store at that very moment.
                    return live.record
                continue
            assert forward is not None
            item.take()
            try:
                with trio.CancelScope() as item.forwarding:
                    value = await forward(item.method, item.params)
                    item.forwarding = None
                    item.resolve(value)
            except SessionClosed:
                item.release()
                raise
            except McpError as exc:
                item.resolve(error=exc)
            except BaseException:
                item.release()
                raise
            finally:
                item.forwarding = None

    async def _forward_elsewhere(self, record: TaskRecord, key: str, forward: Forward) -> None:
        """Ask the client question ``key`` of ``record`` (a task another replica runs) and
        send the answer there. Raises SessionClosed, StoreUnavailable."""
        question = (record.input_requests or {})[key]
        params = question.get("params")
        try:
            value = await forward(
                str(question.get("method")), params if isinstance(params, dict) else {}
            )
        except McpError as exc:
            logger.info(
                "task %s: the client refused %s (%s); the task runs on another replica and "
                "ends its wait by its own timeout",
                record.task_id,
                question.get("method"),
                exc,
            )
            return
        try:
            await self.answer_anywhere(record.task_id, {key: serde.unstructure(value)})
        except McpError as exc:  # not confirmed: the task's own timeout ends its wait
            logger.warning("task %s: the answer to %s: %s", record.task_id, key, exc.message)

    async def list(
        self, owner: str | None, cursor: str | None
    ) -> tuple[list[TaskRecord], str | None]:
        """One page of ``owner``'s tasks, oldest first (``-32602`` for a bad cursor)."""
        records = await self.store.owned_by(owner)
        return paginate(
            records, cursor, self.options.page_size, salt=self._cursor_salt, key=_task_key
        )

    async def cancel(self, task_id: str, owner: str | None) -> TaskRecord:
        """Cancel a task: record ``cancelled`` at once, then cancel its scope.

        Raises ``-32602`` for an unknown task or one that already ended.
        """
        record = await self.find(task_id, owner)
        if record.terminal:
            raise McpError(
                INVALID_PARAMS, f"Cannot cancel task: already in terminal status '{record.status}'"
            )
        live = self._live.get(task_id)
        record.status = "cancelled"
        record.status_message = "The task was cancelled by request"
        record.updated_at = self.now()
        await self.store.save(record)
        if live is not None:
            live.reason = "request"
            live.scope.cancel()
            await self._changed(live)
        elif self.cancelled_elsewhere is not None:
            self.cancelled_elsewhere(task_id)
        return record

    def abandon(self, task_id: str) -> None:
        """The request that created ``task_id`` ended unanswered (its client cancelled or
        left before it learned the id): cancel the task now, as ``tasks/cancel`` would; it
        is recorded ``cancelled`` when its work ends. Synchronous; does nothing to a task
        that ended or does not run here."""
        live = self._live.get(task_id)
        if live is not None and not live.record.terminal and live.reason is None:
            live.reason = "unanswered"
            live.scope.cancel()

    async def stop_if_cancelled(self, task_id: str) -> None:
        """Another replica recorded ``task_id`` cancelled: stop its work if it runs here.

        Acts only when the store says the task is cancelled (the replica that took the
        ``tasks/cancel`` checked its owner there; a message alone stops nothing); the
        work then ends as after a local ``tasks/cancel``, and the runner does not record
        another outcome over the cancel. Cancellation: nothing is stopped.
        """
        if task_id not in self._live:
            return
        record = await self.store.get(task_id)
        live = self._live.get(task_id)
        if live is None or live.record.terminal or record is None or record.status != "cancelled":
            return
        live.reason = "request"
        live.scope.cancel()

    def watch(self, task_id: str) -> trio.Event | None:
        """An event set at the task's next change (None when it does not run here)."""
        live = self._live.get(task_id)
        return live.changed if live is not None else None


def waited_cancelled(live: _Live) -> bool:
    return live.scope.cancel_called or live.record.terminal


class _TaskHandle:
    """What a task's work gets: its record and a way to ask the client."""

    __slots__ = ("_live", "_manager")

    def __init__(self, manager: TaskManager, live: _Live) -> None:
        self._manager = manager
        self._live = live

    @property
    def record(self) -> TaskRecord:
        return self._live.record

    @property
    def cancel_scope(self) -> trio.CancelScope:
        return self._live.scope

    @property
    def ending(self) -> bool:
        """Whether the task has a terminal status or its scope was cancelled (by
        ``tasks/cancel``, its TTL or shutdown): what it reports now comes too late."""
        return waited_cancelled(self._live)

    async def ask(self, method: str, params: Any, timeout: float | None) -> Any:
        return await self._manager.ask(self._live, method, params, timeout)

    async def set_message(self, message: str | None) -> None:
        """Change the status message the client sees (status stays)."""
        record = self._live.record
        await self._manager._set_status(self._live, record.status, message)


def _describe(handle: _TaskHandle) -> str:
    return f"task {handle.record.task_id} ({handle.record.method})"


def _task_key(record: TaskRecord) -> str:
    return record.task_id


def _first_text(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    return text[:500]
    return None


def _questions(live: _Live) -> dict[str, dict[str, Any]] | None:
    """The questions ``live`` waits on, in wire form by key (None: none)."""
    pending = {
        item.key: {"method": item.method, "params": item.params}
        for item in live.inputs.pending.values()
        if not item.done
    }
    return pending or None
