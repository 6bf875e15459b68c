"""``trimcp run --transport http --workers N``: N server processes on one port.

The supervisor (this process) serves nothing itself. It starts N workers, each
``trimcp run ... --reuse-port``: every worker binds the same address with
``SO_REUSEPORT`` and the kernel spreads connections across them. Sessions and streams
are shared between workers only through a shared store (``--store redis://...``); with
the default in-memory store a 2025 session lives in one worker, so the supervisor warns.

Signals: SIGINT/SIGTERM stop every worker gracefully (SIGTERM, each closes its sessions
with its bounded sequence), SIGKILL after ``STOP_BOUND`` seconds. SIGHUP reloads: a new
set of workers starts (the target file is imported afresh), and once each listens the old
set is stopped gracefully, so the port never stops answering. Every worker, first or
reloaded, seals 2026-07-28 ``requestState`` with the same keys: ``TRIMCP_STATE_SECRET``
when set, the store's with ``--store redis://``, else a secret this supervisor makes once
and hands each worker in its environment (never on its command line, which ``ps`` shows).
So does every setting: a worker's command line is ``python -m trimcp run TARGET``, its
settings (the store URL with its password included) come in ``TRIMCP_WORKER_SETTINGS``.
An authorization server of the server's own (``AuthorizationServer``) needs a shared
store (refused without one: a login spans requests that reach different workers) and one
sealing secret: ``TRIMCP_AUTHSERVER_SECRET``, else one this supervisor makes and hands
each worker the same way. A worker that dies is started again (at most
``MAX_QUICK_DEATHS`` quick deaths in a row, then everything stops with an error). Worker
stderr is forwarded, one line at a time, prefixed with its number.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import trio

from trimcp.cli.errors import EXIT_OK, CliError, UsageError
from trimcp.server.serving import (
    AUTHSERVER_SECRET,
    STATE_SECRET,
    ServeSettings,
    SettingsError,
    state_keyring_from_env,
    url_of,
)

#: How long workers may take to stop gracefully before they are killed.
STOP_BOUND = 20.0
#: How long a worker may take to start listening.
START_BOUND = 30.0
#: A worker that dies within this many seconds of starting died quickly.
QUICK = 5.0
MAX_QUICK_DEATHS = 3
RESTART_DELAY = 1.0
_LISTENING = "trimcp: serving "
#: The variable carrying a worker's settings from its supervisor, as JSON: the
#: environment, which only the worker's own user can read, never the command line.
WORKER_SETTINGS = "TRIMCP_WORKER_SETTINGS"
_FIELDS = frozenset(field.name for field in attrs.fields(ServeSettings))


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


def worker_argv(target: str) -> list[str]:
    """The command line of one worker: the target, nothing else. Its settings travel in
    its environment (:func:`worker_environment`): a command line is shown to every user
    of the machine (``ps``, ``/proc/PID/cmdline``), and a setting may hold a secret (the
    password in a ``redis://`` store URL, a credential in an issuer URL)."""
    return [sys.executable, "-m", "trimcp", "run", target]


def worker_environment(settings: ServeSettings, port: int) -> dict[str, str]:
    """The variable handing a worker every one of the supervisor's ``settings``, on
    ``port`` with ``SO_REUSEPORT`` (read back by :func:`supervised_settings`)."""
    chosen = attrs.evolve(settings, port=port, reuse_port=True)
    return {WORKER_SETTINGS: json.dumps(attrs.asdict(chosen))}


def supervised_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings a supervisor handed this process in :data:`WORKER_SETTINGS` (ranked
    as its flags: they are the supervisor's final settings), or {} when not a worker.
    Raises CliError when the variable is not such settings.

    Read from this process's environment, the variable is removed once read, so nothing
    this worker starts (a ``trimcp run`` of its own, a subprocess a tool runs) inherits
    the supervisor's settings or the secrets in them."""
    text = (
        os.environ.pop(WORKER_SETTINGS, None) if environ is None else environ.get(WORKER_SETTINGS)
    )
    if text is None:
        return {}
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, dict) or not set(values) <= _FIELDS:
        raise CliError(
            f"{WORKER_SETTINGS} does not hold a worker's settings: it is set by "
            "trimcp run --workers for its workers only; unset it"
        )
    return values


class _Worker:
    def __init__(self, number: int, process: trio.Process, started: float) -> None:
        self.number = number
        self.process = process
        self.started = started
        self.listening = trio.Event()
        self.stopping = False


class Supervisor:
    """Runs, reloads and stops the workers (see the module docstring)."""

    def __init__(
        self, argv: Sequence[str], count: int, env: Mapping[str, str] | None = None
    ) -> None:
        self.argv = list(argv)
        #: Variables every worker gets on top of this process's environment.
        self.env = dict(env or {})
        self.count = count
        self.workers: list[_Worker] = []
        self.quick_deaths = 0
        self.failed: str | None = None
        self.stopping = False
        #: Numbers given so far: a reload's workers get new ones (a restarted worker keeps
        #: its own), so the [worker N] prefix never names two processes of one run.
        self._numbered = 0

    async def run(self, nursery: trio.Nursery, *, task_status: trio.TaskStatus[None]) -> None:
        """Start the first set of workers; reports started once all of them listen."""
        await self._start_set(nursery)
        task_status.started()

    async def _start_set(self, nursery: trio.Nursery) -> list[_Worker]:
        first, self._numbered = self._numbered + 1, self._numbered + self.count
        new = [await self._spawn(nursery, number) for number in range(first, self._numbered + 1)]
        with trio.move_on_after(START_BOUND) as waiting:
            for worker in new:
                await worker.listening.wait()
        if waiting.cancelled_caught:
            raise CliError(f"workers did not start listening within {START_BOUND:g}s")
        return new

    async def _spawn(self, nursery: trio.Nursery, number: int) -> _Worker:
        env = {**os.environ, **self.env, "TRIMCP_WORKER": str(number)}
        process = await trio.lowlevel.open_process(
            self.argv,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # terminal signals reach the supervisor only
        )
        worker = _Worker(number, process, trio.current_time())
        self.workers.append(worker)
        nursery.start_soon(self._watch, nursery, worker)
        return worker

    async def _watch(self, nursery: trio.Nursery, worker: _Worker) -> None:
        stream = worker.process.stderr
        assert stream is not None
        buffer = b""
        async with stream:
            while True:
                try:
                    data = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    break
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", "replace")
                    if line.startswith(_LISTENING):
                        worker.listening.set()
                    sys.stderr.write(f"[worker {worker.number}] {line}\n")
                if len(buffer) > 65536:  # a line without end: flush it as it is
                    text = buffer.decode("utf-8", "replace")
                    sys.stderr.write(f"[worker {worker.number}] {text}\n")
                    buffer = b""
            sys.stderr.flush()
        code = await worker.process.wait()
        if worker in self.workers:
            self.workers.remove(worker)
        if worker.stopping or self.stopping:
            return
        lived = trio.current_time() - worker.started
        _say(f"worker {worker.number} exited with code {code} after {lived:.1f}s; restarting")
        self.quick_deaths = self.quick_deaths + 1 if lived < QUICK else 0
        if self.quick_deaths >= MAX_QUICK_DEATHS:
            self.failed = (
                f"worker {worker.number} died {MAX_QUICK_DEATHS} times within {QUICK:g}s of "
                "starting: see its messages above"
            )
            nursery.cancel_scope.cancel()
            return
        await trio.sleep(RESTART_DELAY)
        if not self.stopping:
            await self._spawn(nursery, worker.number)

    async def reload(self, nursery: trio.Nursery) -> None:
        """Start a new set of workers, then stop the old set gracefully."""
        old = list(self.workers)
        try:
            await self._start_set(nursery)
        except CliError as error:
            _say(f"reload failed, the old workers go on: {error}")
            return
        await self._stop(old)
        _say(f"reloaded: {self.count} new workers serve")

    async def stop(self) -> None:
        """Stop every worker: SIGTERM, then SIGKILL after ``STOP_BOUND`` seconds."""
        self.stopping = True
        await self._stop(list(self.workers))

    async def _stop(self, workers: list[_Worker]) -> None:
        for worker in workers:
            worker.stopping = True
            if worker.process.returncode is None:
                worker.process.send_signal(signal.SIGTERM)
        with trio.move_on_after(STOP_BOUND):
            for worker in workers:
                await worker.process.wait()
        for worker in workers:
            if worker.process.returncode is None:
                _say(f"worker {worker.number} did not stop within {STOP_BOUND:g}s: killed")
                worker.process.kill()
                with trio.move_on_after(5):
                    await worker.process.wait()


def pick_port(host: str, port: int) -> tuple[int, socket.socket | None]:
    """The port the workers share; for port 0 a free one, held (bound, not listening)
    until they listen so no other program takes it meanwhile."""
    if port != 0:
        return port, None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind((host.strip("[]"), 0))
    return int(holder.getsockname()[1]), holder


def shared_state_secret(settings: ServeSettings, default_keyring: bool) -> dict[str, str]:
    """What the workers' environment needs so that they all, and every worker a reload
    starts, seal ``requestState`` with one key: a ``TRIMCP_STATE_SECRET`` made here, when
    the server was left with its default keyring and nothing else shares one (warned:
    states then live as long as this supervisor). Raises CliError for a bad secret."""
    try:
        configured = state_keyring_from_env()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    if configured is not None or not default_keyring:
        return {}  # the workers inherit the secret, or the server has keys of its own
    if (settings.store or "").startswith("redis://"):
        return {}  # the workers share the store's keys
    _say(
        "warning: 2026-07-28 requestState is sealed with a random key this supervisor gave "
        "its workers (reloads keep it): input rounds in flight fail once the supervisor "
        f"restarts; set {STATE_SECRET} (a secret of 16+ bytes) to keep them"
    )
    return {STATE_SECRET: secrets.token_urlsafe(32)}


def store_warnings(settings: ServeSettings, *, dpop: bool = False) -> list[str]:
    """What the workers lose by not sharing a store, one warning each (none with Redis):
    with the in-memory store every worker keeps its own sessions (2025 era), tasks and
    per-user state (``ctx.user_state``), and remembers only its own DPoP proofs."""
    if settings.store is not None and not settings.store.startswith("memory"):
        return []
    warnings = []
    if dpop:
        warnings.append(
            "warning: DPoP proofs are remembered by each worker alone with the in-memory "
            "store: a proof replayed to another worker while it is fresh is accepted; use "
            "--store redis://HOST:PORT/DB so every worker refuses it"
        )
    kept = (
        "tasks and per-user state" if settings.stateless else "sessions, tasks and per-user state"
    )
    warnings.append(
        f"warning: with the in-memory store each worker keeps its own {kept}: a client "
        "must reach the worker that holds them; use --store redis://HOST:PORT/DB to share them"
    )
    return warnings


def shared_authserver_secret(auth: Any) -> dict[str, str]:
    """What the workers' environment needs so that trimcp's own authorization server
    (``auth``, given no secret in code) seals and signs alike in every worker, and in
    every worker a reload starts: a ``TRIMCP_AUTHSERVER_SECRET`` made here when the
    environment holds none (warned: what it sealed is lost when this supervisor
    restarts)."""
    if getattr(auth, "secret_configured", True) or os.environ.get(AUTHSERVER_SECRET):
        return {}  # a secret in code, or one the workers inherit
    _say(
        "warning: the authorization server's signing keys and the upstream tokens it keeps "
        "are sealed with a random key this supervisor gave its workers (reloads keep it): "
        "once the supervisor restarts, clients must refresh their access tokens and the "
        f"upstream tokens kept are lost; set {AUTHSERVER_SECRET} (a secret of 16+ bytes) to "
        "keep them"
    )
    return {AUTHSERVER_SECRET: secrets.token_urlsafe(32)}


def run_workers(
    target: str,
    settings: ServeSettings,
    count: int,
    label: str,
    *,
    default_keyring: bool = True,
    auth: Any = None,
) -> int:
    """Supervise ``count`` worker processes until SIGINT/SIGTERM; SIGHUP reloads them.

    ``default_keyring``: the server was left with its default ``requestState`` keyring
    (see :func:`shared_state_secret`). ``auth``: the server's protection (None: open):
    warned about when it takes DPoP proofs the workers cannot share a replay cache for;
    refused when it is an authorization server of its own with nowhere to share its
    logins (a UsageError naming ``--store``)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise CliError("--workers needs SO_REUSEPORT, which this platform does not have")
    in_memory = settings.store is None or settings.store.startswith("memory")
    if in_memory and getattr(auth, "state_in_memory", False):
        # A login is several requests (consent, the upstream's callback, the token), each
        # on whichever worker its connection reaches: each worker's memory would hold a
        # part, and most logins would fail.
        raise UsageError(
            "--workers: this server is its own authorization server, and with the "
            "in-memory store each worker would keep its own logins, so a login started on "
            "one worker would fail on another",
            hint="add --store redis://HOST:PORT/DB (or TRIMCP_STORE) so that every worker "
            "shares them",
        )
    for warning in store_warnings(settings, dpop=getattr(auth, "dpop", None) is not None):
        _say(warning)
    chosen, holder = pick_port(settings.host, settings.bound_port)
    env = {
        **shared_state_secret(settings, default_keyring),
        **shared_authserver_secret(auth),
        **worker_environment(settings, chosen),
    }
    supervisor = Supervisor(worker_argv(target), count, env)

    async def main() -> int:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async with trio.open_nursery() as nursery:
                try:
                    await nursery.start(supervisor.run, nursery)
                finally:
                    if holder is not None:
                        holder.close()
                url = url_of("http", settings.host, chosen, settings.path)
                _say(
                    f"serving {label} at {url} with {count} workers "
                    "(Ctrl-C to stop, SIGHUP to reload)"
                )
                async for signum in signals:
                    if signum == signal.SIGHUP:
                        _say("SIGHUP: reloading the workers")
                        await supervisor.reload(nursery)
                        continue
                    _say(f"{signal.Signals(signum).name}: stopping the workers")
                    with trio.CancelScope(shield=True):
                        await supervisor.stop()
                    nursery.cancel_scope.cancel()
                    break
        if supervisor.failed is not None:
            raise CliError(supervisor.failed)
        _say("stopped")
        return EXIT_OK

    try:
        return trio.run(main)
    finally:
        if holder is not None:
            holder.close()
