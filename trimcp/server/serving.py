"""Serving a server until it is stopped: ``Server.run`` and ``trimcp run`` share this.

:class:`ServeSettings` holds what a deployment chooses (transport, address, HTTP modes,
allowlists, log level), from arguments or from ``TRIMCP_*`` environment variables.
:func:`serve` runs one server with them inside a Trio run; :func:`run_blocking` starts
that Trio run, stops cleanly on Ctrl-C or SIGTERM and turns the outcome into an exit code.

Stopping: the first SIGINT/SIGTERM stops gracefully (HTTP closes every session with its
bounded sequence; stdio and WebSocket cancel, which closes sessions the same way), within
``STOP_BOUND`` seconds; a second one exits at once. A stop by signal is a normal stop.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs
import trio

from trimcp._groups import raise_alone, single_exception
from trimcp._record import Record
from trimcp.server.lifespan import LifespanFailed
from trimcp.session.lifespan import open_handler_lifespan
from trimcp.stores.request_state import RequestStateKeyring, derive_key

#: Transport names, and the spellings accepted for them.
TRANSPORTS: Final = ("stdio", "http", "websocket")
_ALIASES: Final = {"ws": "websocket", "streamable-http": "http", "streamable_http": "http"}
DEFAULT_PORTS: Final = {"http": 8000, "websocket": 8765}
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")
#: After a signal, the longest a graceful stop may take before everything is cancelled.
STOP_BOUND: Final = 15.0
EXIT_OK, EXIT_FAILURE = 0, 1

#: Environment variable -> ServeSettings field. Lists are comma-separated.
ENV: Final = {
    "TRIMCP_TRANSPORT": "transport",
    "TRIMCP_HOST": "host",
    "TRIMCP_PORT": "port",
    "TRIMCP_PATH": "path",
    "TRIMCP_STATELESS": "stateless",
    "TRIMCP_JSON_RESPONSE": "json_response",
    "TRIMCP_LOG_LEVEL": "log_level",
    "TRIMCP_ALLOWED_HOSTS": "allowed_hosts",
    "TRIMCP_ALLOWED_ORIGINS": "allowed_origins",
    "TRIMCP_STORE": "store",
    "TRIMCP_AUTH_ISSUER": "auth_issuer",
    "TRIMCP_AUTH_RESOURCE": "auth_resource",
    "TRIMCP_AUTH_SCOPES": "auth_scopes",
    "TRIMCP_AUTH_DPOP": "auth_dpop",
    "TRIMCP_AUTH_UPSTREAM": "auth_upstream",
}
#: The secret sealing 2026-07-28 ``requestState`` (see
#: :meth:`RequestStateKeyring.from_secret`), and the one it replaced, which still opens
#: (rotation). Environment variables only, never flags: every user of the machine sees a
#: command line. No separator: a secret may hold any character.
STATE_SECRET: Final = "TRIMCP_STATE_SECRET"
OLD_STATE_SECRET: Final = "TRIMCP_STATE_SECRET_OLD"
#: The secret sealing what trimcp's own authorization server keeps in its store (the
#: upstream tokens, its signing keys), for an ``AuthorizationServer`` given none in code:
#: the same for every worker and replica. Environment only, like the state secret.
AUTHSERVER_SECRET: Final = "TRIMCP_AUTHSERVER_SECRET"
#: trimcp's client id and secret at the identity provider ``auth_upstream`` names.
#: Environment only: a command line is visible to every user of the machine.
UPSTREAM_CLIENT_ID: Final = "TRIMCP_AUTH_UPSTREAM_CLIENT_ID"
UPSTREAM_CLIENT_SECRET: Final = "TRIMCP_AUTH_UPSTREAM_CLIENT_SECRET"
_TRUE: Final = ("1", "true", "yes", "on")
_FALSE: Final = ("0", "false", "no", "off", "")


class SettingsError(ValueError):
    """A serving setting (argument or environment variable) has a value that cannot work.

    ``hint`` (may be None) says what to do about it, for a second line."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


#: A module a serving setting needs -> the extra that installs it.
_EXTRAS: Final = {"hiredis": "redis", "jwt": "auth", "opentelemetry": "otel"}


