"""OAuth 2.1 authorization for MCP over HTTP: protect a server, log in from a client.

Server side: :class:`ProtectedResource` (give it to ``HttpServerConfig(auth=...)``) with a
token verifier: :class:`JwtVerifier`, :class:`IntrospectionVerifier` or
:class:`CallableVerifier`. Handlers see the caller as ``ctx.auth`` (:class:`AuthInfo`).

See docs/authorization.md. JWT support needs the ``trimcp[auth]`` extra (PyJWT with
cryptography).
"""

from trimcp.auth.errors import AuthError as AuthError
from trimcp.auth.errors import AuthorizationFailed as AuthorizationFailed
from trimcp.auth.errors import InvalidToken as InvalidToken
from trimcp.auth.errors import UnsafeUrl as UnsafeUrl
from trimcp.auth.introspection import IntrospectionVerifier as IntrospectionVerifier
from trimcp.auth.jwks import JwksCache as JwksCache
from trimcp.auth.principal import AuthInfo as AuthInfo
from trimcp.auth.principal import request_auth as request_auth
from trimcp.auth.resource import ProtectedResource as ProtectedResource
from trimcp.auth.verifiers import CallableVerifier as CallableVerifier
from trimcp.auth.verifiers import JwtVerifier as JwtVerifier
from trimcp.auth.verifiers import TokenVerifier as TokenVerifier

__all__ = [
    "AuthError",
    "AuthInfo",
    "AuthorizationFailed",
    "CallableVerifier",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwksCache",
    "JwtVerifier",
    "ProtectedResource",
    "TokenVerifier",
    "UnsafeUrl",
    "request_auth",
]
