"""trimcp: a Trio-native framework for the Model Context Protocol.

The public API lives here (and in ``trimcp.testing``, ``trimcp.types`` for the wire types);
every other module is an implementation detail whose names say what it holds.
"""

from trimcp._version import __version__ as __version__
from trimcp.client import Client as Client
from trimcp.client import connect_memory as connect_memory
from trimcp.client import connect_stdio as connect_stdio
from trimcp.client import connect_transport as connect_transport
from trimcp.errors import LocalProtocolError as LocalProtocolError
from trimcp.errors import McpError as McpError
from trimcp.errors import RemoteProtocolError as RemoteProtocolError
from trimcp.errors import RequestTimeout as RequestTimeout
from trimcp.errors import SessionClosed as SessionClosed
from trimcp.protocol.lifecycle import Role as Role
from trimcp.protocol.negotiated import Negotiated as Negotiated
from trimcp.protocol.versions import LATEST_VERSION as LATEST_VERSION
from trimcp.protocol.versions import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from trimcp.server import Audio as Audio
from trimcp.server import Context as Context
from trimcp.server import Field as Field
from trimcp.server import Image as Image
from trimcp.server import PromptMessage as PromptMessage
from trimcp.server import Server as Server
from trimcp.server import ToolError as ToolError
from trimcp.server.lowlevel import LowLevelServer as LowLevelServer
from trimcp.session import RequestContext as RequestContext
from trimcp.session import Session as Session
from trimcp.session import SessionOptions as SessionOptions
from trimcp.session import open_session as open_session
from trimcp.session import serve_session as serve_session
from trimcp.transports.memory import memory_transport_pair as memory_transport_pair
from trimcp.transports.stdio import serve_stdio as serve_stdio
from trimcp.transports.websocket import (
    open_websocket_client_transport as open_websocket_client_transport,
)
from trimcp.transports.websocket import serve_websocket as serve_websocket

