"""Cache hints of 2026-07-28 results: how long a result stays fresh and who may share it.

A leaf module: components carry their hint (``cache=`` at registration), list pages and
reads take theirs from the components (:mod:`trimcp.server.stateless`), and
``server/discover`` takes the server's (:mod:`trimcp.server.shell`).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from trimcp._record import Record


def _ttl(instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"ttl_ms must be an integer >= 0, got {value!r}")


@attrs.frozen(repr=False, eq=False)
class CacheHint(Record):
    """How long a client may consider a result fresh (``ttl_ms``) and who may share it
    (``scope``: ``"public"``: any user, any shared cache; ``"private"``: only the same
    authorization context)."""

    ttl_ms: int = attrs.field(default=0, validator=_ttl)
    scope: Literal["public", "private"] = "public"
