"""Logging in from a client: :class:`OAuthClient` (authorization code + PKCE, refresh,
step-up) for trimcp's HTTP client transport.

Give one to ``connect_http(url, auth=...)``. While the server answers without asking for
authorization, nothing happens. On a 401 the client discovers the authorization server
(:mod:`trimcp.auth.discovery`), registers (a pre-registered ``client_id``; else a Client ID
Metadata Document URL when the server supports them; else dynamic registration), sends the
user to the authorization endpoint through its :class:`~trimcp.auth.interaction.
Interaction` (PKCE S256, ``state``, ``resource``; the answer's ``state`` and RFC 9207
``iss`` are checked), exchanges the code and retries the request. An expired token is
refreshed first; a 401 with a refresh token tries a refresh before a new login; a 403
``insufficient_scope`` asks again with the scopes the server names (at most
``max_step_ups`` times in a row). Tokens and the registration live in a
:class:`~trimcp.auth.tokens.TokenStore`, each with the issuer it belongs to: a refresh
token goes only to the issuer that issued it, a client secret only to the issuer the
client is registered at (:mod:`trimcp.auth.destinations`); when the MCP server names
another authorization server, the client registers and logs in there afresh.

One flow at a time per connection: requests that meet a 401 while a refresh or login is
under way wait for it (bounded by ``flow_timeout``), and the flow runs in a task of the
transport, so a caller that gives up does not cancel it for the others.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
import trio

from trimcp.auth.destinations import (
    SETTING,
    home_of_client,
    home_of_tokens,
    issuer_identifier,
    same_issuer,
)
from trimcp.auth.discovery import Challenge, Discovery, discover, parse_challenge
from trimcp.auth.dpop import DpopKey, DpopProofs
from trimcp.auth.errors import AuthError, AuthorizationFailed, AuthorizationServerChanged
from trimcp.auth.fetch import Fetcher, FetchError, is_public_host
from trimcp.auth.grants import PrivateKey, authenticate_client, token_request
from trimcp.auth.interaction import Interaction, same_endpoint
from trimcp.auth.pkce import challenge_of, new_state, new_verifier
from trimcp.auth.tokens import (
    ClientRegistration,
    MemoryTokenStore,
    StoredAuth,
    TokenSet,
    TokenStore,
)

logger = logging.getLogger("trimcp.auth")

#: ``spawn(fn, *args)`` starts a task that outlives the request that needed it.
Spawn = Callable[..., Any]


class OAuthClient:
    """How a client obtains tokens for protected MCP servers (see the module docstring).

    ``interaction``: the user's step (:class:`~trimcp.auth.interaction.LoopbackBrowser`
    for a person). ``store``: tokens and registrations (default: in memory).
    Registration: ``client_id`` (+ ``client_secret``, ``token_endpoint_auth_method``) when
    pre-registered; ``client_metadata_url``: an https URL serving this client's metadata
    document (used as its ``client_id`` where supported); else dynamic registration
    with ``client_name``, ``application_type`` (``"native"`` or ``"web"``) and
    ``client_uri``. ``authorization_server``: the issuer a pre-registered ``client_id``
    is registered at: it (with its secret or key) is used there only. Without it, the
    pre-registered client belongs to the issuer it first logged in at for an MCP server
    (as the ``store`` keeps it); elsewhere it is refused with
    :class:`~trimcp.auth.errors.UntrustedAuthorizationServer` before anything is sent.
    ValueError when it is not an issuer identifier (http(s), a host, no query or
    fragment). ``scopes``: asked for when neither the server's challenge nor its
    metadata say which. ``allow_private_addresses``: metadata and endpoints may be on
    private/loopback addresses (allowed anyway when the MCP server itself is).
    ``timeout`` bounds each HTTP exchange; ``flow_timeout`` a whole login.
    ``dpop``: ask for DPoP-bound tokens (RFC 9449; see docs/authorization.md): None (the
    default) when the MCP server asks for DPoP (a ``DPoP`` challenge, or metadata saying
    it requires bound tokens) and the authorization server supports it; True always;
    False never. ``dpop_algorithm``: the key made for it (kept in ``store``).
    """

    def __init__(
        self,
        *,
        interaction: Interaction | None = None,
        store: TokenStore | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        private_key: PrivateKey | None = None,
        authorization_server: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "trimcp",
        client_uri: str | None = None,
        application_type: str = "native",
        scopes: Sequence[str] | None = None,
        allow_private_addresses: bool = False,
        timeout: float = 30.0,
        flow_timeout: float = 600.0,
        max_step_ups: int = 2,
        dpop: bool | None = None,
        dpop_algorithm: str = "ES256",
    ) -> None:
        if authorization_server is not None and issuer_identifier(authorization_server) is None:
            raise ValueError(
                f"authorization_server={authorization_server[:200]!r} is not an issuer "
                "identifier: give the authorization server's issuer URL, e.g. "
                "'https://accounts.example.com' (http(s), a host, no query or fragment)"
            )
        self.authorization_server = authorization_server
        self.interaction = interaction
        self.dpop = dpop
        self.dpop_algorithm = dpop_algorithm
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.private_key = private_key
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.client_uri = client_uri
        self.application_type = application_type
        self.scopes = tuple(scopes) if scopes is not None else None
        self.allow_private_addresses = allow_private_addresses
        self.timeout = timeout
        self.flow_timeout = flow_timeout
        self.max_step_ups = max_step_ups

    def session(self, server_url: str, spawn: Spawn) -> AuthSession:
        """The per-connection state (made by the HTTP transport)."""
        return AuthSession(self, server_url, spawn)

    # --- the steps a flow is made of (overridden by the extension grants) -------------

    def fetcher(self, server_url: str) -> Fetcher:
        host = urlsplit(server_url).hostname or ""
        return Fetcher(
            timeout=self.timeout,
            allow_private=self.allow_private_addresses or not is_public_host(host),
        )

    async def obtain(
        self, fetcher: Fetcher, found: Discovery, scope: str | None, stored: StoredAuth | None
    ) -> StoredAuth:
        """New tokens for ``found`` (a full login). Raises :class:`AuthorizationFailed`."""
        interaction = self.interaction
        if interaction is None:
            raise AuthorizationFailed(
                f"{found.resource} needs you to log in at {found.issuer}, but this client "
                "has no way to ask (give OAuthClient an interaction, e.g. LoopbackBrowser())"
            )
        found = await self.home_of_registered_client(fetcher, found, stored)
        registration = await self.register(fetcher, found, stored, interaction.redirect_uri)
        tokens = await self.authorization_code(fetcher, found, registration, scope, interaction)
        return StoredAuth(tokens=tokens, registration=registration)

    async def home_of_registered_client(
        self, fetcher: Fetcher, found: Discovery, stored: StoredAuth | None
    ) -> Discovery:
        """``found`` narrowed to the issuer a pre-registered ``client_id`` belongs to:
        ``authorization_server``, else the one the stored registration of that client
        names; ``found`` itself without a pre-registered client or on its first login.
        Raises :class:`~trimcp.auth.errors.UntrustedAuthorizationServer` when the MCP
        server does not list that issuer."""
        if self.client_id is None:
            return found
        owner = type(self).__name__
        if self.authorization_server is not None:
            home = self.authorization_server
            why = f"{owner} is set with {SETTING}={home!r}"
        else:
            before = stored.registration if stored is not None else None
            if before is None or before.client_id != self.client_id or before.issuer is None:
                return found
            home = before.issuer
            why = f"where this client logged in for {found.resource} before, as the store says"
        credential = (
            "its private key"
            if self.private_key is not None
            else "its client secret"
            if self.client_secret is not None
            else "its client_id"
        )
        return await home_of_client(
            fetcher,
            found,
            client_id=self.client_id,
            home=home,
            why=why,
            credential=credential,
            owner=owner,
        )

    async def register(
        self,
        fetcher: Fetcher,
        found: Discovery,
        stored: StoredAuth | None,
        redirect_uri: str,
    ) -> ClientRegistration:
        """Pre-registered credentials, a stored registration, CIMD, or DCR, in that order."""
        if self.client_id is not None:
            method = self.token_endpoint_auth_method or (
                "private_key_jwt"
                if self.private_key is not None
                else "client_secret_basic"
                if self.client_secret is not None
                else "none"
            )
            return ClientRegistration(
                client_id=self.client_id,
                client_secret=self.client_secret,
                token_endpoint_auth_method=method,
                issuer=found.issuer,
            )
        if (
            stored is not None
            and stored.registration is not None
            and same_issuer(stored.registration.issuer, found.issuer)
        ):
            return stored.registration
        if (
            self.client_metadata_url is not None
            and found.metadata.get("client_id_metadata_document_supported") is True
        ):
            return ClientRegistration(
                client_id=self.client_metadata_url,
                issuer=found.issuer,
                token_endpoint_auth_method="none",
            )
        endpoint = found.endpoint("registration_endpoint")
        if endpoint is None:
            raise AuthorizationFailed(
                f"{found.issuer} offers no dynamic client registration and this client "
                "has no client_id for it: register one there and pass client_id="
            )
        return await self._dynamic_registration(fetcher, found, endpoint, redirect_uri)

    async def _dynamic_registration(
        self, fetcher: Fetcher, found: Discovery, endpoint: str, redirect_uri: str
    ) -> ClientRegistration:
        supported = found.metadata.get("token_endpoint_auth_methods_supported")
        method = "none"
        if isinstance(supported, list) and "none" not in supported:
            for candidate in ("client_secret_basic", "client_secret_post"):
                if candidate in supported:
                    method = candidate
                    break
        grant_types = ["authorization_code", "refresh_token"]
        request: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.application_type,
        }
        if self.client_uri is not None:
            request["client_uri"] = self.client_uri
        scopes = found.metadata.get("scopes_supported")
        if self.scopes:
            request["scope"] = " ".join(self.scopes)
        elif isinstance(scopes, list) and all(isinstance(s, str) for s in scopes):
            request["scope"] = " ".join(scopes)
        try:
            response = await fetcher.post_json(endpoint, request)
            answer = response.json_object("the registration answer")
        except FetchError as exc:
            raise AuthorizationFailed(f"dynamic client registration at {endpoint}: {exc}") from None
        client_id = answer.get("client_id")
        if response.status not in (200, 201) or not isinstance(client_id, str):
            raise AuthorizationFailed(
                f"dynamic client registration at {endpoint} failed (HTTP {response.status}: "
                f"{str(answer.get('error_description') or answer.get('error'))[:300]})"
            )
        secret = answer.get("client_secret")
        registered_method = answer.get("token_endpoint_auth_method")
        if not isinstance(registered_method, str):
            registered_method = "client_secret_basic" if isinstance(secret, str) else method
        return ClientRegistration(
            client_id=client_id,
            client_secret=secret if isinstance(secret, str) else None,
            token_endpoint_auth_method=registered_method,
            issuer=found.issuer,
        )

    async def authorization_code(
        self,
        fetcher: Fetcher,
        found: Discovery,
        registration: ClientRegistration,
        scope: str | None,
        interaction: Interaction,
    ) -> TokenSet:
        """The authorization-code flow with PKCE S256, ``state``, ``resource`` and RFC 9207."""
        authorize = found.endpoint("authorization_endpoint")
        token_endpoint = found.endpoint("token_endpoint")
        if authorize is None or token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no authorization/token endpoint")
        methods = found.metadata.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise AuthorizationFailed(
                f"{found.issuer} does not support PKCE with S256; refusing to authorize"
            )
        fetcher.endpoint(authorize)  # the SSRF rules apply to what the user is sent to
        verifier, state = new_verifier(), new_state()
        redirect_uri = interaction.redirect_uri
        params = {
            "response_type": "code",
            "client_id": registration.client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge_of(verifier),
            "code_challenge_method": "S256",
            "state": state,
            "resource": found.resource,
        }
        if scope:
            params["scope"] = scope
        separator = "&" if urlsplit(authorize).query else "?"
        callback = await interaction.authorize(f"{authorize}{separator}{urlencode(params)}")
        code = check_callback(callback, redirect_uri, state, found)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": found.resource,
        }
        headers = authenticate_client(
            form, registration, assertion_audience=found.issuer, private_key=self.private_key
        )
        return await token_request(fetcher, token_endpoint, form, headers, issuer=found.issuer)

    async def refresh(self, fetcher: Fetcher, found: Discovery, stored: StoredAuth) -> StoredAuth:
        """New tokens from the refresh token, asked of the issuer that issued it only (at
        the token endpoint of its own metadata). Raises :class:`AuthorizationFailed`;
        :class:`~trimcp.auth.errors.AuthorizationServerChanged`, before anything is sent,
        when the MCP server no longer lists that issuer."""
        tokens, registration = stored.tokens, stored.registration
        if tokens is None or tokens.refresh_token is None or registration is None:
            raise AuthorizationFailed("no refresh token")
        found = await home_of_tokens(fetcher, found, stored)
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": found.resource,
        }
        headers = authenticate_client(
            form, registration, assertion_audience=found.issuer, private_key=self.private_key
        )
        new = await token_request(
            fetcher, token_endpoint, form, headers, previous=tokens, issuer=found.issuer
        )
        return attrs.evolve(stored, tokens=new)

    def wants_dpop(self, found: Discovery, challenge: Challenge) -> bool:
        """Whether this flow's tokens are to be DPoP-bound (see ``dpop``)."""
        if self.dpop is not None:
            return self.dpop
        resource = found.resource_metadata or {}
        asked = challenge.dpop or resource.get("dpop_bound_access_tokens_required") is True
        supported = found.metadata.get("dpop_signing_alg_values_supported")
        return asked and isinstance(supported, list) and self.dpop_algorithm in supported

    def choose_scope(self, found: Discovery, challenge: Challenge) -> str | None:
        """The spec's order: the challenge's ``scope``, else the resource's
        ``scopes_supported``, else this client's ``scopes``, else none."""
        scopes: list[str] | None = None
        if challenge.scope:
            scopes = challenge.scope.split()
        elif found.resource_metadata is not None and isinstance(
            found.resource_metadata.get("scopes_supported"), list
        ):
            scopes = [s for s in found.resource_metadata["scopes_supported"] if isinstance(s, str)]
        elif self.scopes:
            scopes = list(self.scopes)
        if not scopes:
            return None
        supported = found.metadata.get("scopes_supported")
        if (
            isinstance(supported, list)
            and "offline_access" in supported
            and "offline_access" not in scopes
        ):
            scopes.append("offline_access")  # ask for a refresh token where offered
        return " ".join(scopes)


