"""Shared wire types: ids, icons, annotations, and the base shapes of params and results.

Conventions for every class in :mod:`trimcp.types` (the converter in :mod:`trimcp.serde`
relies on them):

- Python field names are snake_case; the wire name is derived by the converter
  (``mime_type`` <-> ``mimeType``, ``meta`` <-> ``_meta``, a trailing ``_`` is dropped) or
  given as ``attrs.field(metadata={"wire": "..."})``.
- A field without a default is required on the wire. ``X | None = None`` fields are
  optional and left out of the output when ``None``. A required field typed ``X | None``
  is always sent (``null`` included).
- Discriminator fields such as ``type: Literal["text"] = "text"`` are always sent.
- ``dict[str, Any]`` and ``Any`` fields hold plain JSON data and pass through the
  converter untouched, both ways: put only JSON-able values in them.
"""

from typing import Any, Literal, TypeAlias

import attrs

from trimcp.types.base import WireType

RequestId: TypeAlias = int | str
"""A JSON-RPC request id."""

ProgressToken: TypeAlias = int | str
"""A token that ties progress notifications to the request that asked for them."""

Cursor: TypeAlias = str
"""An opaque pagination position."""

Role: TypeAlias = Literal["user", "assistant"]
"""The sender or recipient of a message in a conversation."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Icon(WireType):
    """An optionally sized icon that a user interface can display."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Annotations(WireType):
    """Hints to the client about how to use or show an object."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RequestParams(WireType):
    """Params of a request that carries nothing but ``_meta`` (e.g. ``ping``, ``roots/list``).

    ``meta`` may hold ``progressToken``; in 2026-07-28 it also carries the protocol version,
    client capabilities and client info of a stateless request.
    """

    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PaginatedRequestParams(RequestParams):
    """Params of a list request: an optional cursor from a previous page."""

    cursor: Cursor | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class NotificationParams(WireType):
    """Params of a notification that carries nothing but ``_meta`` (e.g. list_changed)."""

    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Result(WireType):
    """Fields common to every result.

    ``result_type`` exists only from 2026-07-28 (``"complete"`` or ``"input_required"``);
    leave it ``None`` for earlier revisions.
    """

    meta: dict[str, Any] | None = None
    result_type: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EmptyResult(Result):
    """A result that only says the request succeeded (``ping``, ``resources/subscribe``...)."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PaginatedResult(Result):
    """Fields common to list results: the cursor of the next page, if there is one."""

    next_cursor: Cursor | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class InputRequiredResult(Result):
    """2026-07-28: the server needs input (elicitation, sampling, roots) before it can answer.

    ``input_requests`` maps server-chosen keys to request objects (``method`` and
    ``params``), kept as plain JSON; the client answers them in ``inputResponses``.
    """

    input_requests: dict[str, Any] | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Error(WireType):
    """The ``error`` member of a JSON-RPC error response.

    ``data`` is any JSON value; ``None`` means absent (an explicit ``null`` is not kept).
    """

    code: int
    message: str
    data: Any = None
