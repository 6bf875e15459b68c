"""trimcp as the authorization server an MCP client sees: :class:`AuthorizationServer`.

Give one to ``Server(auth=...)`` (it is a :class:`~trimcp.auth.ProtectedResource` whose
authorization server is itself). On the MCP server's own origin it serves:

- ``/.well-known/oauth-authorization-server`` (RFC 8414) and the protected-resource
  metadata (RFC 9728) naming this origin as the authorization server;
- ``/oauth/register`` (RFC 7591 dynamic registration) and client ids that are URLs of
  client metadata documents (fetched SSRF-guarded);
- ``/oauth/authorize``: checks the client and its redirect URI (refusing with a page,
  never a redirect, when either is wrong), PKCE (S256 only), scopes and resource; then,
  unless the user who last signed in with this browser allowed the client (in any
  browser), a consent page (``/oauth/consent``); then the upstream login
  (:mod:`~trimcp.authserver.upstream`), which returns to ``/oauth/callback``, bound to the
  browser that started it; a user who signed in there without having allowed the client
  (the page was skipped for another user of the browser) is asked then, before any code;
- ``/oauth/token`` (authorization code with PKCE, refresh with rotation; DPoP-bound
  tokens when the client sends a proof), ``/oauth/revoke`` (RFC 7009), ``/oauth/jwks``.

The MCP endpoint accepts only the access tokens issued here (audience = the MCP server,
``iss`` = this origin): a token the upstream issued is refused. Upstream tokens stay in
the store, sealed. See docs/authorization.md, "Log in with GitHub, Google or your OIDC
provider".
"""

from __future__ import annotations

import base64
import hmac
import logging
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import orjson
import trio

from trimcp.auth.dpop import DpopChecker, DpopError, NonceSource, ReplayCache
from trimcp.auth.errors import InvalidToken
from trimcp.auth.pkce import challenge_of, new_verifier
from trimcp.auth.principal import AuthInfo
from trimcp.auth.resource import ProtectedResource, canonical_resource
from trimcp.authserver.clients import (
    Client,
    DocumentClients,
    RegistrationError,
    digest,
    is_document_client_id,
    register,
)
from trimcp.authserver.grants import GrantError, Grants
from trimcp.authserver.keys import KeysUnavailable, SigningKeys
from trimcp.authserver.pages import PAGE_HEADERS, consent_page, error_page
from trimcp.authserver.sealing import Sealer
from trimcp.authserver.store import AuthStore, MemoryAuthStore
from trimcp.authserver.upstream import Upstream, UpstreamError, UpstreamLogin
from trimcp.http.errors import HttpRejection
from trimcp.stores.base import StoreUnavailable
from trimcp.transports.http_server.asgi import Receive, Send, read_body, respond

logger = logging.getLogger("trimcp.authserver")

AS_METADATA = "/.well-known/oauth-authorization-server"
AUTHORIZE = "/oauth/authorize"
CONSENT = "/oauth/consent"
CALLBACK = "/oauth/callback"
TOKEN = "/oauth/token"
REGISTER = "/oauth/register"
REVOKE = "/oauth/revoke"
JWKS = "/oauth/jwks"
#: The cookie that binds consent and upstream login to one browser.
BROWSER_COOKIE = "trimcp_browser"
#: Bytes of a token, registration or consent request body.
MAX_FORM_BYTES = 64 * 1024
#: Characters of one query or form parameter.
MAX_PARAM_CHARS = 4096
#: Seconds before an upstream access token expires from which it is refreshed first.
UPSTREAM_REFRESH_MARGIN = 60.0
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}\Z")
_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}\Z")
_COOKIE_VALUE = re.compile(r"[A-Za-z0-9\-_]{43}\Z")
#: Scopes a client may ask for that grant nothing here (refresh tokens are always given).
_IGNORED_SCOPES = frozenset({"offline_access"})
_NO_STORE = [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]
_CORS = [(b"access-control-allow-origin", b"*")]


class _Refused(Exception):
    """An authorization request refused with a page (the client or redirect is not
    trusted, so nothing is redirected)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class _Redirected(Exception):
    """An authorization request refused with an error sent back to the client's
    (checked) redirect URI (RFC 6749 §4.1.2.1)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


