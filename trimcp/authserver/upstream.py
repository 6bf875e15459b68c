"""The identity provider users log in at: :class:`Upstream`, and the login it runs.

Two shapes. An OpenID Connect provider is found by its issuer URL (discovery); its ID
token is checked (signature by its published keys, ``iss``, ``aud`` = our client id,
``exp``, and the ``nonce`` this login sent) and its ``sub`` is the user. A plain OAuth 2
provider (GitHub's shape: no discovery, opaque tokens, JSON only when asked with
``Accept: application/json``, errors in a 200 answer) is given by its endpoints; the user
is read from its user endpoint. :func:`github`, :func:`google` and :func:`oidc` are ready
configurations; :class:`Upstream` takes any other.

Every login uses PKCE (S256) and a ``state`` upstream too; the upstream's tokens are
returned to the authorization server, which seals them in its store and never hands them
to an MCP client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
import trio

from trimcp._record import Record
from trimcp.auth.errors import AuthError, InvalidToken
from trimcp.auth.fetch import Fetcher
from trimcp.auth.verifiers import JwtVerifier

logger = logging.getLogger("trimcp.authserver")

#: Claims of the upstream user kept in our tokens (``ctx.auth.claims``), when it gives them.
PROFILE_CLAIMS = ("login", "preferred_username", "name", "email", "email_verified")


def _strings(value: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(value)


class UpstreamError(AuthError):
    """The identity provider refused or failed a login (the message says which step)."""


@attrs.frozen(kw_only=True, repr=False)
class Upstream(Record):
    """The identity provider, as the application registered trimcp with it.

    ``client_id`` / ``client_secret``: trimcp's one registration there (its redirect URI
    is this server's ``/oauth/callback``). Either ``issuer`` (OpenID Connect discovery),
    or ``authorize_url``, ``token_url`` and ``user_url`` (plain OAuth 2). ``scopes``:
    asked upstream. ``subject_field``: the user endpoint's field naming the user
    (``id`` for GitHub: a login name can change hands, a numeric id cannot).
    ``display_name``: shown on the consent page. ``token_auth``: how trimcp authenticates
    at the token endpoint (``client_secret_post`` or ``client_secret_basic``).
    ``allow_private_addresses``: the endpoints may be on loopback or private addresses
    (they are the application's own configuration, not a client's; default True).
    ``timeout``: bound on each exchange with the provider.
    """

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    issuer: str | None = None
    authorize_url: str | None = None
    token_url: str | None = None
    user_url: str | None = None
    scopes: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    subject_field: str = "sub"
    display_name: str = "your identity provider"
    token_auth: str = "client_secret_post"
    allow_private_addresses: bool = True
    timeout: float = 10.0

    def __attrs_post_init__(self) -> None:
        if self.issuer is None and (self.authorize_url is None or self.token_url is None):
            raise ValueError(
                "an upstream needs an issuer (OpenID Connect) or authorize_url and token_url"
            )
        if self.issuer is None and self.user_url is None:
            raise ValueError("a plain OAuth 2 upstream needs user_url (who logged in)")
        if self.token_auth not in ("client_secret_post", "client_secret_basic"):
            raise ValueError("token_auth is client_secret_post or client_secret_basic")

    @property
    def is_oidc(self) -> bool:
        return self.issuer is not None


def github(client_id: str, client_secret: str, *, scopes: tuple[str, ...] = ()) -> Upstream:
    """GitHub (an OAuth App or a GitHub App's user login). Register the callback URL
    ``https://<your server>/oauth/callback`` there. The user is GitHub's numeric id;
    ``login``, ``name`` and ``email`` come along when public."""
    return Upstream(
        client_id=client_id,
        client_secret=client_secret,
        authorize_url="https://github.com/login/oauth/authorize",
        token_url="https://github.com/login/oauth/access_token",
        user_url="https://api.github.com/user",
        scopes=scopes,
        subject_field="id",
        display_name="GitHub",
        allow_private_addresses=False,
    )


def google(
    client_id: str, client_secret: str, *, scopes: tuple[str, ...] = ("openid", "email")
) -> Upstream:
    """Google (OpenID Connect; a "Web application" OAuth client with the callback URL
    ``https://<your server>/oauth/callback``)."""
    return oidc(
        "https://accounts.google.com",
        client_id,
        client_secret,
        scopes=scopes,
        display_name="Google",
        allow_private_addresses=False,
    )


def oidc(
    issuer: str,
    client_id: str,
    client_secret: str | None = None,
    *,
    scopes: tuple[str, ...] = ("openid",),
    display_name: str | None = None,
    token_auth: str = "client_secret_post",
    allow_private_addresses: bool = True,
) -> Upstream:
    """Any OpenID Connect provider (Keycloak, Entra ID, Okta, Auth0, oidc-provider...) by
    its issuer URL."""
    if "openid" not in scopes:
        scopes = ("openid", *scopes)
    return Upstream(
        client_id=client_id,
        client_secret=client_secret,
        issuer=issuer.rstrip("/"),
        scopes=scopes,
        display_name=display_name or urlsplit(issuer).hostname or issuer,
        token_auth=token_auth,
        allow_private_addresses=allow_private_addresses,
    )


@attrs.frozen(kw_only=True, repr=False)
class Identity(Record):
    """Who logged in upstream: ``issuer`` (the provider), ``subject`` (its stable user
    id), ``claims`` (profile: login, name, email...), and the upstream ``tokens`` (kept
    sealed by the authorization server; never sent to an MCP client)."""

    issuer: str
    subject: str
    claims: Mapping[str, Any] = attrs.field(factory=dict)
    tokens: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


class UpstreamLogin:
    """Runs logins at one :class:`Upstream`: builds the authorization URL, then trades
    the code for tokens and an :class:`Identity`.

    :meth:`run` (started by the authorization server) discovers an OpenID provider's
    endpoints, retrying while it is unreachable, and keeps its ID-token keys fresh.
    """

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._endpoints: dict[str, str] = {}
        if not upstream.is_oidc:
            assert upstream.authorize_url is not None
            assert upstream.token_url is not None
            assert upstream.user_url is not None
            self._endpoints = {
                "authorization_endpoint": upstream.authorize_url,
                "token_endpoint": upstream.token_url,
                "user_endpoint": upstream.user_url,
            }
        self._ready = trio.Event()
        if self._endpoints:
            self._ready.set()
        self._id_tokens: JwtVerifier | None = None
        self._problem: str | None = None

    @property
    def issuer(self) -> str:
        """The provider's identifier: its issuer, or the origin of its authorization
        endpoint (``https://github.com``)."""
        if self.upstream.issuer is not None:
            return self.upstream.issuer
        parts = urlsplit(self.upstream.authorize_url or "")
        return f"{parts.scheme}://{parts.netloc}"

    def _fetcher(self) -> Fetcher:
        return Fetcher(
            timeout=self.upstream.timeout, allow_private=self.upstream.allow_private_addresses
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Discover the provider (OpenID Connect), then keep its keys fresh. Reports
        started at once: a login that comes first waits (bounded) for discovery.
        Cancellation: stops."""
        task_status.started()
        if not self.upstream.is_oidc:
            return
        delay = 1.0
        while True:
            try:
                await self._discover()
                break
            except (AuthError, trio.TooSlowError) as exc:
                self._problem = f"the identity provider {self.issuer} is unreachable: {exc}"
                logger.warning("%s; retrying in %g s", self._problem, delay)
                await trio.sleep(delay)
                delay = min(delay * 2, 60.0)
        self._problem = None
        self._ready.set()
        assert self._id_tokens is not None
        await self._id_tokens.run()

    async def _discover(self) -> None:
        issuer = self.upstream.issuer
        assert issuer is not None
        url = f"{issuer}/.well-known/openid-configuration"
        fetcher = self._fetcher()
        try:
            with trio.fail_after(self.upstream.timeout):
                response = await fetcher.get(url)
        finally:
            await fetcher.aclose()
        if response.status != 200:
            raise UpstreamError(f"GET {url}: HTTP {response.status}")
        document = response.json_object(url)
        if document.get("issuer") != issuer:  # OpenID Connect Discovery §4.3 (mix-up)
            raise UpstreamError(f"{url} names another issuer: {str(document.get('issuer'))[:200]}")
        endpoints = {}
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = document.get(name)
            if not isinstance(value, str):
                raise UpstreamError(f"{url} has no {name}")
            endpoints[name] = value
        userinfo = document.get("userinfo_endpoint")
        if isinstance(userinfo, str):
            endpoints["user_endpoint"] = userinfo
        self._endpoints = endpoints
        self._id_tokens = JwtVerifier(
            issuer=issuer,
            jwks_url=endpoints["jwks_uri"],
            audience=self.upstream.client_id,
            required_claims=("exp", "sub", "iat"),
            fetch=self._get_json,
            cache_ttl=0,
        )

    async def _get_json(self, url: str) -> Mapping[str, Any]:
        fetcher = self._fetcher()
        try:
            response = await fetcher.get(url)
        finally:
            await fetcher.aclose()
        if response.status != 200:
            raise UpstreamError(f"GET {url}: HTTP {response.status}")
        return response.json_object(url)

    async def ready(self, timeout: float) -> None:
        """Wait until the endpoints are known; :class:`UpstreamError` after ``timeout``."""
        with trio.move_on_after(timeout):
            await self._ready.wait()
            return
        raise UpstreamError(self._problem or f"the identity provider {self.issuer} is not ready")

    def authorization_url(
        self, *, redirect_uri: str, state: str, challenge: str, nonce: str
    ) -> str:
        """Where the browser goes to log in."""
        query = {
            "response_type": "code",
            "client_id": self.upstream.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if self.upstream.scopes:
            query["scope"] = " ".join(self.upstream.scopes)
        if self.upstream.is_oidc:
            query["nonce"] = nonce
        endpoint = self._endpoints["authorization_endpoint"]
        joiner = "&" if urlsplit(endpoint).query else "?"
        return f"{endpoint}{joiner}{urlencode(query)}"

    async def finish(self, *, code: str, redirect_uri: str, verifier: str, nonce: str) -> Identity:
        """Trade ``code`` for tokens and find out who logged in. Raises
        :class:`UpstreamError`. Cancellation: the exchange is abandoned."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        fetcher = self._fetcher()
        try:
            answer = await self._token_request(fetcher, form, "the code")
            access_token = answer["access_token"]
            if self.upstream.is_oidc:
                identity = await self._from_id_token(answer, nonce)
            else:
                identity = await self._from_user_endpoint(fetcher, access_token)
        finally:
            await fetcher.aclose()
        return attrs.evolve(identity, tokens=kept_tokens(answer))

    async def refresh(self, refresh_token: str) -> dict[str, Any]:
        """New upstream tokens for ``refresh_token`` (the tokens to keep, as
        :func:`kept_tokens` makes them; the refresh token given is kept when the provider
        sends no new one). Raises :class:`UpstreamError`. Cancellation: the exchange is
        abandoned (the provider may have rotated the refresh token meanwhile)."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        fetcher = self._fetcher()
        try:
            answer = await self._token_request(fetcher, form, "the refresh token")
        finally:
            await fetcher.aclose()
        return {"refresh_token": refresh_token, **kept_tokens(answer)}

    async def _token_request(
        self, fetcher: Fetcher, form: dict[str, str], what: str
    ) -> dict[str, Any]:
        """POST ``form`` to the token endpoint with this client's credentials: the JSON
        answer, which holds an access token. Raises :class:`UpstreamError`."""
        await self.ready(timeout=self.upstream.timeout)
        headers: dict[str, str] = {"accept": "application/json"}
        secret = self.upstream.client_secret
        if self.upstream.token_auth == "client_secret_basic" and secret is not None:
            import base64
            from urllib.parse import quote

            pair = f"{quote(self.upstream.client_id, safe='')}:{quote(secret, safe='')}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form = {**form, "client_id": self.upstream.client_id}
            if secret is not None:
                form["client_secret"] = secret
        try:
            response = await fetcher.post_form(self._endpoints["token_endpoint"], form, headers)
        except AuthError as exc:  # FetchError, UnsafeUrl: the message names the URL
            raise UpstreamError(f"the identity provider's token endpoint failed: {exc}") from None
        answer = _json_object(response.body)
        if answer is None:
            raise UpstreamError(
                f"the identity provider's token endpoint answered HTTP {response.status} "
                "without a JSON object"
            )
        if "error" in answer or response.status != 200:
            raise UpstreamError(
                f"the identity provider refused {what}: {str(answer.get('error'))[:100]}"
                f" {str(answer.get('error_description') or '')[:200]}".rstrip()
            )
        access_token = answer.get("access_token")
        if not isinstance(access_token, str) or not access_token:
            raise UpstreamError("the identity provider's answer holds no access_token")
        return answer

    async def _from_id_token(self, answer: Mapping[str, Any], nonce: str) -> Identity:
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise UpstreamError("the OpenID provider's answer holds no id_token (scope openid?)")
        assert self._id_tokens is not None
        try:
            info = await self._id_tokens.verify(id_token)
        except InvalidToken as exc:
            raise UpstreamError(f"the ID token was refused: {exc}") from None
        claims = info.claims
        if claims.get("nonce") != nonce:
            raise UpstreamError("the ID token's nonce is not this login's")
        audiences = claims.get("aud")
        if (
            isinstance(audiences, list)
            and len(audiences) > 1
            and claims.get("azp") != self.upstream.client_id
        ):
            raise UpstreamError("the ID token was issued to another client (azp)")
        subject = info.subject
        assert subject is not None  # required_claims
        return Identity(issuer=self.issuer, subject=subject, claims=_profile(claims))

    async def _from_user_endpoint(self, fetcher: Fetcher, access_token: str) -> Identity:
        url = self._endpoints["user_endpoint"]
        try:
            response = await fetcher.get(
                url,
                {
                    "authorization": f"Bearer {access_token}",
                    "accept": "application/json",
                    "user-agent": "trimcp",  # GitHub's API refuses requests without one
                },
            )
        except AuthError as exc:  # FetchError, UnsafeUrl: the message names the URL
            raise UpstreamError(f"the identity provider's user endpoint failed: {exc}") from None
        user = _json_object(response.body)
        if response.status != 200 or user is None:
            raise UpstreamError(
                f"the identity provider's user endpoint answered HTTP {response.status}"
            )
        field = self.upstream.subject_field
        subject = user.get(field)
        if isinstance(subject, bool) or not isinstance(subject, str | int) or subject == "":
            raise UpstreamError(f"the user endpoint's answer has no {field!r}")
        return Identity(issuer=self.issuer, subject=str(subject), claims=_profile(user))


def kept_tokens(answer: Mapping[str, Any]) -> dict[str, Any]:
    """What is kept of a token endpoint's answer: the tokens, their type and scope, and
    ``expires_at`` (seconds since the epoch) when it says how long the access token
    lives."""
    tokens: dict[str, Any] = {
        k: answer[k]
        for k in ("access_token", "refresh_token", "expires_in", "scope", "token_type")
        if k in answer
    }
    lifetime = answer.get("expires_in")
    if isinstance(lifetime, int | float) and not isinstance(lifetime, bool):
        tokens["expires_at"] = time.time() + lifetime
    return tokens


def _profile(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key in PROFILE_CLAIMS
        if isinstance(value := values.get(key), str | bool) and len(str(value)) <= 300
    }


def _json_object(body: bytes) -> dict[str, Any] | None:
    import json

    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


__all__ = [
    "Identity",
    "Upstream",
    "UpstreamError",
    "UpstreamLogin",
    "github",
    "google",
    "kept_tokens",
    "oidc",
]
