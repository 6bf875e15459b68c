"""What the CLI adds to an error so that a person knows what to do next: "did you mean" for
a misspelled tool, prompt or resource, and hints for common ``--url`` and auth mistakes."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from trimcp.cli.errors import CliError, UsageError
from trimcp.errors import McpError, made_here

#: How close a known name must be to the one given to be suggested (difflib's ratio).
_CUTOFF = 0.6


class UnknownName(CliError):
    """The server has no tool, prompt or resource of the name the command line gave."""


def unknown(
    kind: str,
    name: str,
    known: Sequence[str],
    *,
    owner: str = "the server",
    listing: str | None = None,
) -> UnknownName:
    """The error for ``name`` missing among the ``known`` names of ``kind`` (``"tool"``...):
    one line, and a second suggesting the closest names, or where to find them all
    (``listing``: the command that lists them; default ``trimcp list <kind>s``).
    ``owner``: what has none of that name (a skill has files)."""
    close = difflib.get_close_matches(name, known, n=2, cutoff=_CUTOFF)
    plural = "resources" if kind == "resource" else f"{kind}s"
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    elif known:
        hint = f"`{listing or f'trimcp list {plural}'}` shows the {len(known)} it has"
    else:
        hint = f"{owner} lists no {plural}"
    return UnknownName(f"{owner} has no {kind} {name!r}", hint=hint)


#: What the refusal of an unknown argument name says about sending it anyway.
ALLOW_UNKNOWN = "--allow-unknown sends it as given"


def known_names(schema: Mapping[str, Any] | None) -> list[str] | None:
    """The argument names a tool's ``inputSchema`` lists, or ``None`` when it admits other
    names too (``additionalProperties`` other than ``false``, ``patternProperties``) or is
    not a schema of an object's properties at all: then no name can be called unknown."""
    if not isinstance(schema, Mapping):
        return None
    extra = schema.get("additionalProperties", False)
    if extra is not False or "patternProperties" in schema:
        return None
    properties = schema.get("properties", {})
    return list(properties) if isinstance(properties, Mapping) else None


def check_argument_names(
    given: Iterable[str],
    known: Sequence[str] | Mapping[str, Any] | None,
    *,
    owner: str,
    what: str = "argument",
    anyway: str | None = ALLOW_UNKNOWN,
) -> None:
    """Raise a :class:`UsageError` (exit 2) when a name in ``given`` is not ``known``: it
    names each such name with the closest known one ("did you mean"), or lists the known
    ones. ``known`` is a list of names, or a tool's input schema (see :func:`known_names`;
    ``None``: nothing to check against). ``owner`` says whose (``"tool 'greet'"``),
    ``what`` what a name is; ``anyway``: how to send it all the same, added to the hint."""
    names = known if not isinstance(known, Mapping) else known_names(known)
    if names is None:
        return
    strangers = [name for name in given if name not in names]
    if not strangers:
        return
    plural = "s" if len(strangers) > 1 else ""
    message = f"{owner} has no {what}{plural} " + ", ".join(repr(n) for n in strangers)
    meant = {n: difflib.get_close_matches(n, names, n=1, cutoff=_CUTOFF) for n in strangers}
    if all(meant.values()) and len(strangers) == 1:
        hint = f"did you mean {meant[strangers[0]][0]!r}?"
    elif all(meant.values()):
        hint = "did you mean " + ", ".join(f"{m[0]!r} (for {n!r})" for n, m in meant.items())
        hint += "?"
    elif names:
        hint = "it takes " + ", ".join(repr(n) for n in names)
    else:
        hint = f"it takes no {what}s"
    raise UsageError(message, hint=f"{hint} ({anyway})" if anyway else hint)


def answered(exc: McpError) -> bool:
    """Whether ``exc`` is an error response the server sent (not one made up on this side:
    see :func:`trimcp.errors.made_here`)."""
    return type(exc) is McpError and not made_here(exc)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an error reports, if it reports one (transport errors)."""
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int):
        return status
    data = getattr(exc, "data", None)
    if isinstance(data, dict) and isinstance(data.get("httpStatus"), int):
        return int(data["httpStatus"])
    if isinstance(exc, McpError):
        found = re.match(r"HTTP (\d{3}) from ", exc.message)
        if found:
            return int(found.group(1))
    return None


def url_hint(url: str, exc: BaseException, *, auth: bool, token: bool = False) -> str | None:
    """The next step for a connection to ``url`` that failed with ``exc``: add ``--auth``
    (``token``: an Authorization header was given), add the ``/mcp`` path, or switch
    between ``ws://`` and ``http://``."""
    status = http_status(exc)
    if status is None:
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if status == 401:
        if auth:
            return (
                "the login gave no token this server accepts: the line above says which "
                "side refused and why; fix that, then run again"
            )
        if token:
            return "the server refused the Authorization header's token: check it, or use --auth"
        return "the server asks for authorization: add --auth (or --header 'Authorization: ...')"
    if status == 403 and token and not auth:
        return "the server refused the Authorization header's token: check it, or use --auth"
    if status == 403 and auth:
        return (
            "logged in, but without a scope this server requires: the line above names it "
            "and the side that refused it"
        )
    if status == 404 and parts.path.rstrip("/") != "/mcp":
        with_path = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/mcp"))
        return f"MCP servers usually answer at /mcp: try --url {with_path}"
    websocket = scheme in ("ws", "wss")
    if websocket and status in (400, 405, 406, 415, 426):
        http = "https" if scheme == "wss" else "http"
        return "an HTTP endpoint answered the WebSocket handshake: try --url " + urlunsplit(
            parts._replace(scheme=http)
        )
    if not websocket and status in (400, 405, 426):
        ws = "wss" if scheme == "https" else "ws"
        return "if the server serves WebSocket, try --url " + urlunsplit(parts._replace(scheme=ws))
    return None