class AuthorizationServer(ProtectedResource):
    """An MCP server's own OAuth 2.1 authorization server, in front of ``upstream``.

    ``resource``: the MCP endpoint's URL as clients reach it; its origin is the issuer
    (None: the URL served, which ``trimcp run`` and ``app.run`` give on loopback with a
    fixed port; anywhere else, give it).
    ``upstream``: where users log in (:func:`~trimcp.authserver.github`,
    :func:`~trimcp.authserver.google`, :func:`~trimcp.authserver.oidc` or an
    :class:`~trimcp.authserver.Upstream`). ``store``: an :class:`~trimcp.authserver.store.
    AuthStore` (default: memory, one process; with ``--workers`` or replicas, a
    :class:`~trimcp.authserver.redis_store.RedisAuthStore` and the same ``secret`` for
    all). ``secret``: seals upstream tokens and signing keys in the store (from the
    environment, never in code; None: a random key, for one process).
    ``server_name``: named on the consent page. Lifetimes in seconds:
    ``access_token_ttl`` (600), ``refresh_token_ttl`` (14 days), ``login_lifetime`` (30
    days: refreshing never goes beyond), ``code_ttl`` (60), ``login_ttl`` (600: consent and
    upstream login), ``client_ttl`` (30 days: a dynamic registration),
    ``consent_ttl`` (30 days: an approval remembered), ``revocation_lag`` (5: how long a
    replica may keep accepting the access tokens of a revoked login, so that it need not
    ask the store about every request). ``allow_private_client_ids``:
    client metadata documents may be on loopback/private addresses (tests only).
    ``dpop_checker``: checks DPoP proofs at the token endpoint (default: a fresh
    :class:`~trimcp.auth.DpopChecker`). ``dpop_nonce``: with the default checker,
    proofs at the token endpoint must carry a nonce this server gave (RFC 9449 §8;
    ``use_dpop_nonce`` and a ``DPoP-Nonce`` header answer one that does not): a nonce is
    derived from the secret and the time, so replicas sharing the secret agree on it.
    Every other keyword (``required_scopes``,
    ``tool_scopes``, ``dpop``, ``require_dpop``...) is :class:`ProtectedResource`'s.
    """

    def __init__(
        self,
        *,
        resource: str | None,
        upstream: Upstream,
        store: AuthStore | None = None,
        secret: str | bytes | None = None,
        server_name: str | None = None,
        access_token_ttl: float = 600.0,
        refresh_token_ttl: float = 14 * 86400.0,
        login_lifetime: float = 30 * 86400.0,
        code_ttl: float = 60.0,
        login_ttl: float = 600.0,
        client_ttl: float = 30 * 86400.0,
        consent_ttl: float = 30 * 86400.0,
        revocation_lag: float = 5.0,
        signing_algorithm: str = "ES256",
        rotate_keys_every: float = 24 * 3600.0,
        allow_private_client_ids: bool = False,
        dpop_checker: DpopChecker | None = None,
        dpop_nonce: bool = False,
        **protection: Any,
    ) -> None:
        if "verifier" in protection or "authorization_servers" in protection:
            raise ValueError(
                "an AuthorizationServer verifies its own tokens: give no verifier or "
                "authorization_servers"
            )
        if rotate_keys_every <= access_token_ttl:
            raise ValueError("rotate_keys_every must be longer than access_token_ttl")
        # The store and the sealing secret may still change before serving: trimcp run
        # and app.run give TRIMCP_AUTHSERVER_SECRET (adopt_secret), the HTTP server its
        # shared store (use_store).
        self._own_store = store is not None
        self.store: AuthStore = store if store is not None else MemoryAuthStore()
        #: True while the logins live in this process's memory only (no shared store).
        self.state_in_memory = isinstance(self.store, MemoryAuthStore)
        self._sealer = Sealer(secret)
        self._token_replay: ReplayCache | None = None
        self._own_dpop_checker = dpop_checker
        self._dpop_nonce = dpop_nonce
        self._serving = False
        self._set_up = False
        # family id -> set when the refresh of its upstream tokens under way ends
        self._upstream_refreshes: dict[str, trio.Event] = {}
        self._settings: dict[str, Any] = dict(
            upstream=upstream,
            server_name=server_name,
            access_token_ttl=access_token_ttl,
            refresh_token_ttl=refresh_token_ttl,
            login_lifetime=login_lifetime,
            code_ttl=code_ttl,
            login_ttl=login_ttl,
            client_ttl=client_ttl,
            consent_ttl=consent_ttl,
            revocation_lag=revocation_lag,
            signing_algorithm=signing_algorithm,
            rotate_keys_every=rotate_keys_every,
            allow_private_client_ids=allow_private_client_ids,
            dpop_checker=dpop_checker,
            protection=protection,
        )
        #: True until the resource is known: ``resource=None`` means "the URL served",
        #: which ``trimcp run`` / ``app.run`` give on loopback with a fixed port.
        self.awaits_resource = resource is None
        if resource is not None:
            self._setup(resource, **self._settings)

    def serve_at(self, resource: str) -> None:
        """Take ``resource`` (the URL served) as this server's resource, when none was
        given; a resource given in code is kept."""
        if self.awaits_resource:
            self._setup(resource, **self._settings)
            self.awaits_resource = False

    def _setup(
        self,
        resource: str,
        *,
        upstream: Upstream,
        server_name: str | None,
        access_token_ttl: float,
        refresh_token_ttl: float,
        login_lifetime: float,
        code_ttl: float,
        login_ttl: float,
        client_ttl: float,
        consent_ttl: float,
        revocation_lag: float,
        signing_algorithm: str,
        rotate_keys_every: float,
        allow_private_client_ids: bool,
        dpop_checker: DpopChecker | None,
        protection: dict[str, Any],
    ) -> None:
        parts = urlsplit(canonical_resource(resource))
        #: This server's issuer: the MCP server's origin.
        self.issuer = f"{parts.scheme}://{parts.netloc}"
        super().__init__(
            resource=resource,
            authorization_servers=[self.issuer],
            verifier=self._verify_own,
            **protection,
        )
        self.upstream = UpstreamLogin(upstream)
        self.server_name = server_name or self.resource
        self.code_ttl = code_ttl
        self.login_ttl = login_ttl
        self.client_ttl = client_ttl
        self.consent_ttl = consent_ttl
        self._secure_cookie = parts.scheme == "https"
        self._grants_settings = (
            access_token_ttl,
            refresh_token_ttl,
            login_lifetime,
            revocation_lag,
        )
        self._key_settings = (signing_algorithm, rotate_keys_every)
        self._set_up = True
        self._wire()
        self.documents = DocumentClients(allow_private=allow_private_client_ids)
        self.endpoint_paths = frozenset(
            {AS_METADATA, AUTHORIZE, CONSENT, CALLBACK, TOKEN, REGISTER, REVOKE, JWKS}
        )
        self._as_metadata = orjson.dumps(self.authorization_server_metadata())

    def _wire(self) -> None:
        """The signing keys and the grants, over the store and sealer held now."""
        if not self._set_up:
            return  # serve_at sets up with what is held then
        algorithm, rotate_every = self._key_settings
        self.keys = SigningKeys(
            self.store, self._sealer, algorithm=algorithm, rotate_every=rotate_every
        )
        if self._own_dpop_checker is not None:
            self.token_dpop = self._own_dpop_checker
        else:
            nonces = NonceSource(self._sealer.nonce_secret) if self._dpop_nonce else None
            self.token_dpop = DpopChecker(nonces=nonces)
        access_ttl, refresh_ttl, lifetime, lag = self._grants_settings
        self.grants = Grants(
            issuer=self.issuer,
            audience=self.resource,
            store=self.store,
            keys=self.keys,
            access_token_ttl=access_ttl,
            refresh_token_ttl=refresh_ttl,
            login_lifetime=lifetime,
            revocation_lag=lag,
        )

    @property
    def upstream_name(self) -> str:
        """The identity provider users log in at, as the consent page names it."""
        return self.upstream.upstream.display_name

    # --- deployment: the secret and the store -------------------------------------------

    @property
    def secret_configured(self) -> bool:
        """Whether what the store keeps is sealed with a secret given (in code, or by
        :meth:`adopt_secret`) rather than a key random to this process."""
        return self._sealer.shared

    def adopt_secret(self, secret: str | bytes) -> None:
        """Seal with ``secret`` when none was given in code (which is kept):
        ``trimcp run`` and ``app.run`` give ``TRIMCP_AUTHSERVER_SECRET`` here. ValueError
        for a secret under 16 bytes, RuntimeError once serving."""
        if self._sealer.shared:
            return
        self._not_serving("adopt_secret")
        self._sealer = Sealer(secret)
        self._wire()

    def use_store(self, store: Any) -> None:
        """Keep the logins in ``store`` (the HTTP server's) when it is shared (Redis)
        and no store was given in code: then every replica and worker on that store
        completes a login another started, honours its codes and refresh tokens, signs
        with the same keys, and refuses a DPoP proof at the token endpoint another has
        seen. RuntimeError once serving."""
        if self._own_store or not getattr(store, "shared", False):
            return
        self._not_serving("use_store")
        from trimcp.stores.redis import RedisStore

        if not isinstance(store, RedisStore):
            logger.warning(
                "the authorization server keeps its logins in this process's memory: "
                "the shared store %s is not a RedisStore; give AuthorizationServer(store=...)"
                " a store every replica shares",
                type(store).__name__,
            )
            return
        from trimcp.authserver.redis_store import RedisAuthStore

        self.store = RedisAuthStore(store)
        self.state_in_memory = False
        self._token_replay = store.replay_cache()
        self._wire()
        if not self._sealer.shared:
            logger.warning(
                "the authorization server's logins are in a shared store, but its secret is "
                "random to this process: other replicas sign with keys of their own (their "
                "tokens are refused here) and cannot open the upstream tokens this one keeps; "
                "set TRIMCP_AUTHSERVER_SECRET (16+ bytes, the same for every replica)"
            )

    def _not_serving(self, what: str) -> None:
        if self._serving:
            raise RuntimeError(f"{what}() must come before the authorization server runs")

    # --- metadata -------------------------------------------------------------------------

    def authorization_server_metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        base = self.issuer
        document: dict[str, Any] = {
            "issuer": base,
            "authorization_endpoint": base + AUTHORIZE,
            "token_endpoint": base + TOKEN,
            "registration_endpoint": base + REGISTER,
            "revocation_endpoint": base + REVOKE,
            "jwks_uri": base + JWKS,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            "dpop_signing_alg_values_supported": list(self.token_dpop.algorithms),
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        return document

    # --- lifetime -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Signing keys, their verifier and the upstream's discovery, for as long as the
        server runs. Cancellation: stops."""
        self._serving = True
        async with trio.open_nursery() as nursery:
            await nursery.start(self.grants.run)
            await nursery.start(self.upstream.run)
            task_status.started()

    async def _verify_own(self, token: str) -> AuthInfo | None:
        try:
            return await self.grants.verify(token)
        except StoreUnavailable:
            raise InvalidToken(
                "the token could not be checked (the store is unavailable)"
            ) from None

    # --- HTTP -----------------------------------------------------------------------------

    async def serve_endpoint(
        self, path: str, scope: Mapping[str, Any], receive: Receive, send: Send
    ) -> None:
        """Answer a request to one of :attr:`endpoint_paths`."""
        method = scope["method"]
        try:
            if method == "OPTIONS" and path in (AS_METADATA, JWKS, TOKEN, REGISTER, REVOKE):
                await _preflight(send)
            elif path == AS_METADATA:
                _only(method, "GET")
                await respond(
                    send,
                    200,
                    self._as_metadata,
                    [*_CORS, (b"cache-control", b"max-age=3600")],
                    content_type=b"application/json",
                )
            elif path == JWKS:
                _only(method, "GET")
                await self.keys.current()
                await respond(
                    send,
                    200,
                    orjson.dumps(self.keys.jwks()),
                    [*_CORS, (b"cache-control", b"max-age=300")],
                    content_type=b"application/json",
                )
            elif path == REGISTER:
                _only(method, "POST")
                await self._register(scope, receive, send)
            elif path == AUTHORIZE:
                _only(method, "GET")
                await self._authorize(scope, send)
            elif path == CONSENT:
                _only(method, "POST")
                await self._consent(scope, receive, send)
            elif path == CALLBACK:
                _only(method, "GET")
                await self._callback(scope, send)
            elif path == TOKEN:
                _only(method, "POST")
                await self._token(scope, receive, send)
            elif path == REVOKE:
                _only(method, "POST")
                await self._revoke(scope, receive, send)
            else:
                raise HttpRejection(404, "Not found")
        except _Refused as refused:
            await _page(send, refused.status, error_page(str(refused)))
        except (StoreUnavailable, KeysUnavailable) as error:
            logger.error("authorization server: %s", error)
            if path in (AUTHORIZE, CONSENT, CALLBACK):
                await _page(send, 503, error_page("The sign-in service is unavailable; try again."))
            else:
                await _json(
                    send,
                    503,
                    {
                        "error": "temporarily_unavailable",
                        "error_description": "the store is unavailable",
                    },
                )

    # --- registration ---------------------------------------------------------------------

    async def _register(self, scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        content_type = headers.get(b"content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await _json(
                send,
                400,
                _error("invalid_client_metadata", "send the registration as application/json"),
            )
            return
        body = await read_body(receive, MAX_FORM_BYTES, 10.0, headers.get(b"content-length"))
        try:
            metadata = orjson.loads(body)
        except orjson.JSONDecodeError:
            metadata = None
        if not isinstance(metadata, dict):
            await _json(
                send,
                400,
                _error("invalid_client_metadata", "the registration is not a JSON object"),
            )
            return
        try:
            client, answer = register(metadata)
        except RegistrationError as exc:
            await _json(send, 400, _error(exc.error, str(exc)))
            return
        if not await self.store.put(
            "client", client.client_id, client.to_record(), self.client_ttl
        ):
            await _json(
                send,
                503,
                _error("temporarily_unavailable", "too many clients are registered; try later"),
            )
            return
        logger.info("registered client %s (%s)", client.client_id, client.client_name)
        await _json(send, 201, answer)

    async def _client(self, client_id: str) -> Client | None:
        """The client ``client_id`` names; None when unknown. Raises RegistrationError
        for a metadata document that cannot be used."""
        if is_document_client_id(client_id):
            return await self.documents.get(client_id)
        record = await self.store.get("client", client_id)
        return None if record is None else Client.from_record(record)

    # --- authorization --------------------------------------------------------------------

    async def _authorize(self, scope: Mapping[str, Any], send: Send) -> None:
        params = _query(scope)
        client_id = params.get("client_id")
        if not client_id:
            raise _Refused("The request names no client (client_id).")
        try:
            client = await self._client(client_id)
        except RegistrationError as exc:
            raise _Refused(f"The client {client_id[:200]!r} cannot be used: {exc}") from None
        if client is None:
            raise _Refused(
                f"The client {client_id[:200]!r} is not registered here (or its "
                "registration expired): the application must register again."
            )
        redirect_uri = client.redirect_uri_for(params.get("redirect_uri"))
        if redirect_uri is None:
            asked = params.get("redirect_uri")
            raise _Refused(
                f"The redirect URI {asked[:200]!r} is not one this client registered."
                if asked
                else "The request names no redirect_uri and the client registered several."
            )
        state = params.get("state")
        try:
            request = self._check_authorization(params, client, redirect_uri)
        except _Redirected as refused:
            await _redirect(send, self._error_location(redirect_uri, refused, state))
            return
        browser, new_cookie = _browser(scope)
        if await self._browser_user_approved(browser, request):
            # Checked again once the user signed in (:meth:`_callback`): another user of
            # this browser may sign in upstream.
            await self._go_upstream(send, {**request, "approved": False}, browser, new_cookie)
            return
        ask = secrets.token_urlsafe(32)
        stored = await self.store.put(
            "ask", ask, {**request, "browser": browser}, self.login_ttl, client=client.client_id
        )
        if not stored:
            raise _Refused("Too many sign-ins are under way for this application; try later.", 503)
        page = consent_page(
            client_name=client.client_name,
            client_id=client.client_id,
            redirect_host=_shown_host(redirect_uri),
            scopes=request["scope"].split(),
            server_name=self.server_name,
            upstream_name=self.upstream_name,
            action=CONSENT,
            ask=ask,
        )
        await _page(send, 200, page, self._cookie(browser) if new_cookie else [])

    def _check_authorization(
        self, params: Mapping[str, str], client: Client, redirect_uri: str
    ) -> dict[str, Any]:
        """The request's checked values; :class:`_Redirected` for what the client gets
        told about at its redirect URI."""
        if params.get("response_type") != "code":
            raise _Redirected("unsupported_response_type", "only response_type=code is supported")
        challenge = params.get("code_challenge")
        if params.get("code_challenge_method") != "S256" or challenge is None:
            raise _Redirected(
                "invalid_request", "PKCE is required: send code_challenge with method S256"
            )
        if not _CHALLENGE.match(challenge):
            raise _Redirected("invalid_request", "the code_challenge is not an S256 challenge")
        resource = params.get("resource")
        if resource is not None and _canonical(resource) not in self.audiences:
            raise _Redirected(
                "invalid_target", f"this server issues tokens only for {self.resource}"
            )
        return {
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "redirect_given": "redirect_uri" in params,
            "challenge": challenge,
            "scope": self._granted_scope(params.get("scope")),
            "state": params.get("state"),
        }

    def _granted_scope(self, asked: str | None) -> str:
        supported = set(self.scopes_supported)
        if asked is None or not asked.split():
            return " ".join(sorted(self.required_scopes))
        wanted = set(asked.split()) - _IGNORED_SCOPES
        unknown = wanted - supported
        if unknown:
            raise _Redirected("invalid_scope", f"unknown scope {' '.join(sorted(unknown))[:200]}")
        return " ".join(sorted(wanted | self.required_scopes))

    def _error_location(self, redirect_uri: str, refused: _Redirected, state: str | None) -> str:
        values = {"error": refused.error, "error_description": refused.description}
        if state is not None:
            values["state"] = state
        values["iss"] = self.issuer
        return _with_query(redirect_uri, values)

    async def _consent(self, scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        origin = headers.get(b"origin")
        if origin is not None and origin != "null" and origin != self.issuer:
            raise _Refused("The approval came from another site.", 403)
        form = await _form(receive, headers)
        ask = form.get("ask", "")
        request = await self.store.take("ask", ask) if ask else None
        if request is None:
            raise _Refused("This approval page has expired or was already used.")
        browser = _cookie(headers, BROWSER_COOKIE)
        if browser is None or not hmac.compare_digest(browser, str(request["browser"])):
            raise _Refused("This approval page was shown to another browser.", 403)
        if form.get("decision") != "approve":
            refused = _Redirected("access_denied", "the user denied the request")
            location = self._error_location(request["redirect_uri"], refused, request.get("state"))
            await _redirect(send, location, status=303)
            return
        signed_in = request.get("code_record")
        if isinstance(signed_in, dict):  # asked after the upstream sign-in: its code now
            await self._remember_approval(signed_in["idp"], signed_in["sub"], request)
            await self._send_code(send, signed_in, request.get("state"), status=303)
            return
        await self._go_upstream(send, {**request, "approved": True}, browser, False, status=303)

    async def _browser_user_approved(self, browser: str, request: Mapping[str, Any]) -> bool:
        """Whether the user who last signed in with this browser allowed this client,
        redirect URI and scopes (in any browser)."""
        user = await self.store.get("browseruser", digest(browser))
        if user is None:
            return False
        return await self._user_approved(str(user["idp"]), str(user["sub"]), request)

    async def _user_approved(self, idp: str, sub: str, request: Mapping[str, Any]) -> bool:
        key = _approval_key(idp, sub, request["client_id"], request["redirect_uri"])
        approval = await self.store.get("approval", key)
        asked = set(str(request["scope"]).split())
        return approval is not None and asked <= set(approval.get("scopes", ()))

    async def _remember_approval(self, idp: str, sub: str, request: Mapping[str, Any]) -> None:
        """The user ``sub`` at ``idp`` allowed the request's client, redirect URI and
        scopes (with those allowed before), for ``consent_ttl``."""
        key = _approval_key(idp, sub, request["client_id"], request["redirect_uri"])
        before = await self.store.get("approval", key)
        scopes = set(str(request["scope"]).split())
        if before is not None:
            scopes |= set(before.get("scopes", ()))
        await self.store.put("approval", key, {"scopes": sorted(scopes)}, self.consent_ttl)

    async def _go_upstream(
        self,
        send: Send,
        request: Mapping[str, Any],
        browser: str,
        new_cookie: bool,
        status: int = 302,
    ) -> None:
        try:
            await self.upstream.ready(timeout=10.0)
        except UpstreamError as exc:
            raise _Refused(
                f"The sign-in service cannot reach the identity provider: {exc}", 503
            ) from None
        state = secrets.token_urlsafe(32)
        verifier = new_verifier()
        nonce = secrets.token_urlsafe(16)
        login = {**request, "browser": browser, "verifier": verifier, "nonce": nonce}
        login.pop("ask", None)
        if not await self.store.put(
            "login", state, login, self.login_ttl, client=request["client_id"]
        ):
            raise _Refused("Too many sign-ins are under way for this application; try later.", 503)
        location = self.upstream.authorization_url(
            redirect_uri=self.issuer + CALLBACK,
            state=state,
            challenge=challenge_of(verifier),
            nonce=nonce,
        )
        await _redirect(send, location, self._cookie(browser) if new_cookie else [], status=status)

    async def _callback(self, scope: Mapping[str, Any], send: Send) -> None:
        params = _query(scope)
        state = params.get("state")
        login = await self.store.take("login", state) if state else None
        if login is None:
            raise _Refused("This sign-in is unknown or has expired (state).")
        browser = _cookie(_headers(scope), BROWSER_COOKIE)
        if browser is None or not hmac.compare_digest(browser, str(login["browser"])):
            raise _Refused("This sign-in was started in another browser.", 403)
        issuer = params.get("iss")
        if issuer is not None and issuer != self.upstream.issuer:  # RFC 9207 (mix-up)
            raise _Refused("The sign-in answer came from another identity provider (iss).")
        redirect_uri = str(login["redirect_uri"])
        client_state = login.get("state")
        if "error" in params or "code" not in params:
            refused = _Redirected(
                "access_denied",
                f"the identity provider refused the sign-in: {params.get('error', 'no code')}"[
                    :300
                ],
            )
            await _redirect(send, self._error_location(redirect_uri, refused, client_state))
            return
        try:
            identity = await self.upstream.finish(
                code=params["code"],
                redirect_uri=self.issuer + CALLBACK,
                verifier=str(login["verifier"]),
                nonce=str(login["nonce"]),
            )
        except UpstreamError as exc:
            logger.warning("upstream login failed: %s", exc)
            refused = _Redirected("access_denied", str(exc)[:300])
            await _redirect(send, self._error_location(redirect_uri, refused, client_state))
            return
        record = {
            "client_id": login["client_id"],
            "redirect_uri": redirect_uri,
            "redirect_given": login.get("redirect_given", True),
            "challenge": login["challenge"],
            "scope": login["scope"],
            "sub": identity.subject,
            "idp": identity.issuer,
            "profile": dict(identity.claims),
            "upstream": self._sealer.seal(orjson.dumps(dict(identity.tokens)).decode()),
        }
        await self.store.put(
            "browseruser",
            digest(browser),
            {"idp": identity.issuer, "sub": identity.subject},
            self.consent_ttl,
        )
        if login.get("approved", True):  # allowed on the consent page of this very login
            await self._remember_approval(identity.issuer, identity.subject, login)
        elif not await self._user_approved(identity.issuer, identity.subject, login):
            # The consent page was skipped for another user of this browser, who allowed
            # this client: the one who signed in has not. Ask them before any code.
            await self._ask_after_sign_in(send, login, record, identity.claims)
            return
        await self._send_code(send, record, client_state)

    async def _ask_after_sign_in(
        self,
        send: Send,
        login: Mapping[str, Any],
        record: dict[str, Any],
        profile: Mapping[str, Any],
    ) -> None:
        client = await self._client(str(login["client_id"]))
        if client is None:
            raise _Refused("The application's registration expired: start again from it.")
        ask = secrets.token_urlsafe(32)
        pending = {
            "browser": login["browser"],
            "client_id": login["client_id"],
            "redirect_uri": login["redirect_uri"],
            "scope": login["scope"],
            "state": login.get("state"),
            "code_record": record,
        }
        if not await self.store.put(
            "ask", ask, pending, self.login_ttl, client=str(login["client_id"])
        ):
            raise _Refused("Too many sign-ins are under way for this application; try later.", 503)
        who = profile.get("login") or profile.get("preferred_username") or profile.get("email")
        page = consent_page(
            client_name=client.client_name,
            client_id=client.client_id,
            redirect_host=_shown_host(str(login["redirect_uri"])),
            scopes=str(login["scope"]).split(),
            server_name=self.server_name,
            upstream_name=self.upstream_name,
            action=CONSENT,
            ask=ask,
            signed_in_as=str(who or f"user {record['sub']}"),
        )
        await _page(send, 200, page)

    async def _send_code(
        self, send: Send, record: Mapping[str, Any], client_state: Any, status: int = 302
    ) -> None:
        """Store an authorization code for the signed-in ``record`` and send the browser
        back to the client with it (RFC 6749 §4.1.2, with RFC 9207 ``iss``)."""
        code = secrets.token_urlsafe(32)
        client_id = str(record["client_id"])
        if not await self.store.put(
            "code", digest(code), dict(record), self.code_ttl, client=client_id
        ):
            raise _Refused("Too many sign-ins are under way for this application; try later.", 503)
        values = {"code": code}
        if client_state is not None:
            values["state"] = str(client_state)
        values["iss"] = self.issuer
        logger.info("user %s logged in for client %s", record["sub"], client_id)
        await _redirect(send, _with_query(str(record["redirect_uri"]), values), status=status)

    def _cookie(self, browser: str) -> list[tuple[bytes, bytes]]:
        secure = "; Secure" if self._secure_cookie else ""
        value = (
            f"{BROWSER_COOKIE}={browser}; Path=/oauth/; HttpOnly; SameSite=Lax; "
            f"Max-Age={int(self.consent_ttl)}{secure}"
        )
        return [(b"set-cookie", value.encode("ascii"))]

    # --- token endpoint -------------------------------------------------------------------

    async def _token(self, scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        try:
            form = await _form(receive, headers)
            client = await self._authenticate_client(headers, form)
            jkt = await self._proof_key(scope, headers)
            grant_type = form.get("grant_type")
            resource = form.get("resource")
            if resource is not None and _canonical(resource) not in self.audiences:
                raise GrantError(
                    "invalid_target", f"this server issues tokens only for {self.resource}"
                )
            if grant_type == "authorization_code":
                answer = await self._redeem(form, client, jkt)
            elif grant_type == "refresh_token":
                token = form.get("refresh_token")
                if not token:
                    raise GrantError("invalid_request", "send the refresh_token")
                answer = await self.grants.refresh(
                    token, client_id=client.client_id, scope=form.get("scope"), jkt=jkt
                )
            else:
                raise GrantError(
                    "unsupported_grant_type",
                    "grant_type must be authorization_code or refresh_token",
                )
        except GrantError as refused:
            extra = self._nonce_header()
            if refused.status == 401:
                extra.append((b"www-authenticate", b'Basic realm="token"'))
            await _json(send, refused.status, _error(refused.error, refused.description), extra)
            return
        await _json(send, 200, answer, self._nonce_header())

    def _nonce_header(self) -> list[tuple[bytes, bytes]]:
        """The ``DPoP-Nonce`` header of a token endpoint answer, when nonces are
        required (RFC 9449 §8: the client uses it in its next proof)."""
        nonce = self.token_dpop.nonce()
        if nonce is None:
            return []
        return [
            (b"dpop-nonce", nonce.encode("ascii")),
            (b"access-control-expose-headers", b"dpop-nonce"),
        ]

    async def _redeem(
        self, form: Mapping[str, str], client: Client, jkt: str | None
    ) -> dict[str, Any]:
        code = form.get("code")
        if not code:
            raise GrantError("invalid_request", "send the code")
        key = digest(code)
        record = await self.store.take("code", key)
        if record is None:
            spent = await self.store.get("spentcode", key)
            if spent is not None:  # RFC 6749 §4.1.2: a code used twice revokes its tokens
                await self.grants.end_family(str(spent["fam"]))
                raise GrantError(
                    "invalid_grant", "the code was already used: its tokens are revoked"
                )
            raise GrantError("invalid_grant", "the code is unknown or expired")
        if record["client_id"] != client.client_id:
            raise GrantError("invalid_grant", "the code was issued to another client")
        given = form.get("redirect_uri")
        if given is None and record.get("redirect_given"):
            raise GrantError("invalid_grant", "send the redirect_uri of the authorization request")
        if given is not None and given != record["redirect_uri"]:
            raise GrantError("invalid_grant", "the redirect_uri is not the authorization request's")
        verifier = form.get("code_verifier")
        if verifier is None or not _VERIFIER.match(verifier):
            raise GrantError("invalid_grant", "send the PKCE code_verifier (43 to 128 characters)")
        if not hmac.compare_digest(challenge_of(verifier), str(record["challenge"])):
            raise GrantError("invalid_grant", "the code_verifier does not match the code_challenge")
        answer = await self.grants.start_family({**record, "jkt": jkt})
        family_id = str(answer["refresh_token"]).partition(".")[0]
        await self.store.put("spentcode", key, {"fam": family_id}, self.code_ttl)
        return answer

    async def _authenticate_client(
        self, headers: Mapping[bytes, str], form: Mapping[str, str]
    ) -> Client:
        basic = headers.get(b"authorization")
        secret: str | None = None
        client_id = form.get("client_id")
        if basic is not None:
            scheme, _, value = basic.partition(" ")
            if scheme.lower() != "basic":
                raise GrantError("invalid_client", "client authentication must be Basic", 401)
            try:
                pair = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            except (ValueError, UnicodeError):
                raise GrantError(
                    "invalid_client", "the Basic credentials are malformed", 401
                ) from None
            named, _, given = pair.partition(":")
            named, given = unquote(named), unquote(given)
            if client_id is not None and client_id != named:
                raise GrantError("invalid_request", "two different client ids were sent")
            client_id, secret = named, given
        elif "client_secret" in form:
            secret = form["client_secret"]
        if not client_id:
            raise GrantError("invalid_client", "the request names no client", 401)
        try:
            client = await self._client(client_id)
        except RegistrationError as exc:
            raise GrantError("invalid_client", str(exc)[:300], 401) from None
        if client is None:
            raise GrantError("invalid_client", "the client is unknown (register again)", 401)
        if client.auth_method == "none":
            if secret:
                raise GrantError("invalid_client", "this public client has no secret", 401)
        elif secret is None or not client.secret_matches(secret):
            raise GrantError("invalid_client", "the client secret is wrong or missing", 401)
        return client

    async def _proof_key(
        self, scope: Mapping[str, Any], headers: Mapping[bytes, str]
    ) -> str | None:
        proof = headers.get(b"dpop")
        if proof is None:
            return None
        try:
            return await self.token_dpop.check(
                proof, method="POST", url=self.issuer + TOKEN, replay=self._token_replay
            )
        except DpopError as exc:  # invalid_dpop_proof, or use_dpop_nonce
            raise GrantError(exc.error, str(exc)) from None

    async def _revoke(self, scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        try:
            form = await _form(receive, headers)
            client = await self._authenticate_client(headers, form)
        except GrantError as refused:
            await _json(send, refused.status, _error(refused.error, refused.description))
            return
        token = form.get("token")
        if token:
            await self.grants.revoke(token, client_id=client.client_id)
        await respond(send, 200, b"", [*_NO_STORE, *_CORS])

    # --- for the application --------------------------------------------------------------

    async def upstream_tokens(self, auth: AuthInfo) -> dict[str, Any] | None:
        """The upstream tokens of the login ``auth`` (a request's ``ctx.auth``) belongs to,
        for the application to call the provider's API as the user: ``access_token``,
        ``token_type``, ``scope``, ``refresh_token`` and ``expires_at`` (seconds since the
        epoch) as the provider gave them. An access token within
        :data:`UPSTREAM_REFRESH_MARGIN` seconds of expiring is refreshed at the provider
        first (once, however many callers ask at that moment) and the new tokens kept for
        the login. None when the login ended, no tokens are kept, or the token expired
        and the provider would not refresh it (the user must log in again). Never send
        them to the MCP client. Cancellation: a refresh under way is abandoned; the
        tokens kept stay as they were."""
        family_id = auth.claims.get("fam")
        if not isinstance(family_id, str):
            return None
        tokens = await self._kept_upstream_tokens(family_id)
        if tokens is None or not _expiring(tokens, UPSTREAM_REFRESH_MARGIN):
            return tokens
        running = self._upstream_refreshes.get(family_id)
        if running is not None:  # another caller refreshes them: take what it keeps
            await running.wait()
            return await self._kept_upstream_tokens(family_id)
        done = self._upstream_refreshes[family_id] = trio.Event()
        try:
            return await self._refresh_upstream(family_id, tokens)
        finally:
            del self._upstream_refreshes[family_id]
            done.set()

    async def _kept_upstream_tokens(self, family_id: str) -> dict[str, Any] | None:
        sealed = await self.grants.upstream_tokens(family_id)
        if sealed is None:
            return None
        opened = self._sealer.open(sealed)
        if opened is None:
            logger.warning(
                "the upstream tokens of a login were sealed with another secret "
                "(TRIMCP_AUTHSERVER_SECRET changed?): the user must log in again"
            )
            return None
        value = orjson.loads(opened)
        return value if isinstance(value, dict) else None

    async def _refresh_upstream(
        self, family_id: str, tokens: dict[str, Any]
    ) -> dict[str, Any] | None:
        refresh_token = tokens.get("refresh_token")
        usable = None if _expiring(tokens, 0.0) else tokens
        if not isinstance(refresh_token, str):
            return usable
        try:
            fresh = await self.upstream.refresh(refresh_token)
        except UpstreamError as exc:
            # A replica that refreshed them a moment ago (its refresh token rotated) has
            # kept the new ones: those serve.
            latest = await self._kept_upstream_tokens(family_id)
            if latest is not None and latest.get("access_token") != tokens.get("access_token"):
                return latest
            logger.warning("the upstream tokens of a login could not be refreshed: %s", exc)
            return usable
        sealed = self._sealer.seal(orjson.dumps(fresh).decode())
        if not await self.grants.keep_upstream_tokens(family_id, sealed):
            return None  # the login ended meanwhile
        return fresh


def _expiring(tokens: Mapping[str, Any], margin: float) -> bool:
    expires_at = tokens.get("expires_at")
    if not isinstance(expires_at, int | float) or isinstance(expires_at, bool):
        return False  # no lifetime said: valid until the provider refuses it
    return float(expires_at) - margin <= time.time()


# --- small HTTP helpers -------------------------------------------------------------------


def _only(method: str, allowed: str) -> None:
    if method != allowed:
        raise HttpRejection(
            405, "Method not allowed", headers=[(b"allow", f"{allowed}, OPTIONS".encode())]
        )


async def _preflight(send: Send) -> None:
    await respond(
        send,
        204,
        headers=[
            *_CORS,
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
            (
                b"access-control-allow-headers",
                b"authorization, content-type, dpop, mcp-protocol-version",
            ),
            (b"access-control-max-age", b"600"),
        ],
    )


def _headers(scope: Mapping[str, Any]) -> dict[bytes, str]:
    out: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        key = name.lower()
        if key in out and key in (b"authorization", b"dpop", b"content-type", b"origin"):
            raise HttpRejection(400, f"Repeated {key.decode('latin-1')} header")
        text = value.decode("latin-1").strip()
        out[key] = f"{out[key]}; {text}" if key == b"cookie" and key in out else text
    return out


def _params(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:  # RFC 6749 §3.1: a parameter sent twice is refused
            raise _Refused(f"The parameter {name[:40]!r} is repeated.")
        if len(value) > MAX_PARAM_CHARS:
            raise _Refused(f"The parameter {name[:40]!r} is too long.")
        out[name] = value
    return out


def _query(scope: Mapping[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    try:
        pairs = parse_qsl(raw, keep_blank_values=False, strict_parsing=False, max_num_fields=64)
    except ValueError:
        raise _Refused("The request has too many parameters.") from None
    return _params(pairs)


async def _form(receive: Receive, headers: Mapping[bytes, str]) -> dict[str, str]:
    content_type = headers.get(b"content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise GrantError("invalid_request", "send the request as application/x-www-form-urlencoded")
    body = await read_body(receive, MAX_FORM_BYTES, 10.0, headers.get(b"content-length"))
    try:
        pairs = parse_qsl(body.decode("utf-8"), max_num_fields=64)
        return _params(pairs)
    except (ValueError, UnicodeError, _Refused) as exc:
        raise GrantError("invalid_request", f"the form is malformed: {exc}") from None


def _cookie(headers: Mapping[bytes, str], name: str) -> str | None:
    for item in headers.get(b"cookie", "").split(";"):
        key, _, value = item.strip().partition("=")
        if key == name and _COOKIE_VALUE.match(value):
            return value
    return None


def _browser(scope: Mapping[str, Any]) -> tuple[str, bool]:
    """This browser's id (from its cookie) and whether it is new (to be set)."""
    known = _cookie(_headers(scope), BROWSER_COOKIE)
    return (known, False) if known is not None else (secrets.token_urlsafe(32), True)


def _approval_key(idp: str, sub: str, client_id: str, redirect_uri: str) -> str:
    return digest(f"{idp}\x00{sub}\x00{client_id}\x00{redirect_uri}")


def _shown_host(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.netloc or f"{parts.scheme}:{parts.path}"[:200]


def _canonical(resource: str) -> str:
    try:
        return canonical_resource(resource)
    except ValueError:
        return resource


def _with_query(uri: str, values: Mapping[str, str]) -> str:
    joiner = "&" if urlsplit(uri).query else "?"
    return f"{uri}{joiner}{urlencode(values)}"


def _error(error: str, description: str) -> dict[str, str]:
    return {"error": error, "error_description": description}


async def _json(
    send: Send, status: int, value: Mapping[str, Any], extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    await respond(
        send,
        status,
        orjson.dumps(value),
        [*_NO_STORE, *_CORS, *extra],
        content_type=b"application/json",
    )


async def _page(
    send: Send, status: int, body: bytes, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    await respond(send, status, body, [*PAGE_HEADERS, *extra])


async def _redirect(
    send: Send, location: str, extra: Iterable[tuple[bytes, bytes]] = (), status: int = 302
) -> None:
    await respond(
        send,
        status,
        b"",
        [
            (b"location", location.encode("utf-8")),
            (b"cache-control", b"no-store"),
            (b"referrer-policy", b"no-referrer"),
            *extra,
        ],
    )
