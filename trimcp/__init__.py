"""trimcp: a Trio-native framework for the Model Context Protocol."""

from trimcp.errors import LocalProtocolError as LocalProtocolError
from trimcp.errors import McpError as McpError
from trimcp.errors import RemoteProtocolError as RemoteProtocolError
from trimcp.errors import RequestTimeout as RequestTimeout
from trimcp.errors import SessionClosed as SessionClosed

__version__ = "0.1.0"
