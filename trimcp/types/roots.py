"""Roots: the directories or files a client lets a server work on (``roots/list``)."""

from typing import Any

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Result


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Root(WireType):
    """A root; ``uri`` must be a ``file://`` URI for now."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListRootsResult(Result):
    """The result of ``roots/list``."""

    roots: list[Root]
