"""Listening sockets several processes share: ``SO_REUSEPORT`` (Linux, the BSDs, macOS).

Each worker of ``trimcp run --workers N`` binds its own socket to the same address and
port; the kernel spreads new connections across the workers' sockets, and a worker that
stops (or a new one that starts, on reload) leaves the others serving.
"""

from __future__ import annotations

import socket

import trio


def reuse_port_supported() -> bool:
    """Whether this platform can share a port between processes."""
    return hasattr(socket, "SO_REUSEPORT")


async def open_reuseport_listeners(
    host: str, port: int, *, backlog: int = 100
) -> list[trio.SocketListener]:
    """One listener on ``host:port`` with ``SO_REUSEPORT`` (and ``SO_REUSEADDR``) set.

    ``port=0`` picks a free port (which other processes can then bind too). Raises
    OSError as ``bind`` does (e.g. the port is held by a process without the option).
    """
    if not reuse_port_supported():
        raise OSError("SO_REUSEPORT is not available on this platform")
    infos = await trio.socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    sock = trio.socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        await sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return [trio.SocketListener(sock)]