def startup_error(exc: BaseException, settings: ServeSettings) -> SettingsError | None:
    """What to tell a person when serving could not start because of ``exc`` (None: not a
    startup failure this knows): a busy or privileged port, a host that is not an address
    of this machine, a missing optional dependency. ``Server.run`` and ``trimcp run``
    both report through this, so they say the same thing."""
    where = url_of("x", settings.host, settings.bound_port, "").removeprefix("x://")
    if isinstance(exc, socket.gaierror) or (
        isinstance(exc, OSError) and exc.errno == errno.EADDRNOTAVAIL
    ):
        return SettingsError(
            f"cannot listen on {where}: {exc.strerror or exc}",
            hint="the host must be an address of this machine (default 127.0.0.1)",
        )
    if isinstance(exc, OSError) and exc.errno in (errno.EADDRINUSE, errno.EACCES):
        hint = (
            "another process listens there: stop it, or pick another port (0 picks a free one)"
            if exc.errno == errno.EADDRINUSE
            else "ports below 1024 need privileges: pick another port"
        )
        return SettingsError(f"cannot listen on {where}: {exc.strerror or exc}", hint=hint)
    if isinstance(exc, ImportError):
        missing = (exc.name or "").split(".")[0]
        extra = _EXTRAS.get(missing)
        if "pip install" in str(exc) or extra is None:
            return SettingsError(f"cannot serve: {exc}")
        return SettingsError(
            f"cannot serve: the module {missing!r} is not installed",
            hint=f"pip install 'trimcp[{extra}]'",
        )
    return None


def _transport(value: str) -> str:
    name = _ALIASES.get(value, value)
    if name not in TRANSPORTS:
        raise SettingsError(f"unknown transport {value!r}: use one of {', '.join(TRANSPORTS)}")
    return name


def _log_level(value: str | None) -> str | None:
    if value is None:
        return None
    level = value.lower()
    if level not in LOG_LEVELS:
        raise SettingsError(f"unknown log level {value!r}: use one of {', '.join(LOG_LEVELS)}")
    return level


def _path(value: str) -> str:
    if not value.startswith("/"):
        raise SettingsError(f"the endpoint path must start with '/', got {value!r}")
    return value


def _store(instance: object, attribute: object, value: str | None) -> None:
    if value is not None and not value.startswith(("memory", "redis://")):
        raise SettingsError(f"unknown store {value!r}: use memory:// or redis://HOST:PORT/DB")


#: What ``auth_dpop`` may say: Bearer tokens only, DPoP-bound ones too, or only those.
DPOP_MODES: Final = ("off", "accept", "require")


def _dpop_mode(value: str) -> str:
    mode = value.strip().lower()
    if mode not in DPOP_MODES:
        raise SettingsError(
            f"unknown DPoP mode {value!r}: use one of {', '.join(DPOP_MODES)}",
            hint="accept: DPoP-bound tokens as well as Bearer; require: only DPoP-bound tokens",
        )
    return mode


#: What ``auth_upstream`` may name besides ``oidc:ISSUER``.
UPSTREAMS: Final = ("github", "google")


def _upstream(value: str | None) -> str | None:
    if value is None:
        return None
    name = value.strip()
    if name in UPSTREAMS:
        return name
    issuer = name.removeprefix("oidc:")
    if issuer != name and issuer.startswith(("https://", "http://")):
        return f"oidc:{issuer.rstrip('/')}"
    raise SettingsError(
        f"unknown identity provider {value!r}: use github, google or oidc:ISSUER_URL",
        hint="e.g. --auth-upstream oidc:https://login.example.com/realms/staff",
    )


