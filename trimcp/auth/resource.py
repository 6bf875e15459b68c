"""Protecting an MCP server: :class:`ProtectedResource` (OAuth 2.1 resource server side).

Give one to ``HttpServerConfig(auth=...)``. The HTTP app then:

- serves the protected-resource metadata (RFC 9728) at
  ``/.well-known/oauth-protected-resource`` plus the resource's path, and at the bare
  well-known path;
- verifies the bearer token of every request to the MCP endpoint before anything else is
  read (a missing or refused token: 401 with ``WWW-Authenticate: Bearer
  resource_metadata=..., scope=...`` and, for a refused one, ``error="invalid_token"``);
- with ``dpop``, also accepts DPoP-bound tokens (``Authorization: DPoP``, RFC 9449) and
  checks their proof (:mod:`trimcp.auth.dpop`); with ``require_dpop``, only those;
- checks the token's audience is this resource (RFC 8707) and that it grants the
  server-wide ``required_scopes``, then, per request in the body, the scopes a tool,
  prompt or resource needs (403 ``insufficient_scope`` with the scopes to ask for: the
  client can step up). Nothing runs for a refused request;
- binds each session to the principal that created it (another principal: 404), and
  hands the principal to handlers as ``ctx.auth``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final, cast
from urllib.parse import urlsplit

import trio

from trimcp.auth.dpop import DpopChecker, DpopError, ReplayCache
from trimcp.auth.errors import InvalidToken
from trimcp.auth.principal import AuthInfo
from trimcp.auth.verifiers import CallableVerifier, TokenVerifier, VerifyFunction
from trimcp.errors import INVALID_PARAMS
from trimcp.http.errors import HttpRejection
from trimcp.protocol.jsonrpc import Request, dump_json
from trimcp.protocol.methods import METHODS
from trimcp.protocol.uris import AmbiguousUri, canonical_uri

logger = logging.getLogger("trimcp.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: Methods that use a component, by the method table's columns: the kind of component
#: (its per-item scopes apply) and the param naming it (None: the params list several).
_TARGETS: Final = {
    m.name: (m.target, m.target_field) for m in METHODS.values() if m.target is not None
}


def _quoted(text: str) -> str:
    # A quoted-string of RFC 9110 holding only visible ASCII and spaces (no " or \).
    clean = "".join(c for c in text if 0x20 <= ord(c) < 0x7F and c not in '"\\')
    return f'"{clean[:300]}"'


def canonical_resource(url: str) -> str:
    """The canonical form of a resource URI (RFC 8707 / the MCP spec): lower-case scheme
    and host, no fragment; the path is kept as given (no trailing slash added)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the resource must be an absolute http(s) URL, got {url!r}")
    if parts.fragment:
        raise ValueError(f"the resource URI must not have a fragment: {url!r}")
    netloc = parts.netloc.lower()
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{netloc}{parts.path}{query}"


def _scope_map(value: Mapping[str, Iterable[str] | str] | None) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for key, scopes in (value or {}).items():
        out[key] = frozenset(scopes.split()) if isinstance(scopes, str) else frozenset(scopes)
    return out


def _canonical_pattern(pattern: str) -> str:
    """A ``resource_scopes`` key in canonical form (its ``*`` kept): rules match canonical
    URIs, so a pattern must say what it protects in that form too."""
    stem, star = (pattern[:-1], "*") if pattern.endswith("*") else (pattern, "")
    try:
        return canonical_uri(stem) + star
    except AmbiguousUri as exc:
        raise ValueError(f"resource_scopes: the pattern {pattern!r} is unusable: {exc}") from None


def _listen_uris(request: Request) -> list[Any]:
    notifications = (request.params or {}).get("notifications")
    if not isinstance(notifications, Mapping):
        return []
    uris = notifications.get("resourceSubscriptions")
    return list(uris) if isinstance(uris, list) else []


