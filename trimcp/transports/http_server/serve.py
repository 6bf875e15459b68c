"""``serve_http``: run the ASGI app under hypercorn's trio worker on one address."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Literal

import attrs
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from trimcp.session import SessionHandler
from trimcp.transports.http_server.app import create_asgi_app
from trimcp.transports.http_server.config import HttpServerConfig
from trimcp.transports.http_server.lean import serve_lean


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


async def serve_http(
    handler: SessionHandler | Callable[[], SessionHandler],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str | None = None,
    config: HttpServerConfig | None = None,
    hypercorn: HypercornConfig | None = None,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    engine: Literal["hypercorn", "lean"] = "hypercorn",
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over Streamable HTTP (and legacy HTTP+SSE) until stopped.

    ``engine="lean"`` serves the same app with trimcp's own h11 server
    (:mod:`~trimcp.transports.http_server.lean`: HTTP/1.1 only, no TLS, several times less
    CPU per small request); the hypercorn settings it honours are ``keep_alive_timeout``
    (header timeout), ``h11_max_incomplete_size`` and ``graceful_timeout``.

    Reports the bound port through ``task_status`` (``port=0`` picks a free one).
    ``path`` overrides ``config.path``. On a loopback ``host`` the ``Host``/``Origin``
    allowlist defaults to localhost names; binding elsewhere requires
    ``config.allowed_hosts`` (``["*"]`` accepts any), else ValueError.

    Stopping: when ``shutdown_trigger`` returns, every session is closed with the engine's
    bounded close sequence (at most ``config.shutdown_bound`` seconds in all), which ends
    their streams, then hypercorn stops (open connections get ``graceful_timeout``).
    Cancellation: stops at once; sessions still get their bounded, shielded close, but
    responses in progress are cut.
    """
    config = config or HttpServerConfig()
    if path is not None:
        config = attrs.evolve(config, path=path)
    if not is_loopback(host) and config.allowed_hosts is None:
        raise ValueError(
            f"binding to {host!r} (not loopback) needs config.allowed_hosts: the names "
            "clients use to reach this server (['*'] accepts any Host)"
        )
    app = create_asgi_app(handler, config=config)
    server = hypercorn or hypercorn_config()
    if engine == "lean":
        await serve_lean(
            app,
            host=host.strip("[]"),
            port=port,
            header_timeout=float(server.keep_alive_timeout),
            max_header_bytes=int(server.h11_max_incomplete_size),
            graceful_timeout=float(server.graceful_timeout),
            shutdown_trigger=shutdown_trigger,
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
        binds: list[str] = await nursery.start(
            partial(hypercorn_serve, app, server, shutdown_trigger=trigger)  # type: ignore[arg-type]
        )
        task_status.started(int(binds[0].rsplit(":", 1)[1]))
