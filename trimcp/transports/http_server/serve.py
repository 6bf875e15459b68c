"""``serve_http``: run the ASGI app on one address, with the lean engine or hypercorn."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Literal

import attrs
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.logging import Logger as HypercornLogger

from trimcp.session import SessionHandler
from trimcp.transports.http_server.app import create_asgi_app
from trimcp.transports.http_server.config import HttpServerConfig, default_event_store
from trimcp.transports.http_server.guard import GuardedApp
from trimcp.transports.http_server.hypercorn_engine import serve_hypercorn
from trimcp.transports.http_server.lean import serve_lean

if TYPE_CHECKING:
    from trimcp.stores.base import Store


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def hypercorn_config(
    *,
    header_timeout: float = 5.0,
    graceful_timeout: float = 5.0,
    max_header_bytes: int = 16 * 1024,
) -> HypercornConfig:
    """The hypercorn settings trimcp uses (use them when you mount the app yourself).

    ``header_timeout`` closes a connection whose request headers are not complete in time
    (hypercorn's ``keep_alive_timeout``, which also closes idle keep-alive connections);
    ``max_header_bytes`` bounds what hypercorn buffers before the headers are complete;
    ``graceful_timeout`` bounds how long open connections may finish after shutdown.
    Access logs are off; hypercorn logs warnings and errors.
    """
    config = HypercornConfig()
    config.keep_alive_timeout = header_timeout
    config.graceful_timeout = graceful_timeout
    config.h11_max_incomplete_size = max_header_bytes
    config.accesslog = None
    config.loglevel = "WARNING"
    return config


Engine = Literal["auto", "hypercorn", "lean"]


def choose_engine(engine: Engine, server: HypercornConfig) -> Literal["hypercorn", "lean"]:
    """The HTTP server ``serve_http`` runs for ``engine`` and the hypercorn settings.

    ``"auto"`` is the lean engine unless ``server`` asks for something only hypercorn
    does: TLS (``certfile`` and ``keyfile``), HTTP/3 (``quic_bind``), an access log
    (``accesslog`` or a custom ``logger_class``) or ``server_names`` checking.
    ``"hypercorn"`` and ``"lean"`` are taken as given, except that ``"lean"`` with TLS
    settings is a ValueError (it would serve plain text where TLS was asked for).
    """
    if engine == "lean" and server.ssl_enabled:
        raise ValueError("the lean engine does not do TLS: use engine='hypercorn' or 'auto'")
    if engine == "hypercorn" or engine == "lean":
        return engine
    if engine != "auto":
        raise ValueError(f"engine must be 'auto', 'hypercorn' or 'lean', got {engine!r}")
    wants_hypercorn = (
        server.ssl_enabled
        or bool(server.quic_bind)
        or server.accesslog is not None
        or server.logger_class is not HypercornLogger
        or bool(server.server_names)
    )
    return "hypercorn" if wants_hypercorn else "lean"


async def serve_http(
    handler: SessionHandler | Callable[[], SessionHandler],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str | None = None,
    config: HttpServerConfig | None = None,
    hypercorn: HypercornConfig | None = None,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    engine: Engine = "auto",
    store: Store | str | None = None,
    reuse_port: bool = False,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over Streamable HTTP (and legacy HTTP+SSE) until stopped.

    ``store``: where sessions and resumability events are kept, a
    :class:`~trimcp.stores.Store` or a URL (``memory://``, ``redis://host:port/db``:
    opened here and closed when serving ends). The default keeps them in this process. A
    shared store (Redis) lets replicas behind a load balancer serve each other's
    sessions and resume each other's streams; its background work (saying this replica
    is alive) runs while serving. ``reuse_port``: bind with ``SO_REUSEPORT`` so several
    processes serve one port (what ``trimcp run --workers N`` does; lean engine only).

    Engine: ``"auto"`` (the default) serves with trimcp's lean HTTP/1.1 server
    (:mod:`~trimcp.transports.http_server.lean`: h11 on trio, about half of hypercorn's
    CPU per call) unless the hypercorn settings ask for what only hypercorn does (TLS,
    HTTP/3, an access log, ``server_names``: see :func:`choose_engine`); then hypercorn's
    trio worker serves. ``"hypercorn"`` always uses hypercorn (also for HTTP/2 over
    cleartext, which the lean server does not speak); ``"lean"`` always the lean server.

    Both engines take their limits from ``hypercorn`` (default :func:`hypercorn_config`):
    ``keep_alive_timeout`` (a request head must be complete in time; also the keep-alive
    idle time), ``h11_max_incomplete_size`` (431 past it), ``graceful_timeout``,
    ``read_timeout``, ``keep_alive_max_requests``, ``backlog`` and ``root_path``. Body
    size and time come from ``config`` (``max_body_bytes``, ``body_timeout``) and are
    enforced by the app under either engine. The lean server also ends a connection whose
    client does not take a write within ``config.body_timeout`` (hypercorn has no write
    bound; under both, ``config.stream_max_bytes`` bounds what a slow reader costs).

    Reports the bound port through ``task_status`` (``port=0`` picks a free one).
    ``path`` overrides ``config.path``. On a loopback ``host`` the ``Host``/``Origin``
    allowlist defaults to localhost names; binding elsewhere requires
    ``config.allowed_hosts`` (``["*"]`` accepts any), else ValueError.

    Stopping: when ``shutdown_trigger`` returns, every session is closed with the engine's
    bounded close sequence (at most ``config.shutdown_bound`` seconds in all), which ends
    their streams, then the HTTP server stops (open connections get ``graceful_timeout``).
    Cancellation: stops at once; sessions still get their bounded, shielded close, but
    responses in progress are cut.
    """
    if store is not None:
        await _serve_with_store(
            store,
            partial(
                serve_http,
                handler,
                host=host,
                port=port,
                path=path,
                hypercorn=hypercorn,
                shutdown_trigger=shutdown_trigger,
                engine=engine,
                reuse_port=reuse_port,
                task_status=task_status,
            ),
            config or HttpServerConfig(),
        )
        return
    config = config or HttpServerConfig()
    if path is not None:
        config = attrs.evolve(config, path=path)
    if not is_loopback(host) and config.allowed_hosts is None:
        raise ValueError(
            f"binding to {host!r} (not loopback) needs config.allowed_hosts: the names "
            "clients use to reach this server (['*'] accepts any Host)"
        )
    server = hypercorn or hypercorn_config()
    chosen = choose_engine(engine, server)
    if reuse_port and chosen != "lean":
        raise ValueError("reuse_port (several workers on one port) needs the lean engine")
    app = create_asgi_app(handler, config=config)
    if chosen == "lean":
        await serve_lean(
            app,
            host=host.strip("[]"),
            port=port,
            header_timeout=float(server.keep_alive_timeout),
            max_header_bytes=int(server.h11_max_incomplete_size),
            graceful_timeout=float(server.graceful_timeout),
            send_timeout=config.body_timeout,
            read_timeout=None if server.read_timeout is None else float(server.read_timeout),
            keep_alive_max_requests=int(server.keep_alive_max_requests),
            backlog=int(server.backlog),
            root_path=server.root_path,
            shutdown_trigger=shutdown_trigger,
            reuse_port=reuse_port,
            task_status=task_status,
        )
        return
    server.bind = [f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"]

    async def trigger() -> None:
        if shutdown_trigger is None:
            await trio.sleep_forever()
        else:
            await shutdown_trigger()
        await app.shutdown()

    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        # hypercorn's h11 takes a head up to its read size (64 KiB) when it arrives in one
        # read, and Content-Length with Transfer-Encoding: the guard refuses both, and
        # unknown HTTP versions, as the lean engine does.
        guarded = GuardedApp(app, max_head_bytes=int(server.h11_max_incomplete_size))
        binds: list[str] = await nursery.start(
            partial(serve_hypercorn, guarded, server, shutdown_trigger=trigger)
        )
        task_status.started(int(binds[0].rsplit(":", 1)[1]))


async def _serve_with_store(
    store: Store | str, serve: Callable[..., Awaitable[None]], config: HttpServerConfig
) -> None:
    """Run ``serve(config=..., store=None)`` with ``store`` in ``config`` and running."""
    from trimcp.stores import store_from_url

    opened = store_from_url(store) if isinstance(store, str) else None
    running: Store = opened if opened is not None else store  # type: ignore[assignment]
    try:
        changes: dict[str, object] = {"store": running}
        if config.event_store_factory is default_event_store:
            changes["event_store_factory"] = running.event_store
        config = attrs.evolve(config, **changes)  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            await nursery.start(running.run)
            await serve(config=config, store=None)
            nursery.cancel_scope.cancel()
    finally:
        if opened is not None:
            with trio.CancelScope(shield=True):
                await opened.aclose()
