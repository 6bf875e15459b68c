"""trimcp's low-level tier: the session engine, the sans-IO connection, the method table.

The friendly API (``trimcp``: ``Server``, ``Client``, ``connect_*``, ``serve_*``) is built
on these; reach for them to write a transport, drive a session by hand, or serve raw MCP
methods typed end to end::

    from trimcp.lowlevel import CALL_TOOL, LowLevelServer, open_session

- **The engine**: :class:`Session` (one nursery per session, one cancel scope per inbound
  request), :func:`open_session`, :func:`serve_session`, :class:`SessionOptions`,
  :class:`RequestContext`, the :class:`SessionHandler` contract, and :class:`Transport`,
  the contract a transport fulfils.
- **The protocol core** (no I/O): :class:`Connection`, :class:`Role`, :class:`Negotiated`,
  and :func:`admit_request`, the one admission rule of both eras.
- **The method table**: :class:`Method` (``Method[Params, Result]``), :data:`METHODS`,
  :func:`lookup`, and one typed constant per method (``CALL_TOOL``, ``LIST_TOOLS``, ...):
  ``await session.request(CALL_TOOL, params)`` and ``LowLevelServer.on(CALL_TOOL)``.
- **Raw serving**: :class:`LowLevelServer`, and transport openers
  (:func:`memory_transport_pair`, :func:`open_http_client_transport`,
  :func:`open_websocket_client_transport`).
"""

from __future__ import annotations

from trimcp.protocol.admission import admit_request as admit_request
from trimcp.protocol.connection import Connection as Connection
from trimcp.protocol.extensions import extension_method as extension_method
from trimcp.protocol.lifecycle import Role as Role
from trimcp.protocol.methods import CALL_TOOL as CALL_TOOL
from trimcp.protocol.methods import CANCEL_TASK as CANCEL_TASK
from trimcp.protocol.methods import CANCELLED as CANCELLED
from trimcp.protocol.methods import COMPLETE as COMPLETE
from trimcp.protocol.methods import CREATE_MESSAGE as CREATE_MESSAGE
from trimcp.protocol.methods import DISCOVER as DISCOVER
from trimcp.protocol.methods import ELICIT as ELICIT
from trimcp.protocol.methods import ELICITATION_COMPLETE as ELICITATION_COMPLETE
from trimcp.protocol.methods import GET_PROMPT as GET_PROMPT
from trimcp.protocol.methods import GET_TASK as GET_TASK
from trimcp.protocol.methods import GET_TASK_RESULT as GET_TASK_RESULT
from trimcp.protocol.methods import INITIALIZE as INITIALIZE
from trimcp.protocol.methods import INITIALIZED as INITIALIZED
from trimcp.protocol.methods import LIST_PROMPTS as LIST_PROMPTS
from trimcp.protocol.methods import LIST_RESOURCE_TEMPLATES as LIST_RESOURCE_TEMPLATES
from trimcp.protocol.methods import LIST_RESOURCES as LIST_RESOURCES
from trimcp.protocol.methods import LIST_ROOTS as LIST_ROOTS
from trimcp.protocol.methods import LIST_TASKS as LIST_TASKS
from trimcp.protocol.methods import LIST_TOOLS as LIST_TOOLS
from trimcp.protocol.methods import LISTEN as LISTEN
from trimcp.protocol.methods import LISTEN_ACKNOWLEDGED as LISTEN_ACKNOWLEDGED
from trimcp.protocol.methods import LOG_MESSAGE as LOG_MESSAGE
from trimcp.protocol.methods import METHODS as METHODS
from trimcp.protocol.methods import PING as PING
from trimcp.protocol.methods import PROGRESS as PROGRESS
from trimcp.protocol.methods import PROMPT_LIST_CHANGED as PROMPT_LIST_CHANGED
from trimcp.protocol.methods import READ_RESOURCE as READ_RESOURCE
from trimcp.protocol.methods import RESOURCE_LIST_CHANGED as RESOURCE_LIST_CHANGED
from trimcp.protocol.methods import RESOURCE_UPDATED as RESOURCE_UPDATED
from trimcp.protocol.methods import ROOTS_LIST_CHANGED as ROOTS_LIST_CHANGED
from trimcp.protocol.methods import SET_LOG_LEVEL as SET_LOG_LEVEL
from trimcp.protocol.methods import SUBSCRIBE as SUBSCRIBE
from trimcp.protocol.methods import TASK_STATUS as TASK_STATUS
from trimcp.protocol.methods import TOOL_LIST_CHANGED as TOOL_LIST_CHANGED
from trimcp.protocol.methods import UNSUBSCRIBE as UNSUBSCRIBE
from trimcp.protocol.methods import Method as Method
from trimcp.protocol.methods import lookup as lookup
from trimcp.protocol.negotiated import Negotiated as Negotiated
from trimcp.server.lowlevel import LowLevelServer as LowLevelServer
from trimcp.session import RequestContext as RequestContext
from trimcp.session import Session as Session
from trimcp.session import SessionHandler as SessionHandler
from trimcp.session import SessionOptions as SessionOptions
from trimcp.session import open_session as open_session
from trimcp.session import serve_session as serve_session
from trimcp.session.transport import Transport as Transport
from trimcp.transports.http_client import (
    open_http_client_transport as open_http_client_transport,
)
from trimcp.transports.memory import memory_transport_pair as memory_transport_pair
from trimcp.transports.websocket import (
    open_websocket_client_transport as open_websocket_client_transport,
)

__all__ = sorted(name for name in dir() if not name.startswith("_") and name != "annotations")
