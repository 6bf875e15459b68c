"""Errors the client framework raises about what a server sent.

Both are :class:`~trimcp.errors.RemoteProtocolError`: the server broke a promise. Their
code is ``-32603``, the code the protocol core also gives an invalid result.
"""

from __future__ import annotations

from trimcp.errors import INTERNAL_ERROR, RemoteProtocolError
from trimcp.types import CallToolResult


class ToolOutputError(RemoteProtocolError):
    """A tool's result does not match the ``outputSchema`` its listing declared.

    ``tool`` is the tool's name, ``result`` the whole (typed) result as received, ``path``
    locates the first bad value inside ``structuredContent`` (``""`` for the value itself,
    or when it is missing) and ``reason`` says what is wrong.
    """

    def __init__(self, tool: str, result: CallToolResult, path: str, reason: str) -> None:
        where = f" at {path}" if path else ""
        super().__init__(
            INTERNAL_ERROR,
            f"Tool {tool!r} returned structuredContent that does not match its "
            f"outputSchema{where}: {reason}",
            {"tool": tool, "path": path, "reason": reason},
        )
        self.tool = tool
        self.result = result
        self.path = path
        self.reason = reason


class PaginationError(RemoteProtocolError):
    """A listing did not end: it repeated a cursor, or ran past the page limit.

    Items of the pages received before this was raised have already been yielded.
    ``pages`` is how many pages were fetched.
    """

    def __init__(self, method: str, pages: int, reason: str) -> None:
        super().__init__(INTERNAL_ERROR, f"{method}: {reason}", None)
        self.method = method
        self.pages = pages
        self.reason = reason
