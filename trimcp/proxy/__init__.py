"""A proxy: a server that fronts another MCP server (a stdio command or a URL).

    proxy = ProxyServer.for_command(["npx", "-y", "@modelcontextprotocol/server-everything"])
    proxy.run(transport="http", port=8000)       # or serve it like any handler

Each client session of the proxy gets its own session with the backend, opened when the
client sends ``initialize`` (declaring the client's own capabilities to the backend) and
closed with the client's session. The client sees the backend's version-independent
identity: its ``serverInfo``, capabilities and instructions.

Requests and notifications are relayed raw (:class:`trimcp.session.hooks.RequestRelay`):
the decoded JSON goes on with only the id (and progress token) remapped, never through
typed classes, and answers come back the same way (``initialize`` is the one request the
proxy reads). Forwarded both ways:

- client requests (tools, resources, templates, subscriptions, prompts, completion,
  logging level, anything else) go to the backend and its answer or JSON-RPC error comes
  back; progress the backend reports goes to the client (when the client asked for it);
- cancellation: a client's ``notifications/cancelled`` (or the client's session closing)
  cancels the proxy's request to the backend, which sends the backend its own
  ``notifications/cancelled``; the same holds the other way for requests the backend sends;
- backend requests to the client (``sampling/createMessage``, ``elicitation/create``,
  ``roots/list``) go to the client (an error when the client did not declare the
  capability), their answers back;
- notifications: log messages, ``*/list_changed``, ``resources/updated`` and the rest from
  the backend to the client; ``roots/list_changed`` and the rest from the client to the
  backend.

Requests wait for the backend as long as it takes (a client's own timeout cancels them,
or set ``SessionOptions(handler_timeout=...)`` on the serving side); connecting and the
backend's handshake are bounded by ``connect_timeout``.

To serve another server's components *next to* a server's own (namespaced, filtered,
behind its scopes and pagination) instead of relaying whole sessions, add a
:class:`ProxyProvider` to a ``trimcp.Server`` (see :mod:`trimcp.proxy.provider`).

2026-07-28 clients are served too, the era chosen per request (HTTP) or per connection
(stdio) as :class:`trimcp.Server` does; they share one backend session opened in the
proxy's lifespan (see :mod:`trimcp.proxy.modern` for what that session can and cannot
carry).
"""

from trimcp.proxy.modern import SharedBackend as SharedBackend
from trimcp.proxy.provider import ProxyProvider as ProxyProvider
from trimcp.proxy.server import ProxyServer as ProxyServer
from trimcp.proxy.server import TransportFactory as TransportFactory

__all__ = ["ProxyProvider", "ProxyServer", "SharedBackend", "TransportFactory"]