class ProtectedResource:
    """This MCP server as an OAuth 2.1 protected resource (see the module docstring).

    ``resource``: the server's canonical URI, the MCP endpoint's full URL as clients
    reach it (``https://mcp.example.com/mcp``); tokens must name it in ``aud``.
    ``authorization_servers``: issuer URLs of the servers that issue tokens for it.
    ``verifier``: a :class:`TokenVerifier` (or an ``async def (token) -> AuthInfo |
    None``). ``required_scopes``: needed for every request. ``tool_scopes`` /
    ``prompt_scopes``: extra scopes per tool / prompt name; ``resource_scopes``: per
    resource URI, or URI prefix ending in ``*``, both compared in canonical form
    (:mod:`trimcp.protocol.uris`; see docs/authorization.md). ``hide_unauthorized``: lists leave out
    the tools, prompts and resources the caller's scopes do not reach.
    ``scopes_supported``: advertised in the metadata (default: every scope named here).
    ``extra_audiences``: other ``aud`` values accepted (e.g. an old URL);
    ``verify_audience=False`` leaves the audience to the verifier (e.g. a custom one).
    ``resource_name`` / ``resource_documentation``: shown to users by clients.
    ``dpop``: accept DPoP-bound tokens too (True, or a :class:`~trimcp.auth.dpop.
    DpopChecker` to set the proof algorithms, age, server nonces or replay cache);
    ``require_dpop``: accept nothing else (a Bearer token is refused). A token bound to a
    key (``cnf.jkt``) is always refused as Bearer.
    """

    def __init__(
        self,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier | VerifyFunction,
        required_scopes: Iterable[str] = (),
        tool_scopes: Mapping[str, Iterable[str] | str] | None = None,
        prompt_scopes: Mapping[str, Iterable[str] | str] | None = None,
        resource_scopes: Mapping[str, Iterable[str] | str] | None = None,
        hide_unauthorized: bool = False,
        scopes_supported: Iterable[str] | None = None,
        extra_audiences: Iterable[str] = (),
        verify_audience: bool = True,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
        dpop: bool | DpopChecker = False,
        require_dpop: bool = False,
    ) -> None:
        if not authorization_servers:
            raise ValueError("name at least one authorization server (its issuer URL)")
        self.resource = canonical_resource(resource)
        self.authorization_servers = tuple(authorization_servers)
        self.verifier: TokenVerifier = (
            cast(TokenVerifier, verifier)
            if hasattr(verifier, "verify")
            else CallableVerifier(verifier)
        )
        self.required_scopes = frozenset(required_scopes)
        self.tool_scopes = _scope_map(tool_scopes)
        self.prompt_scopes = _scope_map(prompt_scopes)
        # Keys in canonical form: a rule matches the canonical URI (trimcp.protocol.uris).
        by_pattern: dict[str, frozenset[str]] = {}
        for key, scopes in _scope_map(resource_scopes).items():
            pattern = _canonical_pattern(key)
            by_pattern[pattern] = by_pattern.get(pattern, frozenset()) | scopes
        self._exact_resources = {k: v for k, v in by_pattern.items() if not k.endswith("*")}
        self._prefix_resources = sorted(
            ((k[:-1], v) for k, v in by_pattern.items() if k.endswith("*")),
            key=lambda kv: -len(kv[0]),
        )
        self._every_resource_scope = frozenset().union(*by_pattern.values())
        self.hide_unauthorized = hide_unauthorized
        if scopes_supported is None:
            every: set[str] = set(self.required_scopes)
            for table in (self.tool_scopes, self.prompt_scopes, self._exact_resources):
                for scopes in table.values():
                    every |= scopes
            for _, scopes in self._prefix_resources:
                every |= scopes
            scopes_supported = sorted(every)
        self.scopes_supported = tuple(scopes_supported)
        self.audiences = frozenset({self.resource, *map(canonical_resource, extra_audiences)})
        self.verify_audience = verify_audience
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        if dpop is True or (require_dpop and dpop is False):
            dpop = DpopChecker()
        #: The DPoP proof checks (None: Bearer tokens only).
        self.dpop: DpopChecker | None = dpop if isinstance(dpop, DpopChecker) else None
        self.require_dpop = require_dpop
        parts = urlsplit(self.resource)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"
        self.metadata_paths = frozenset({f"{WELL_KNOWN}{path}", WELL_KNOWN})
        self._metadata_body = dump_json(self.metadata())
        # The verifier's answer for a token -> what authenticate() made of it: a verifier
        # that caches returns the same object again, and the checks below need not rerun.
        self._admitted: dict[str, tuple[AuthInfo, AuthInfo]] = {}
        #: Paths besides the metadata this protection answers itself (an authorization
        #: server of its own: :class:`~trimcp.authserver.AuthorizationServer`); the HTTP
        #: app hands requests to them to :meth:`serve_endpoint` after its Host check.
        self.endpoint_paths: frozenset[str] = frozenset()

    # --- metadata (RFC 9728) ------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The protected-resource metadata document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        if self.dpop is not None:  # RFC 9449 §5.1 / RFC 9728 §2
            document["dpop_signing_alg_values_supported"] = list(self.dpop.algorithms)
            document["dpop_bound_access_tokens_required"] = self.require_dpop
        return document

    @property
    def metadata_body(self) -> bytes:
        return self._metadata_body

    #: True for a protection whose resource is the URL it will be served at (given by
    #: :meth:`serve_at` when that is known); a ProtectedResource always names its own.
    awaits_resource = False

    def serve_at(self, resource: str) -> None:
        """Take ``resource`` (the URL served) when none was given (nothing here)."""

    #: True for a protection that keeps state of its own in this process's memory (an
    #: authorization server of its own with no shared store: logins under way, codes,
    #: tokens), which processes sharing a port would not see; a ProtectedResource keeps
    #: none.
    state_in_memory = False

    def use_store(self, store: Any) -> None:
        """Keep what must be shared in ``store``, the HTTP server's (called by the HTTP
        app before it runs; nothing to keep here)."""

    async def serve_endpoint(
        self,
        path: str,
        scope: Mapping[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        """Answer an ASGI request to one of :attr:`endpoint_paths` (none here)."""
        raise HttpRejection(404, "Not found")

    # --- challenges ---------------------------------------------------------------------

    def challenge(
        self,
        status: int,
        message: str,
        *,
        error: str | None = None,
        scopes: Collection[str] | None = None,
        scheme: str | None = None,
        nonce: str | None = None,
    ) -> HttpRejection:
        """An :class:`HttpRejection` carrying ``WWW-Authenticate: Bearer ...`` (and a
        ``DPoP`` challenge where DPoP is accepted; the error goes in the challenge of
        ``scheme``, the one the request used). ``nonce``: sent as ``DPoP-Nonce``."""
        params = []
        wanted = self.required_scopes if scopes is None else scopes
        if wanted:
            params.append(f"scope={_quoted(' '.join(sorted(wanted)))}")
        params.append(f"resource_metadata={_quoted(self.metadata_url)}")
        errors = []
        if error is not None:
            errors = [f"error={_quoted(error)}", f"error_description={_quoted(message)}"]
        challenges = []
        if not self.require_dpop:
            bearer = errors if scheme != "dpop" else []
            challenges.append("Bearer " + ", ".join([*bearer, *params]))
        if self.dpop is not None:
            algs = f"algs={_quoted(' '.join(self.dpop.algorithms))}"
            dpop = errors if scheme == "dpop" or self.require_dpop else []
            challenges.append("DPoP " + ", ".join([*dpop, algs, *params]))
        headers = [(b"www-authenticate", ", ".join(challenges).encode("ascii"))]
        if nonce is not None:
            headers.append((b"dpop-nonce", nonce.encode("ascii")))
        return HttpRejection(status, message, headers=headers)

    # --- the gate -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The verifier's background work (key refresh...). The HTTP app runs it in its
        nursery. Cancellation: stops."""
        await self.verifier.run(task_status=task_status)

    async def authenticate(
        self, scope: Mapping[str, Any], *, replay: ReplayCache | None = None
    ) -> AuthInfo:
        """The principal of an ASGI request, or :class:`HttpRejection` (400/401/403).

        ``replay``: where DPoP proofs already used are remembered (the HTTP app gives its
        store's shared one; None: the checker's own)."""
        values = []
        proofs = []
        for key, value in scope["headers"]:
            name = key.lower()
            if name == b"authorization":
                values.append(value)
            elif name == b"dpop":
                proofs.append(value)
        if not values:
            raise self.challenge(401, "Authorization required: send a bearer token")
        if len(values) > 1:
            raise HttpRejection(400, "Repeated Authorization header")
        kind, _, token = values[0].decode("latin-1").strip().partition(" ")
        token = token.strip()
        scheme = kind.lower()
        if scheme not in ("bearer", "dpop") or not token:
            raise self.challenge(401, "Authorization required: send a bearer token")
        if scheme == "dpop" and self.dpop is None:
            raise self.challenge(
                401, "this server does not accept DPoP tokens: send a Bearer token"
            )
        if scheme == "bearer" and self.require_dpop:
            raise self.challenge(
                401,
                "this server accepts only DPoP-bound tokens: get one and send it with a proof",
                error="invalid_token",
            )
        if not _TOKEN68.fullmatch(token):
            raise self.challenge(
                401, "the token is malformed", error="invalid_token", scheme=scheme
            )
        try:
            info = await self.verifier.verify(token)
        except InvalidToken as exc:
            logger.info("refused a token: %s", exc)
            raise self.challenge(401, str(exc), error="invalid_token", scheme=scheme) from None
        jkt = _bound_key(info)
        if scheme == "bearer" and jkt is not None:
            raise self.challenge(
                401,
                "the token is bound to a DPoP key: send it with the DPoP scheme and a proof",
                error="invalid_token",
            )
        if scheme == "dpop":
            await self._check_proof(scope, proofs, token, jkt, replay)
        admitted = self._admitted.get(token)
        if admitted is not None and admitted[0] is info:
            return admitted[1]
        if self.verify_audience and not self.audiences.intersection(_canonical_all(info.audience)):
            logger.info("refused a token for audience %s", list(info.audience)[:4])
            raise self.challenge(
                401,
                "the token was issued for another audience",
                error="invalid_token",
                scheme=scheme,
            )
        if not info.has_scopes(self.required_scopes):
            raise self.challenge(
                403,
                "the token lacks scopes this server requires",
                error="insufficient_scope",
                scopes=self.required_scopes | info.scopes,
                scheme=scheme,
            )
        final = _with_rules(info, self)
        if len(self._admitted) >= 1024:
            self._admitted.clear()
        self._admitted[token] = (info, final)
        return final

    async def _check_proof(
        self,
        scope: Mapping[str, Any],
        proofs: list[bytes],
        token: str,
        jkt: str | None,
        replay: ReplayCache | None,
    ) -> None:
        checker = self.dpop
        assert checker is not None
        if jkt is None:
            raise self.challenge(
                401, "the token is not bound to a DPoP key", error="invalid_token", scheme="dpop"
            )
        if len(proofs) != 1:
            raise self.challenge(
                401 if not proofs else 400,
                "send exactly one DPoP proof header with a DPoP token",
                error="invalid_dpop_proof",
                scheme="dpop",
            )
        url = self._origin + scope["path"]
        try:
            await checker.check(
                proofs[0].decode("latin-1"),
                method=scope["method"],
                url=url,
                access_token=token,
                jkt=jkt,
                replay=replay,
            )
        except DpopError as exc:
            logger.info("refused a DPoP proof: %s", exc)
            nonce = checker.nonce() if exc.error == "use_dpop_nonce" else None
            raise self.challenge(
                401, str(exc), error=exc.error, scheme="dpop", nonce=nonce
            ) from None

    def scopes_for(self, method: str, name: str) -> frozenset[str]:
        """Scopes a ``method`` request on ``name`` needs beyond ``required_scopes``.

        A resource URI is matched in canonical form (:func:`~trimcp.protocol.uris.canonical_uri`),
        the exact rule first, then the longest prefix; a URI with no canonical form (the
        server refuses to serve it) needs every resource scope."""
        target, _ = _TARGETS.get(method, (None, None))
        if target == "tool":
            return self.tool_scopes.get(name, frozenset())
        if target == "prompt":
            return self.prompt_scopes.get(name, frozenset())
        if target == "resource":
            try:
                uri = canonical_uri(name)
            except AmbiguousUri:
                return self._every_resource_scope
            exact = self._exact_resources.get(uri)
            if exact is not None:
                return exact
            for prefix, scopes in self._prefix_resources:
                if uri.startswith(prefix):
                    return scopes
        return frozenset()

    def authorize(self, requests: Iterable[Request], auth: AuthInfo | None) -> None:
        """Refuse (403 ``insufficient_scope``) a body holding a request whose target needs
        scopes ``auth`` lacks, and (400, JSON-RPC ``-32602``) one naming a resource URI with
        no canonical form. Called before the body reaches the session."""
        if auth is None:
            return
        for request in requests:
            target, key = _TARGETS.get(request.method, (None, None))
            if target is None:
                continue
            if key is None:  # subscriptions/listen: the resources it lists
                for uri in _listen_uris(request):
                    if isinstance(uri, str):
                        self._check(request, target, uri, auth)
                continue
            name = request.params.get(key) if request.params is not None else None
            if isinstance(name, str):
                self._check(request, target, name, auth)

    def _check(self, request: Request, kind: str, name: str, auth: AuthInfo) -> None:
        if kind == "resource":
            try:
                canonical_uri(name)
            except AmbiguousUri as exc:
                raise HttpRejection(
                    400, f"Invalid params: {exc}", code=INVALID_PARAMS, request_id=request.id
                ) from None
        needed = self.scopes_for(request.method, name)
        if needed and not auth.has_scopes(needed):
            missing = " ".join(sorted(needed - auth.scopes))
            raise self.challenge(
                403,
                f"the {kind} {name[:100]!r} needs scope {missing}",
                error="insufficient_scope",
                scopes=self.required_scopes | auth.scopes | needed,
            )


def _canonical_all(values: Iterable[str]) -> set[str]:
    out = set()
    for value in values:
        try:
            out.add(canonical_resource(value))
        except ValueError:
            out.add(value)
    return out


def _bound_key(info: AuthInfo) -> str | None:
    """The thumbprint a token is bound to (``cnf.jkt``, RFC 9449 §6), if any."""
    cnf = info.claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, Mapping) else None
    return jkt if isinstance(jkt, str) else None


def _with_rules(info: AuthInfo, resource: ProtectedResource) -> AuthInfo:
    import attrs

    return attrs.evolve(
        info, rules=resource.scopes_for, hide_unauthorized=resource.hide_unauthorized
    )