def check_callback(callback: str, redirect_uri: str, state: str, found: Discovery) -> str:
    """The ``code`` of the redirect back, after every check; else AuthorizationFailed."""
    if not same_endpoint(callback, redirect_uri):
        raise AuthorizationFailed(
            f"the authorization came back to {callback[:200]!r}, not to {redirect_uri}: refused"
        )
    query = parse_qs(urlsplit(callback).query)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    if one("state") != state:
        raise AuthorizationFailed("the authorization answer's state does not match: refused")
    issuer = one("iss")
    if issuer is not None and issuer != found.issuer:
        raise AuthorizationFailed(
            f"the authorization answer comes from issuer {issuer[:200]!r}, not "
            f"{found.issuer!r} (RFC 9207): refused"
        )
    if issuer is None and found.metadata.get("authorization_response_iss_parameter_supported"):
        raise AuthorizationFailed(
            f"{found.issuer} promises an iss parameter (RFC 9207) but the answer has none"
        )
    error = one("error")
    if error is not None:
        description = one("error_description") or ""
        reason = f"{error} ({description})" if description else error
        raise AuthorizationFailed(
            f"the authorization server {found.issuer} refused the login: {reason}"
        )
    code = one("code")
    if not code:
        raise AuthorizationFailed("the authorization answer holds no code")
    return code


