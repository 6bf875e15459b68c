"""OAuth 2.1 authorization for MCP over HTTP: protect a server, log in from a client.

Client side: :class:`OAuthClient` (``connect_http(url, auth=...)``), with
:class:`ClientCredentials`, :class:`EnterpriseManaged` and :class:`WorkloadIdentity` for the
extensions; DPoP-bound tokens with ``OAuthClient(dpop=...)`` (:class:`DpopKey`).

Server side: :class:`ProtectedResource` (give it to ``HttpServerConfig(auth=...)``; DPoP
with ``dpop=`` / ``require_dpop=`` and a :class:`DpopChecker`) with a
token verifier: :class:`JwtVerifier`, :class:`IntrospectionVerifier` or
:class:`CallableVerifier`. Handlers see the caller as ``ctx.auth`` (:class:`AuthInfo`).

See docs/authorization.md. JWT support needs the ``trimcp[auth]`` extra (PyJWT with
cryptography).

Names are imported on first use: a server that only reads ``ctx.auth`` (every
``trimcp.Server`` does) must not pay at start-up for the HTTP client, JWT and
introspection code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module it lives in
_EXPORTS: dict[str, str] = {
    "OAuthClient": "trimcp.auth.client",
    "ClientCredentials": "trimcp.auth.extensions",
    "EnterpriseManaged": "trimcp.auth.extensions",
    "WorkloadIdentity": "trimcp.auth.extensions",
    "DpopKey": "trimcp.auth.dpop",
    "DpopChecker": "trimcp.auth.dpop",
    "NonceSource": "trimcp.auth.dpop",
    "PrivateKey": "trimcp.auth.grants",
    "FollowRedirects": "trimcp.auth.interaction",
    "Interaction": "trimcp.auth.interaction",
    "LoopbackBrowser": "trimcp.auth.interaction",
    "FileTokenStore": "trimcp.auth.tokens",
    "MemoryTokenStore": "trimcp.auth.tokens",
    "TokenSet": "trimcp.auth.tokens",
    "TokenStore": "trimcp.auth.tokens",
    "AuthError": "trimcp.auth.errors",
    "AuthorizationFailed": "trimcp.auth.errors",
    "AuthorizationServerChanged": "trimcp.auth.errors",
    "InvalidToken": "trimcp.auth.errors",
    "UnsafeUrl": "trimcp.auth.errors",
    "UntrustedAuthorizationServer": "trimcp.auth.errors",
    "IntrospectionVerifier": "trimcp.auth.introspection",
    "JwksCache": "trimcp.auth.jwks",
    "AuthInfo": "trimcp.auth.principal",
    "principal_key": "trimcp.auth.principal",
    "ProtectedResource": "trimcp.auth.resource",
    "CallableVerifier": "trimcp.auth.verifiers",
    "JwtVerifier": "trimcp.auth.verifiers",
    "TokenVerifier": "trimcp.auth.verifiers",
}

if TYPE_CHECKING:
    from trimcp.auth.client import OAuthClient as OAuthClient
    from trimcp.auth.dpop import DpopChecker as DpopChecker
    from trimcp.auth.dpop import DpopKey as DpopKey
    from trimcp.auth.dpop import NonceSource as NonceSource
    from trimcp.auth.errors import AuthError as AuthError
    from trimcp.auth.errors import AuthorizationFailed as AuthorizationFailed
    from trimcp.auth.errors import AuthorizationServerChanged as AuthorizationServerChanged
    from trimcp.auth.errors import InvalidToken as InvalidToken
    from trimcp.auth.errors import UnsafeUrl as UnsafeUrl
    from trimcp.auth.errors import UntrustedAuthorizationServer as UntrustedAuthorizationServer
    from trimcp.auth.extensions import ClientCredentials as ClientCredentials
    from trimcp.auth.extensions import EnterpriseManaged as EnterpriseManaged
    from trimcp.auth.extensions import WorkloadIdentity as WorkloadIdentity
    from trimcp.auth.grants import PrivateKey as PrivateKey
    from trimcp.auth.interaction import FollowRedirects as FollowRedirects
    from trimcp.auth.interaction import Interaction as Interaction
    from trimcp.auth.interaction import LoopbackBrowser as LoopbackBrowser
    from trimcp.auth.introspection import IntrospectionVerifier as IntrospectionVerifier
    from trimcp.auth.jwks import JwksCache as JwksCache
    from trimcp.auth.principal import AuthInfo as AuthInfo
    from trimcp.auth.principal import principal_key as principal_key
    from trimcp.auth.resource import ProtectedResource as ProtectedResource
    from trimcp.auth.tokens import FileTokenStore as FileTokenStore
    from trimcp.auth.tokens import MemoryTokenStore as MemoryTokenStore
    from trimcp.auth.tokens import TokenSet as TokenSet
    from trimcp.auth.tokens import TokenStore as TokenStore
    from trimcp.auth.verifiers import CallableVerifier as CallableVerifier
    from trimcp.auth.verifiers import JwtVerifier as JwtVerifier
    from trimcp.auth.verifiers import TokenVerifier as TokenVerifier


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trimcp.auth' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AuthError",
    "AuthInfo",
    "AuthorizationFailed",
    "AuthorizationServerChanged",
    "CallableVerifier",
    "ClientCredentials",
    "DpopChecker",
    "DpopKey",
    "EnterpriseManaged",
    "FileTokenStore",
    "FollowRedirects",
    "Interaction",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwksCache",
    "JwtVerifier",
    "LoopbackBrowser",
    "MemoryTokenStore",
    "NonceSource",
    "OAuthClient",
    "PrivateKey",
    "ProtectedResource",
    "TokenSet",
    "TokenStore",
    "TokenVerifier",
    "UnsafeUrl",
    "UntrustedAuthorizationServer",
    "WorkloadIdentity",
    "principal_key",
]