def _scopes(value: Any) -> tuple[str, ...]:
    # Scopes are space-separated in OAuth; commas are accepted too (like the other lists).
    if isinstance(value, str):
        return tuple(value.replace(",", " ").split())
    return tuple(part for item in value for part in _scopes(item))


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return tuple(value)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ServeSettings(Record):
    """How to serve: every field has a default, and a ``TRIMCP_*`` variable (see :data:`ENV`).

    ``port`` None means the transport's default (8000 HTTP, 8765 WebSocket); 0 picks a
    free port (the startup line names it). ``path`` is the endpoint of HTTP and
    WebSocket. ``stateless`` / ``json_response``: the Streamable HTTP modes. Empty
    ``allowed_hosts`` / ``allowed_origins`` keep the transports' defaults (localhost
    names); binding a non-loopback ``host`` needs ``allowed_hosts`` (``*`` for any).
    ``log_level``: configure Python logging on stderr at that level (None: leave it).
    ``store``: HTTP sessions and events, ``memory://`` (None: the default) or
    ``redis://HOST:PORT/DB`` (shared by replicas). ``reuse_port``: bind with
    ``SO_REUSEPORT`` (a worker of ``trimcp run --workers N``).
    ``auth_issuer`` / ``auth_resource`` / ``auth_scopes``: protect a server that declares
    no authorization itself with JWT access tokens from that issuer (its discovery
    document names the keys), for that resource URL (default: the loopback URL served),
    requiring those scopes (see :func:`protection`). ``auth_dpop``: ``off`` (Bearer
    tokens), ``accept`` (DPoP-bound tokens too) or ``require`` (only DPoP-bound tokens,
    each request with a fresh proof; replicas on one Redis store share the replay cache).
    ``auth_upstream``: instead of an issuer, make this server the authorization server its
    clients see, users logging in at ``github``, ``google`` or ``oidc:ISSUER_URL`` (its
    client id and secret from ``TRIMCP_AUTH_UPSTREAM_CLIENT_ID`` and
    ``TRIMCP_AUTH_UPSTREAM_CLIENT_SECRET``; see :func:`protection`).
    """

    transport: str = attrs.field(default="stdio", converter=_transport)
    host: str = "127.0.0.1"
    port: int | None = None
    path: str = attrs.field(default="/mcp", converter=_path)
    stateless: bool = False
    json_response: bool = False
    log_level: str | None = attrs.field(default=None, converter=_log_level)
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=_names)
    allowed_origins: tuple[str, ...] = attrs.field(default=(), converter=_names)
    store: str | None = attrs.field(default=None, validator=_store)
    reuse_port: bool = False
    auth_issuer: str | None = None
    auth_resource: str | None = None
    auth_scopes: tuple[str, ...] = attrs.field(default=(), converter=_scopes)
    auth_dpop: str = attrs.field(default="off", converter=_dpop_mode)
    auth_upstream: str | None = attrs.field(default=None, converter=_upstream)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServeSettings:
        """Settings from ``TRIMCP_*`` variables, then ``overrides`` (None values ignored).

        Raises :class:`SettingsError` naming the variable or argument that is wrong.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for variable, field in ENV.items():
            text = environ.get(variable)
            if text is not None:
                values[field] = _from_text(variable, field, text)
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except SettingsError:
            raise
        except (TypeError, ValueError) as exc:
            raise SettingsError(str(exc)) from None

    @property
    def bound_port(self) -> int:
        """The port to bind: ``port``, or the transport's default."""
        return DEFAULT_PORTS.get(self.transport, 0) if self.port is None else self.port


def _from_text(variable: str, field: str, text: str) -> Any:
    if field == "port":
        try:
            return int(text)
        except ValueError:
            raise SettingsError(f"{variable} must be a port number, got {text!r}") from None
    if field in ("stateless", "json_response"):
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise SettingsError(f"{variable} must be true or false, got {text!r}")
    return text