class AuthSession:
    """One connection's authorization state: the current token and the one flow allowed
    at a time (see :class:`OAuthClient`)."""

    def __init__(self, client: OAuthClient, server_url: str, spawn: Spawn) -> None:
        self.client = client
        self.server_url = server_url
        self._spawn = spawn
        self._key: str | None = None
        self._found: Discovery | None = None
        self._stored: StoredAuth | None = None
        self._loaded = False
        self._flight: trio.Event | None = None
        self._error: AuthError | None = None
        self._step_ups = 0
        #: The scopes the last login asked for (to tell a refusal from a scope to add).
        self._asked: frozenset[str] = frozenset()
        #: The DPoP key's proofs, while the tokens are DPoP-bound (None: Bearer).
        self.dpop: DpopProofs | None = None
        self._new_nonce = False
        #: Logins and refreshes done (for tests and statistics).
        self.logins = 0
        self.refreshes = 0

    @property
    def access_token(self) -> str | None:
        tokens = self._stored.tokens if self._stored is not None else None
        return tokens.access_token if tokens is not None else None

    async def authorization(self) -> str | None:
        """The ``Authorization`` value for the next request (refreshing an expired token
        first, when a refresh token exists). None before any 401."""
        if not self._loaded:
            self._loaded = True
            stored = await self.client.store.load(self.server_url)
            if stored is not None:
                self._stored = stored
                self._bind(stored)
        stored = self._stored
        if stored is None or stored.tokens is None:
            return None
        if stored.tokens.expired() and stored.tokens.refresh_token and self._flight is None:
            try:
                await self._run_once("refresh", Challenge(), stored.tokens.access_token)
            except AuthError as exc:
                logger.info("refreshing an expired token failed: %s", exc)
        token = self.access_token
        if token is None:
            return None
        tokens = self._stored.tokens if self._stored is not None else None
        if self.dpop is not None and tokens is not None and tokens.token_type == "DPoP":
            return f"DPoP {token}"
        return f"Bearer {token}"

    def proof_headers(self, method: str, url: str, authorization: str | None) -> dict[str, str]:
        """The ``DPoP`` header for a request carrying ``authorization`` (empty unless it
        is a DPoP token): a fresh proof for ``method`` and ``url`` each call."""
        if self.dpop is None or authorization is None or not authorization.startswith("DPoP "):
            return {}
        return self.dpop.headers(method, url, authorization[len("DPoP ") :])

    def _bind(self, stored: StoredAuth) -> None:
        """Load the stored DPoP key (a new or changed one only)."""
        if stored.dpop_key is None:
            self.dpop = None
        elif self.dpop is None or self.dpop.key.pem != stored.dpop_key:
            self.dpop = DpopProofs(DpopKey(stored.dpop_key, stored.dpop_algorithm))

    def remember_dpop_nonce(self, nonce: str) -> None:
        """A response carried ``DPoP-Nonce``: proofs to this server use it from now on
        (the transport calls this before :meth:`challenge`)."""
        if self.dpop is not None:
            self._new_nonce = self.dpop.remember_nonce(self.server_url, nonce)

    async def challenge(self, status: int, www_authenticate: str | None, used: str | None) -> None:
        """A request got 401/403: make a better token, or raise :class:`AuthError`.

        ``used`` is the ``Authorization`` value the request carried (if another task
        already replaced that token, nothing more is done). A ``use_dpop_nonce`` refusal
        needs no new token, only the nonce the response carried (see
        :meth:`remember_dpop_nonce`): the request is sent again with a new proof.
        Cancellation: the caller stops waiting; the flow goes on for the others.
        """
        challenge = parse_challenge(www_authenticate)
        new_nonce, self._new_nonce = self._new_nonce, False
        if status == 401 and challenge.error == "use_dpop_nonce" and self.dpop is not None:
            if new_nonce:
                return
            raise AuthorizationFailed(
                "the server asks for a DPoP nonce but gave none it had not given already"
            )
        if status == 403:
            if challenge.error != "insufficient_scope":
                raise AuthorizationFailed(
                    f"the server refused access (HTTP 403 {challenge.error or ''})".strip()
                )
            kind = "step-up"
        else:
            kind = "401"
        current = self.access_token
        used_token = used.partition(" ")[2] if used and " " in used else None
        if current is not None and used_token != current and kind == "401":
            return  # another request already got a new token
        await self._run_once(kind, challenge, used_token)

    async def _run_once(self, kind: str, challenge: Challenge, used: str | None) -> None:
        if self._flight is None:
            done = self._flight = trio.Event()
            self._error = None
            self._spawn(self._fly, kind, challenge, used, done)
        flight = self._flight
        with trio.move_on_after(self.client.flow_timeout + 5):
            await flight.wait()
        if not flight.is_set():
            raise AuthorizationFailed(
                f"authorization did not finish within {self.client.flow_timeout:g} s"
            )
        if self._error is not None:
            raise self._error

    async def _fly(
        self, kind: str, challenge: Challenge, used: str | None, done: trio.Event
    ) -> None:
        fetcher = self.client.fetcher(self.server_url)
        try:
            with trio.fail_after(self.client.flow_timeout):
                await self._flow(fetcher, kind, challenge)
        except trio.TooSlowError:
            self._error = AuthorizationFailed(
                f"authorization did not finish within {self.client.flow_timeout:g} s"
            )
        except AuthError as exc:
            self._error = exc
        finally:
            self._flight = None
            done.set()
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await fetcher.aclose()

    async def _flow(self, fetcher: Fetcher, kind: str, challenge: Challenge) -> None:
        client = self.client
        found = self._found
        if found is None or challenge.resource_metadata is not None:
            found = self._found = await discover(fetcher, self.server_url, challenge)
        stored = self._stored
        if client.wants_dpop(found, challenge) or (stored is not None and stored.dpop_key):
            stored = self._stored = await self._with_key(stored)
            fetcher.dpop = self.dpop
        if kind == "step-up":
            missing = not_granted(challenge, self._asked, stored)
            if missing:  # asked for already and refused: another login would be the same
                given = stored.tokens.scope if stored and stored.tokens else None
                raise AuthorizationFailed(
                    f"the authorization server {found.issuer} did not grant the scope "
                    f"{' '.join(missing)} that {self.server_url} requires (asked for at the "
                    f"login; granted: {given or 'none'}): it must allow that scope for this "
                    "user and client (ask its administrator), or the MCP server require less"
                )
            self._step_ups += 1
            if self._step_ups > client.max_step_ups:
                raise AuthorizationFailed(
                    f"the server still refuses for insufficient scope after "
                    f"{client.max_step_ups} new authorizations: giving up"
                )
        if (
            kind in ("refresh", "401")
            and stored is not None
            and stored.tokens is not None
            and stored.tokens.refresh_token
        ):
            try:
                self._stored = await client.refresh(fetcher, found, stored)
                self.refreshes += 1
                await client.store.save(self.server_url, self._stored)
                return
            except AuthorizationServerChanged as exc:
                if kind == "refresh":
                    raise
                logger.warning("%s; getting new tokens instead", exc)
            except AuthorizationFailed as exc:
                if kind == "refresh":
                    raise
                logger.info("refresh failed (%s); logging in again", exc)
        elif kind == "refresh":
            raise AuthorizationFailed("no refresh token")
        scope = client.choose_scope(found, challenge)
        if kind == "step-up" and stored is not None and stored.tokens is not None:
            granted = (stored.tokens.scope or "").split()
            wanted = (scope or "").split()
            scope = " ".join(dict.fromkeys([*granted, *wanted])) or None
        obtained = await client.obtain(fetcher, found, scope, stored)
        if stored is not None and stored.dpop_key is not None:
            obtained = attrs.evolve(
                obtained, dpop_key=stored.dpop_key, dpop_algorithm=stored.dpop_algorithm
            )
        self._stored = obtained
        self._asked = frozenset((scope or "").split())
        self.logins += 1
        await client.store.save(self.server_url, self._stored)

    async def _with_key(self, stored: StoredAuth | None) -> StoredAuth:
        """``stored`` with a DPoP key (made and saved on first use): one per client and
        protected resource, so tokens bound to it stay usable after a restart."""
        if stored is None or stored.dpop_key is None:
            key = await trio.to_thread.run_sync(DpopKey.generate, self.client.dpop_algorithm)
            stored = attrs.evolve(
                stored or StoredAuth(), dpop_key=key.pem, dpop_algorithm=key.algorithm
            )
            await self.client.store.save(self.server_url, stored)
        self._bind(stored)
        return stored


def not_granted(
    challenge: Challenge, asked: frozenset[str], stored: StoredAuth | None
) -> list[str]:
    """The scopes a ``403 insufficient_scope`` names that the last login asked for and the
    authorization server did not grant, by the ``scope`` its token answer reported (none
    when it reported nothing: then a step-up may still help)."""
    granted = stored.tokens.scope if stored is not None and stored.tokens is not None else None
    if granted is None:
        return []
    have = set(granted.split())
    return [s for s in (challenge.scope or "").split() if s in asked and s not in have]


Obtain = Callable[[Fetcher, Discovery, str | None, StoredAuth | None], Awaitable[StoredAuth]]
