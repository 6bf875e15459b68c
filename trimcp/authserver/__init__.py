"""trimcp as the OAuth 2.1 authorization server MCP clients see, in front of an identity
provider that cannot register them (GitHub, Google, any OpenID Connect provider).

:class:`AuthorizationServer` goes where a :class:`~trimcp.auth.ProtectedResource` would
(``Server(auth=...)``); :func:`github`, :func:`google`, :func:`oidc` and
:class:`Upstream` say where users log in; :class:`MemoryAuthStore` and
:class:`RedisAuthStore` keep its state. See docs/authorization.md, "Log in with GitHub,
Google or your OIDC provider".

Names are imported on first use (like :mod:`trimcp.auth`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AuthorizationServer": "trimcp.authserver.server",
    "Upstream": "trimcp.authserver.upstream",
    "github": "trimcp.authserver.upstream",
    "google": "trimcp.authserver.upstream",
    "oidc": "trimcp.authserver.upstream",
    "AuthStore": "trimcp.authserver.store",
    "MemoryAuthStore": "trimcp.authserver.store",
    "RedisAuthStore": "trimcp.authserver.redis_store",
}

if TYPE_CHECKING:
    from trimcp.authserver.redis_store import RedisAuthStore as RedisAuthStore
    from trimcp.authserver.server import AuthorizationServer as AuthorizationServer
    from trimcp.authserver.store import AuthStore as AuthStore
    from trimcp.authserver.store import MemoryAuthStore as MemoryAuthStore
    from trimcp.authserver.upstream import Upstream as Upstream
    from trimcp.authserver.upstream import github as github
    from trimcp.authserver.upstream import google as google
    from trimcp.authserver.upstream import oidc as oidc


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trimcp.authserver' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AuthStore",
    "AuthorizationServer",
    "MemoryAuthStore",
    "RedisAuthStore",
    "Upstream",
    "github",
    "google",
    "oidc",
]
