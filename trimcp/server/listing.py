"""What every list request of a server shares: pages and what the caller may see.

A list handler takes what its kind lists for the request
(:meth:`~trimcp.server.components.Components.listed`), drops what the caller's token does
not reach when its ``ProtectedResource`` hides that (:func:`visible`), and cuts the page
the cursor asks for (:class:`Pages`, keyed cursors of :mod:`trimcp.protocol.pagination`:
items added or removed between pages are never repeated or skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from trimcp.auth.principal import AuthInfo
from trimcp.protocol.pagination import paginate

if TYPE_CHECKING:
    from trimcp.session.context import RequestContext
    from trimcp.types import PaginatedRequestParams

T = TypeVar("T")


class Pages:
    """Pages of ``page_size`` items (None: one page), their cursors keyed by ``secret``
    and the list's method (a cursor of one list is refused by another)."""

    __slots__ = ("page_size", "secret")

    def __init__(self, page_size: int | None, secret: str) -> None:
        self.page_size = page_size
        self.secret = secret

    def page(
        self,
        items: Sequence[T],
        params: PaginatedRequestParams | None,
        method: str,
        key: Callable[[T], str],
    ) -> tuple[list[T], str | None]:
        """The page ``params``' cursor asks for, and the next page's cursor (None: last)."""
        cursor = params.cursor if params is not None else None
        return paginate(items, cursor, self.page_size, salt=f"{self.secret}{method}", key=key)


def visible(items: Iterable[T], ctx: RequestContext, method: str, key: str) -> list[T]:
    """``items`` less those the caller's scopes do not reach for ``method`` (on each
    item's ``key`` attribute), when its auth hides them."""
    auth = ctx.principal
    if not isinstance(auth, AuthInfo) or not auth.hide_unauthorized:
        return list(items)
    return [item for item in items if auth.allows(method, getattr(item, key))]


def by_name(item: Any) -> str:
    return str(item.name)


def by_uri(item: Any) -> str:
    return str(item.uri)


def by_template(item: Any) -> str:
    return str(item.uri_template)