def is_loopback_host(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine: ``localhost``, any
    address of 127.0.0.0/8, or ``::1``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def default_hosts(host: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The ``Host`` names a server bound to ``host`` answers without allowed hosts given:
    the loopback ``names``, and ``host`` itself when it is another loopback address
    (``--host 127.0.0.2``: clients then send ``Host: 127.0.0.2``)."""
    bare = host.strip("[]")
    form = f"[{bare}]" if ":" in bare else bare
    if form in names or not is_loopback_host(host):
        return names
    return (*names, form)


def keyring_to_share(server: Any) -> RequestStateKeyring | None:
    """``server``'s ``requestState`` keyring when it was left with the default one (a
    random key per process), which the deployment may replace; None otherwise."""
    keyring = getattr(server, "request_state_keyring", None)
    if isinstance(keyring, RequestStateKeyring) and keyring.generated:
        return keyring
    return None


def state_keyring_from_env(environ: Mapping[str, str] | None = None) -> RequestStateKeyring | None:
    """The keyring ``TRIMCP_STATE_SECRET`` (sealing) and ``TRIMCP_STATE_SECRET_OLD`` (still
    opening) name; None when the first is unset or empty. Raises :class:`SettingsError`
    naming the variable at fault."""
    environ = os.environ if environ is None else environ
    current, old = environ.get(STATE_SECRET, ""), environ.get(OLD_STATE_SECRET, "")
    if not current:
        if old:
            raise SettingsError(f"{OLD_STATE_SECRET} is set without {STATE_SECRET}")
        return None
    given = [(STATE_SECRET, current)] + ([(OLD_STATE_SECRET, old)] if old else [])
    for variable, secret in given:
        try:
            derive_key(secret)  # refuses a secret too short to be one
        except ValueError as exc:
            raise SettingsError(f"{variable}: {exc}") from None
    return RequestStateKeyring.from_secret(*(secret for _, secret in given))


def use_state_secret(
    server: Any, settings: ServeSettings, environ: Mapping[str, str] | None = None
) -> str | None:
    """Seal ``server``'s ``requestState`` with the keys ``TRIMCP_STATE_SECRET`` names when
    it was left with its default keyring (a keyring of its own is kept as it is). Returns
    a warning only where states are lost while the service runs: a replica sharing its
    port (``reuse_port``) whose key is random and that no shared store gives keys
    (``--store redis://`` does), so another replica cannot open its states. One process
    alone (or restarted by ``trimcp dev``) loses them only when it stops, as it loses its
    sessions: no warning."""
    keyring = keyring_to_share(server)
    if keyring is None:
        return None
    configured = state_keyring_from_env(environ)
    if configured is not None:
        keyring.adopt(configured)
        keyring.generated = False  # configured now: a shared store must not replace it
        return None
    if settings.transport != "http" or (settings.store or "").startswith("redis://"):
        return None
    if not settings.reuse_port:
        return None
    return (
        "warning: 2026-07-28 requestState is sealed with a random key of this process, which "
        "shares its port: the other processes cannot open its states, so input rounds fail "
        f"when a retry reaches one of them; set {STATE_SECRET} (a secret of 16+ bytes, the "
        "same for every process) or use --store redis://HOST:PORT/DB"
    )


_AUTH_SETTINGS: Final = (
    "--auth-issuer/--auth-upstream/--auth-resource/--auth-scope/--auth-dpop (TRIMCP_AUTH_*)"
)


def protection(server: Any, settings: ServeSettings) -> Any:
    """The OAuth protection (a :class:`~trimcp.auth.ProtectedResource`) serving ``server``
    over HTTP applies: the one it declares (``Server(auth=...)``), else one made from the
    ``auth_*`` settings (JWT access tokens of ``auth_issuer``, or trimcp's own
    authorization server in front of ``auth_upstream``), else None: open. An
    ``AuthorizationServer`` given no secret in code takes ``TRIMCP_AUTHSERVER_SECRET``.

    Raises :class:`SettingsError` when both the server and the settings name one (which
    would win is a guess), for auth settings without an issuer or upstream (or with
    both), for an upstream without its client id (or secret) in the environment, for a
    resource that cannot be derived, or (ImportError) when the ``auth`` extra is
    missing."""
    from trimcp.auth.declared import declared_auth

    declared = declared_auth(server)
    wanted = (
        settings.auth_issuer
        or settings.auth_upstream
        or settings.auth_resource
        or settings.auth_scopes
        or settings.auth_dpop != "off"
    )
    if declared is not None:
        if wanted:
            raise SettingsError(
                f"{label_of(server)} declares its authorization in code (Server(auth=...)); "
                f"the auth settings {_AUTH_SETTINGS} are for a server that declares none",
                hint="set issuer, resource and scopes in the server file, or drop its auth=",
            )
        if declared.awaits_resource and settings.transport == "http":
            # An AuthorizationServer(resource=None): the URL served is its resource.
            if not is_loopback_host(settings.host) or settings.bound_port == 0:
                raise SettingsError(
                    f"{label_of(server)}'s AuthorizationServer names no resource: give "
                    "resource= (this server's URL as clients reach it) in the server file",
                    hint="on loopback with a fixed --port it defaults to the URL served",
                )
            served_url = url_of("http", settings.host, settings.bound_port, settings.path)
            declared.serve_at(served_url)
        use_authserver_secret(declared)
        return declared
    if not wanted:
        return None
    issuer = settings.auth_issuer
    if issuer and settings.auth_upstream:
        raise SettingsError(
            "--auth-issuer and --auth-upstream both say who issues this server's tokens: give one",
            hint="--auth-issuer: an authorization server you run; --auth-upstream: this "
            "server is the authorization server, and users log in at that provider",
        )
    if not issuer and not settings.auth_upstream:
        raise SettingsError(
            "--auth-resource, --auth-scope and --auth-dpop need --auth-issuer "
            "(TRIMCP_AUTH_ISSUER): the URL of the authorization server whose tokens this "
            "server accepts, or --auth-upstream (TRIMCP_AUTH_UPSTREAM)"
        )
    resource = settings.auth_resource
    if not resource:
        served = settings.transport == "http" and is_loopback_host(settings.host)
        if not served or settings.bound_port == 0:
            flag = "--auth-issuer" if issuer else "--auth-upstream"
            raise SettingsError(
                f"{flag} needs --auth-resource (TRIMCP_AUTH_RESOURCE): this server's "
                "URL as clients reach it, which tokens must name as their audience",
                hint="e.g. --auth-resource https://mcp.example.com/mcp (on loopback with a "
                "fixed --port it defaults to the URL served)",
            )
        resource = url_of("http", settings.host, settings.bound_port, settings.path)
    if settings.auth_upstream:
        return own_authorization_server(settings.auth_upstream, resource, settings)
    assert issuer is not None
    from trimcp.auth.resource import ProtectedResource
    from trimcp.auth.verifiers import JwtVerifier

    try:
        return ProtectedResource(
            resource=resource,
            authorization_servers=[issuer],
            verifier=JwtVerifier(issuer=issuer),
            required_scopes=settings.auth_scopes,
            dpop=settings.auth_dpop != "off",
            require_dpop=settings.auth_dpop == "require",
        )
    except ValueError as exc:
        raise SettingsError(f"auth settings: {exc}") from None


def own_authorization_server(
    name: str, resource: str, settings: ServeSettings, environ: Mapping[str, str] | None = None
) -> Any:
    """trimcp's own ``AuthorizationServer`` for ``resource``, users logging in at the
    provider ``name`` (``github``, ``google``, ``oidc:ISSUER``) with the client id and
    secret the environment holds, requiring ``settings.auth_scopes``, DPoP as
    ``settings.auth_dpop`` says, sealing with ``TRIMCP_AUTHSERVER_SECRET``. Raises
    :class:`SettingsError` naming the variable that is missing."""
    from urllib.parse import urlsplit

    from trimcp.auth.resource import canonical_resource
    from trimcp.authserver import AuthorizationServer, Upstream, github, google, oidc

    environ = os.environ if environ is None else environ
    client_id = environ.get(UPSTREAM_CLIENT_ID, "")
    secret = environ.get(UPSTREAM_CLIENT_SECRET) or None
    parts = urlsplit(canonical_resource(resource))
    callback = f"{parts.scheme}://{parts.netloc}/oauth/callback"
    where = f"register this server there as an OAuth application with the callback {callback}"
    if not client_id:
        raise SettingsError(
            f"--auth-upstream {name} needs {UPSTREAM_CLIENT_ID} (and {UPSTREAM_CLIENT_SECRET}) "
            "in the environment: this server's client id at the provider",
            hint=where,
        )
    if secret is None and name in UPSTREAMS:
        raise SettingsError(
            f"--auth-upstream {name} needs {UPSTREAM_CLIENT_SECRET} in the environment: "
            "this server's client secret at the provider",
            hint=where,
        )
    upstream: Upstream
    if name == "github":
        assert secret is not None
        upstream = github(client_id, secret)
    elif name == "google":
        assert secret is not None
        upstream = google(client_id, secret)
    else:
        upstream = oidc(name.removeprefix("oidc:"), client_id, secret)
    try:
        auth = AuthorizationServer(
            resource=resource,
            upstream=upstream,
            required_scopes=settings.auth_scopes,
            dpop=settings.auth_dpop != "off",
            require_dpop=settings.auth_dpop == "require",
        )
    except ValueError as exc:
        raise SettingsError(f"auth settings: {exc}") from None
    use_authserver_secret(auth, environ)
    return auth


def use_authserver_secret(auth: Any, environ: Mapping[str, str] | None = None) -> None:
    """Seal with ``TRIMCP_AUTHSERVER_SECRET`` when ``auth`` is trimcp's own authorization
    server and was given no secret in code (one given in code is kept). Raises
    :class:`SettingsError` naming the variable for a secret too short."""
    adopt = getattr(auth, "adopt_secret", None)
    secret = (os.environ if environ is None else environ).get(AUTHSERVER_SECRET, "")
    if adopt is None or not secret:
        return
    try:
        adopt(secret)
    except ValueError as exc:
        raise SettingsError(f"{AUTHSERVER_SECRET}: {exc}") from None


def describe_protection(auth: Any) -> str:
    """One line saying how a protected server is protected, for the startup lines."""
    issuers = ", ".join(auth.authorization_servers)
    upstream = getattr(auth, "upstream_name", None)
    if upstream is not None:  # trimcp's own authorization server
        issuers = f"{issuers} (this server; users log in at {upstream})"
    scopes = " ".join(sorted(auth.required_scopes)) or "none"
    dpop = getattr(auth, "dpop", None)
    kind = "OAuth access tokens"
    if getattr(auth, "require_dpop", False):
        kind = "DPoP-bound OAuth access tokens (a fresh proof with every request)"
    elif dpop is not None:
        kind = "OAuth access tokens (Bearer or DPoP-bound)"
    return (
        f"authorization: {kind} from {issuers} for {auth.resource} "
        f"(scopes required: {scopes}); anonymous requests get 401"
    )


def _resource_mismatch(auth: Any, settings: ServeSettings, port: int) -> str | None:
    """A warning when the protected resource names another endpoint than the one served
    on loopback: tokens would be issued for a URL clients do not call."""
    from urllib.parse import urlsplit

    parts = urlsplit(auth.resource)
    if parts.path != settings.path:
        return (
            f"warning: the protected resource is {auth.resource} but this server serves "
            f"the path {settings.path}: clients check that these agree and refuse to log in"
        )
    default = 443 if parts.scheme == "https" else 80
    if is_loopback_host(parts.hostname or "") and (parts.port or default) != port:
        return (
            f"warning: the protected resource is {auth.resource} but this server listens on "
            f"port {port}: clients check that these agree and refuse to log in"
        )
    return None


def url_of(scheme: str, host: str, port: int, path: str) -> str:
    netloc = f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"
    return f"{scheme}://{netloc}{path}"


def label_of(server: Any) -> str:
    """``'name' version`` of a server, for the startup line."""
    info = getattr(server, "info", None)
    name, version = getattr(info, "name", None), getattr(info, "version", None)
    if name is None:
        return type(server).__name__
    return f"{name!r} {version}" if version else repr(name)


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


Wrap = Callable[[Any], Any]


async def serve(
    server: Any,
    settings: ServeSettings,
    *,
    stop: trio.Event | None = None,
    announce: Callable[[str], None] = _say,
    wrap_stdio: Wrap | None = None,
    options: Any = None,
) -> None:
    """Serve ``server`` as ``settings`` say until the client leaves (stdio), ``stop`` is set
    (HTTP: graceful) or this is cancelled.

    The server's lifespan is entered once first, so a failing lifespan stops here, before
    anything is bound (:class:`LifespanFailed`). ``announce`` gets the startup line naming
    the URL actually bound. ``options``: the engine's :class:`SessionOptions` per session.
    Authorization (see :func:`protection`) applies over HTTP; the websocket transport
    refuses a protected server (:class:`SettingsError`); stdio serves it to the local
    client that started it, and says so. Cancellation: every session closes with the
    engine's bounded close sequence.
    """
    warning = use_state_secret(server, settings)  # before anything runs: a bad secret stops
    auth = protection(server, settings)
    if auth is not None and settings.transport == "websocket":
        raise SettingsError(
            f"{label_of(server)} is protected by OAuth, which the websocket transport "
            "cannot apply: it would be served open",
            hint="serve it with --transport http (transport='http')",
        )
    async with open_handler_lifespan(server):
        if settings.transport == "stdio":
            await _serve_stdio(server, announce, wrap_stdio, options, auth)
        elif settings.transport == "http":
            await _serve_http(server, settings, announce, stop, options, warning, auth)
        else:
            await _serve_websocket(server, settings, announce, options)


async def _serve_stdio(
    server: Any,
    announce: Callable[[str], None],
    wrap: Wrap | None,
    options: Any,
    auth: Any = None,
) -> None:
    from trimcp.protocol.lifecycle import Role
    from trimcp.session import serve_session
    from trimcp.transports.stdio import open_stdio_server_transport

    announce(f"serving {label_of(server)} over stdio")
    if auth is not None:
        # The MCP spec: stdio servers take credentials from their environment, not OAuth.
        announce(
            "authorization applies over HTTP only: over stdio the client that started this "
            "process is trusted, and ctx.auth is None"
        )
    async with open_stdio_server_transport() as transport:
        wire = wrap(transport) if wrap is not None else transport
        # A trimcp.Server serves either era on stdio (the first request decides).
        own = getattr(server, "serve_stream", None) or getattr(server, "serve_session", None)
        if callable(own):
            await own(wire, options=options)
        else:
            await serve_session(wire, server, role=Role.SERVER, options=options)


async def _serve_http(
    server: Any,
    settings: ServeSettings,
    announce: Callable[[str], None],
    stop: trio.Event | None,
    options: Any,
    warning: str | None = None,
    auth: Any = None,
) -> None:
    from trimcp.transports.http_server import HttpServerConfig, serve_http
    from trimcp.transports.http_server.config import LOCALHOST_NAMES

    fields: dict[str, Any] = {
        "path": settings.path,
        "stateless": settings.stateless,
        "json_response": settings.json_response,
    }
    if settings.allowed_hosts:
        fields["allowed_hosts"] = settings.allowed_hosts
    elif default_hosts(settings.host, LOCALHOST_NAMES) != LOCALHOST_NAMES:
        fields["allowed_hosts"] = default_hosts(settings.host, LOCALHOST_NAMES)
    if settings.allowed_origins:
        fields["allowed_origins"] = settings.allowed_origins
    if options is not None:
        fields["session_options"] = options
    if auth is not None:
        fields["auth"] = auth
    config = HttpServerConfig(**fields)
    trigger = stop.wait if stop is not None else None
    async with trio.open_nursery() as nursery:
        try:
            bound: int = await nursery.start(
                functools.partial(
                    serve_http,
                    server,
                    host=settings.host,
                    port=settings.bound_port,
                    config=config,
                    shutdown_trigger=trigger,
                    store=settings.store,
                    reuse_port=settings.reuse_port,
                )
            )
        except ValueError as exc:  # e.g. a public address without allowed hosts
            raise SettingsError(str(exc)) from None
        url = url_of("http", settings.host, bound, config.path)
        announce(f"serving {label_of(server)} at {url} (Ctrl-C to stop)")
        # The lines below come after the startup line, which tools read first.
        if auth is not None:
            announce(describe_protection(auth))
            mismatch = _resource_mismatch(auth, settings, bound)
            if mismatch is not None:
                announce(mismatch)
        elif not is_loopback_host(settings.host):
            announce(
                f"warning: NO AUTHORIZATION: anyone who can reach {url} may call every tool "
                "of this server; protect it with Server(auth=...) or --auth-issuer "
                "(docs/authorization.md)"
            )
        if warning is not None:
            announce(warning)


async def _serve_websocket(
    server: Any, settings: ServeSettings, announce: Callable[[str], None], options: Any
) -> None:
    from trimcp.transports.websocket import LOCAL_HOSTS, serve_websocket

    if not is_loopback_host(settings.host) and not settings.allowed_hosts:
        raise SettingsError(
            f"binding to {settings.host!r} (not loopback) needs allowed hosts: the names "
            "clients use to reach this server (--allow-host / TRIMCP_ALLOWED_HOSTS; '*' "
            "accepts any)"
        )
    allowed = frozenset(settings.allowed_hosts or default_hosts(settings.host, LOCAL_HOSTS))
    async with trio.open_nursery() as nursery:
        bound: int = await nursery.start(
            functools.partial(
                serve_websocket,
                server,
                host=settings.host,
                port=settings.bound_port,
                path=settings.path,
                allowed_hosts=allowed,
                allowed_origins=settings.allowed_origins or None,
                options=options,
            )
        )
        announce(
            f"serving {label_of(server)} at "
            f"{url_of('ws', settings.host, bound, settings.path)} (Ctrl-C to stop)"
        )


def configure_logging(level: str | None) -> None:
    """Python logging on stderr at ``level`` (stdout may carry the protocol), every line
    prefixed like every other line trimcp prints (``trimcp: <time> INFO <logger>: ...``).
    Without a level, trimcp's own warnings still show, prefixed the same way
    (``trimcp: ...``), unless the application configured logging itself."""
    if level is None:
        logger = logging.getLogger("trimcp")
        if not logger.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("trimcp: %(message)s"))
            handler.setLevel(logging.WARNING)
            logger.addHandler(handler)
        return
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="trimcp: %(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def add_access_log(server: Any, level: str | None) -> None:
    """At log level info or debug, one line per request: a
    :class:`~trimcp.server.middleware.LoggingMiddleware` around every other middleware
    of a :class:`~trimcp.Server` that has none yet."""
    if level not in ("info", "debug"):
        return
    from trimcp.server.app import Server
    from trimcp.server.middleware import LoggingMiddleware

    if isinstance(server, Server) and not any(
        isinstance(layer, LoggingMiddleware) for layer in server.middleware
    ):
        server.add_middleware(LoggingMiddleware(), outermost=True)


def leaf_exception(exc: BaseException) -> BaseException:
    """``exc`` out of any single-exception groups around it."""
    while isinstance(exc, BaseExceptionGroup):
        only = single_exception(exc)
        if only is None:
            return exc
        exc = only
    return exc


def run_blocking(
    server: Any,
    settings: ServeSettings,
    *,
    announce: Callable[[str], None] = _say,
    wrap_stdio: Wrap | None = None,
    options: Any = None,
) -> tuple[int, int | None]:
    """Start Trio and :func:`serve` until the client leaves or a signal arrives.

    Returns ``(exit code, the signal that stopped serving or None)``: 0 when serving ended
    normally or by SIGINT/SIGTERM. Raises :class:`LifespanFailed` or
    :class:`SettingsError` alone (never in an exception group); other errors propagate,
    unwrapped from single-exception groups.
    """
    from trimcp._signals import run_until_interrupted

    configure_logging(settings.log_level)
    add_access_log(server, settings.log_level)
    stop = trio.Event()
    started = False

    def announce_start(line: str) -> None:
        nonlocal started
        started = True
        announce(line)

    async def work() -> int:
        await serve(
            server,
            settings,
            stop=stop,
            announce=announce_start,
            wrap_stdio=wrap_stdio,
            options=options,
        )
        return EXIT_OK

    def on_signal(signum: int) -> None:
        announce(stop_line(signal.Signals(signum).name, settings, options))

    signals = [signal.SIGINT] + ([signal.SIGTERM] if hasattr(signal, "SIGTERM") else [])
    try:
        code, received = trio.run(
            functools.partial(
                run_until_interrupted,
                work,
                signals=signals,
                on_interrupt=on_signal,
                graceful=stop.set if settings.transport == "http" else None,
                hard_bound=STOP_BOUND,
            )
        )
    except BaseException as exc:
        leaf = leaf_exception(exc)
        failed = None if started else startup_error(leaf, settings)
        if failed is not None:
            raise failed from None
        if leaf is exc:
            raise
        raise_alone(leaf)
    if received is not None:
        # The stop line said it all: a clean stop prints one line and exits 0.
        return EXIT_OK, received
    return code, None


def stop_line(name: str, settings: ServeSettings, options: Any = None) -> str:
    """The line a stop by signal ``name`` prints. Over HTTP it names the bound the open
    sessions get to close (the HTTP server's ``shutdown_bound`` for the session
    ``options``), the one the warning about sessions that did not close names too."""
    if settings.transport != "http":
        return f"{name}: stopping (Ctrl-C again stops at once)"
    from trimcp.transports.http_server import HttpServerConfig

    config = HttpServerConfig() if options is None else HttpServerConfig(session_options=options)
    bound = min(config.shutdown_bound, STOP_BOUND)
    return (
        f"{name}: stopping; open sessions get up to {bound:g} s to finish "
        "(Ctrl-C again stops at once)"
    )


def run_server(server: Any, settings: ServeSettings, *, options: Any = None) -> None:
    """``Server.run``: serve, and exit the process with one line when serving cannot start.

    A failing lifespan, a bad setting or a failure to start (a busy port, a bad host, a
    missing extra: :func:`startup_error`) prints ``trimcp: <what and why>`` on stderr,
    with a second line saying what to do when there is one, and raises ``SystemExit(1)``;
    a stop by signal returns normally.
    """
    try:
        run_blocking(server, settings, options=options)
    except (LifespanFailed, SettingsError) as exc:
        _say(str(exc))
        if isinstance(exc, SettingsError) and exc.hint:
            _say(exc.hint)
        raise SystemExit(EXIT_FAILURE) from None


# --- `trimcp run` on a file that calls app.run() itself ---------------------------------


@attrs.define
class RunCall:
    """A ``Server.run(...)`` made while ``trimcp run`` imported the file: the server and
    the arguments it passed (they become defaults for ``trimcp run``)."""

    server: Any
    arguments: dict[str, Any]


_captured: list[RunCall] | None = None


@contextlib.contextmanager
def capturing_run_calls() -> Iterator[list[RunCall]]:
    """While the body runs, ``Server.run()`` records its call here and returns at once.

    ``trimcp run`` imports the target under this: a file ending in a bare ``app.run()``
    must not start serving (with stdout taken) in the middle of the import.
    """
    global _captured
    previous, _captured = _captured, []
    try:
        yield _captured
    finally:
        _captured = previous


def capture_run(server: Any, arguments: dict[str, Any]) -> bool:
    """Record a ``run()`` call when ``trimcp run`` is importing; True if recorded."""
    if _captured is None:
        return False
    _captured.append(RunCall(server, {k: v for k, v in arguments.items() if v is not None}))
    return True
