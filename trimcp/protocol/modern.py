"""The rules of the stateless revision (2026-07-28), shared by the server and the client.

2026-07-28 has no handshake and no session: every request carries its protocol version,
client capabilities and (optionally) client info in ``params._meta``; every result says
what kind it is (``resultType``) and who answered (``_meta`` server info); the
Streamable HTTP transport mirrors the method and the tool/prompt/resource name into
headers that the server checks against the body. This module holds those rules as data
and pure functions, so both roles apply the same ones. It does no I/O.

What is here, in the order a request meets it:

- **Era.** :func:`is_modern` tells a 2026 request from a session-era one.
- **Envelope.** :func:`read_request_meta` checks ``_meta`` (``-32602`` when a required
  field is missing, ``-32022`` naming the supported versions when the version is not one
  of them) into a :class:`RequestMeta`; :func:`negotiated` turns that into the request's
  :class:`~trimcp.protocol.negotiated.Negotiated`. :func:`request_meta` builds the
  envelope a client sends.
- **Methods.** :data:`REMOVED_METHODS` (answered ``-32601``), :data:`INPUT_METHODS` (the
  only ones that may answer ``input_required``), :data:`CACHEABLE_METHODS`.
- **HTTP headers.** :func:`check_headers` (``Mcp-Method``, ``Mcp-Name``,
  ``MCP-Protocol-Version`` against the body) and, for tools whose input schema marks
  parameters with ``x-mcp-header``, :func:`header_parameters` and
  :func:`check_parameter_headers` (``Mcp-Param-*``); the client side uses
  :func:`standard_headers` and :func:`parameter_headers`. Values outside plain ASCII travel
  as ``=?base64?...?=`` (:func:`encode_header_value` / :func:`decode_header_value`).
- **Errors** with their data: :func:`header_mismatch` (-32020),
  :func:`missing_capabilities` (-32021), :func:`unsupported_version` (-32022),
  :func:`removed_method`; :func:`http_status` maps a code to the status the spec asks for.
- **Results.** :func:`stamp_result` adds ``resultType`` and the server's identity;
  :func:`subscription_meta` tags notifications of a ``subscriptions/listen`` stream.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

import attrs
import orjson

from trimcp import serde
from trimcp._record import Record
from trimcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    RemoteProtocolError,
)
from trimcp.protocol import tasks_ext
from trimcp.protocol.admission import has_capability as has_capability
from trimcp.protocol.admission import removed_method as removed_method
from trimcp.protocol.methods import METHODS
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS
from trimcp.types import (
    LOGGING_LEVELS,
    ClientCapabilities,
    Implementation,
    LoggingLevel,
    ServerCapabilities,
)

# --- _meta keys ---------------------------------------------------------------------------

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
#: W3C trace context and baggage, carried in ``_meta`` under these bare names.
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")

# --- HTTP headers (lower case: compare names case-insensitively) --------------------------

HEADER_PROTOCOL_VERSION: Final = "mcp-protocol-version"
HEADER_METHOD: Final = "mcp-method"
HEADER_NAME: Final = "mcp-name"
HEADER_PARAM_PREFIX: Final = "mcp-param-"

# --- result types -------------------------------------------------------------------------

ResultType = Literal["complete", "input_required"]
COMPLETE: Final = "complete"
INPUT_REQUIRED: Final = "input_required"

# --- methods ------------------------------------------------------------------------------

# The per-era columns of the method table (trimcp.protocol.methods), as sets.

#: Session-era methods the stateless revision removed; a 2026 request for one of them is
#: answered ``-32601`` (HTTP 404). ``tasks/*`` moved to an extension and is not listed.
REMOVED_METHODS: Final = frozenset(m.name for m in METHODS.values() if m.removed_in_stateless)

#: The only requests a server may answer with ``resultType: "input_required"``.
INPUT_METHODS: Final = frozenset(m.name for m in METHODS.values() if m.input_capable)

#: Requests whose complete results carry the cache hints ``ttlMs`` and ``cacheScope``.
CACHEABLE_METHODS: Final = frozenset(m.name for m in METHODS.values() if m.cacheable)

#: Where ``Mcp-Name`` comes from, per method (``params.<field>``).
NAME_FIELDS: Final[Mapping[str, str]] = {
    **{m.name: m.name_field for m in METHODS.values() if m.name_field is not None},
    # The tasks extension (SEP-2663): load balancers route task polls by task id.
    **{method: "taskId" for method in tasks_ext.METHODS},
}

CacheScope = Literal["public", "private"]


# --- the envelope -------------------------------------------------------------------------


def is_modern(params: Any) -> bool:
    """Whether a request's ``params`` carry the 2026-07-28 envelope (a protocol version in
    ``_meta``). Session-era requests never do; a 2026 request always must."""
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and META_PROTOCOL_VERSION in meta


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TraceContext(Record):
    """W3C trace context from a request's ``_meta`` (each None when absent)."""

    traceparent: str | None = None
    tracestate: str | None = None
    baggage: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RequestMeta(Record):
    """What one 2026-07-28 request says about itself in ``params._meta``."""

    protocol_version: str
    client_capabilities: ClientCapabilities
    client_info: Implementation | None = None
    #: The least severe log level the client wants for this request; None: no logs at all.
    log_level: LoggingLevel | None = None
    trace: TraceContext | None = None


def _invalid(message: str, path: str) -> RemoteProtocolError:
    return RemoteProtocolError(INVALID_PARAMS, message, {"path": path})


#: The most distinct values each ``_meta`` cache (capabilities, client info) keeps.
META_CACHE_ENTRIES: Final = 32
#: The largest value (its JSON encoding, bytes) a ``_meta`` cache keeps: real clients
#: send a few hundred bytes; a larger value is structured for its request and not kept.
META_CACHE_ENTRY_BYTES: Final = 4096
#: The most bytes (of JSON encodings) each ``_meta`` cache holds.
META_CACHE_BYTES: Final = 64 * 1024


class _Recent:
    """The structured form of the values seen last, by their exact JSON encoding.

    A client sends the same capabilities and client info with every 2026 request; this
    structures each distinct value once. The key is the encoding, not ``==``, which would
    take ``1`` for ``true``; the value is a pure function of the key (frozen, shared by
    every request that sends the same bytes, whoever sends them), so nothing of one
    caller reaches another. Bounded for everyone at once (the cache is not per caller):
    at most :data:`META_CACHE_ENTRIES` values and :data:`META_CACHE_BYTES` bytes, new
    values evict the oldest, and a value over :data:`META_CACHE_ENTRY_BYTES` is never kept.
    """

    def __init__(
        self,
        cls: type[Any],
        size: int = META_CACHE_ENTRIES,
        max_bytes: int = META_CACHE_BYTES,
        entry_bytes: int = META_CACHE_ENTRY_BYTES,
    ) -> None:
        self._cls = cls
        self._size = size
        self._max_bytes = max_bytes
        self._entry_bytes = entry_bytes
        self._seen: dict[bytes, Any] = {}
        #: The value kept for a key (None: none): the table's own lookup (every 2026
        #: request asks; no Python frame of ours around it).
        self.get: Callable[[bytes], Any] = self._seen.get
        #: Bytes of the keys held (what the byte bound counts).
        self.bytes = 0

    def clear(self) -> None:
        self._seen.clear()
        self.bytes = 0

    def keep(self, key: bytes, value: Any) -> None:
        """Keep ``value`` (a pure function of ``key``) within the bounds."""
        seen = self._seen
        size = len(key)
        if size > self._entry_bytes:
            return  # large: not worth keeping, and it would pin memory
        while seen and (len(seen) >= self._size or self.bytes + size > self._max_bytes):
            oldest = next(iter(seen))
            del seen[oldest]
            self.bytes -= len(oldest)
        seen[key] = value
        self.bytes += size

    def structure(self, raw: Any) -> Any:
        try:
            key = orjson.dumps(raw)
        except TypeError:  # not JSON (a caller's own object): no caching
            return serde.structure(raw, self._cls)
        value = self._seen.get(key)
        if value is None:
            value = serde.structure(raw, self._cls)
            self.keep(key, value)
        return value


_RECENT_CAPABILITIES = _Recent(ClientCapabilities)
_RECENT_INFO = _Recent(Implementation)
#: Whole envelopes (their version, capabilities, client info and log level) read before,
#: as :class:`RequestMeta` without trace context: a client sends the same one every time.
_RECENT_META = _Recent(RequestMeta)


def recent_client(
    raw_info: Any, raw_capabilities: Any
) -> tuple[Implementation, ClientCapabilities]:
    """A client's info and capabilities (JSON values) structured, through the ``_meta``
    caches: the same values for every request and session that sent the same bytes (an
    ``initialize`` keeps them for the session's life: thousands of idle sessions of one
    kind of client hold one copy). Raises :class:`~trimcp.serde.ShapeError` as
    :func:`trimcp.serde.structure` does."""
    return _RECENT_INFO.structure(raw_info), _RECENT_CAPABILITIES.structure(raw_capabilities)


def read_request_meta(
    params: Any,
    supported: Iterable[str] = STATELESS_VERSIONS,
    *,
    advertise: Iterable[str] | None = None,
) -> RequestMeta:
    """Check a 2026 request's ``params._meta`` and read it.

    Raises :class:`RemoteProtocolError`: ``-32602`` (``data.path`` names the field) when
    ``_meta``, its protocol version or client capabilities are missing or malformed, or
    the log level is not a known level; ``-32022`` (:func:`unsupported_version`) when the
    version is not in ``supported`` (the error names ``advertise``, default ``supported``:
    a dual-era server lists its session-era versions there too).
    """
    meta = params.get("_meta") if type(params) is dict else None
    key = None
    if type(meta) is dict and supported is STATELESS_VERSIONS:
        # Read before (the same bytes checked against the same versions): only the trace
        # context, which changes with every request, is read anew.
        try:
            key = orjson.dumps(
                (
                    meta.get(META_PROTOCOL_VERSION),
                    meta.get(META_CLIENT_CAPABILITIES),
                    meta.get(META_CLIENT_INFO),
                    meta.get(META_LOG_LEVEL),
                )
            )
        except TypeError:  # not JSON (a caller's own objects): read it all
            key = None
        else:
            known: RequestMeta | None = _RECENT_META.get(key)
            if known is not None:
                if "traceparent" not in meta and "tracestate" not in meta and "baggage" not in meta:
                    return known
                trace = _trace(meta)
                return known if trace is None else attrs.evolve(known, trace=trace)
    if type(meta) is not dict:
        raise _invalid(
            "Invalid params: a 2026-07-28 request needs params._meta with "
            f"{META_PROTOCOL_VERSION!r} and {META_CLIENT_CAPABILITIES!r}",
            "params._meta",
        )
    version = meta.get(META_PROTOCOL_VERSION)
    if type(version) is not str:
        raise _invalid(
            f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] must be a version string",
            f"params._meta.{META_PROTOCOL_VERSION}",
        )
    wanted = tuple(supported)
    if version not in wanted:
        raise unsupported_version(version, wanted if advertise is None else advertise)
    raw_caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(raw_caps) is not dict:
        raise _invalid(
            f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] must be an object "
            "(send {} when the client declares none)",
            f"params._meta.{META_CLIENT_CAPABILITIES}",
        )
    try:
        capabilities = _RECENT_CAPABILITIES.structure(raw_caps)
    except serde.ShapeError as exc:
        raise _invalid(
            f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}]: {exc}",
            f"params._meta.{META_CLIENT_CAPABILITIES}{_sub(exc.path)}",
        ) from None
    client_info: Implementation | None = None
    raw_info = meta.get(META_CLIENT_INFO)
    if raw_info is not None:
        try:
            client_info = _RECENT_INFO.structure(raw_info)
        except serde.ShapeError as exc:
            raise _invalid(
                f"Invalid params: _meta[{META_CLIENT_INFO!r}]: {exc}",
                f"params._meta.{META_CLIENT_INFO}{_sub(exc.path)}",
            ) from None
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOGGING_LEVELS:
        raise _invalid(
            f"Invalid params: _meta[{META_LOG_LEVEL!r}] must be one of {', '.join(LOGGING_LEVELS)}",
            f"params._meta.{META_LOG_LEVEL}",
        )
    read = RequestMeta(
        protocol_version=version,
        client_capabilities=capabilities,
        client_info=client_info,
        log_level=level,
    )
    if key is not None:
        _RECENT_META.keep(key, read)
    trace = _trace(meta)
    return read if trace is None else attrs.evolve(read, trace=trace)


def _sub(path: str) -> str:
    return "" if not path or path == "$" else "." + path.lstrip("$.")


def _trace(meta: dict[str, Any]) -> TraceContext | None:
    if "traceparent" not in meta and "tracestate" not in meta and "baggage" not in meta:
        return None
    values = [meta.get(key) for key in TRACE_KEYS]
    if all(value is None for value in values):
        return None
    parent, state, baggage = (v if type(v) is str else None for v in values)
    return TraceContext(traceparent=parent, tracestate=state, baggage=baggage)


def negotiated(
    meta: RequestMeta,
    server_info: Implementation,
    server_capabilities: ServerCapabilities,
    instructions: str | None = None,
) -> Negotiated:
    """The :class:`Negotiated` of one 2026 request: its own version and client, our side.

    The same object for the same parts (kept for the last few): a client sends the same
    envelope every time (:func:`read_request_meta` hands back the same parts) and a server
    offers the same objects until what it registers changes. Every 2026 request asks:
    the arguments may be given by position, the cheaper call."""
    last = _last_agreed[0]
    if (
        last is not None
        # The same parts as last time (a client sends the same envelope every time, and
        # read_request_meta hands back the same RequestMeta for it): the same agreement.
        and last[0] is meta
        and last[1] is server_info
        and last[2] is server_capabilities
        and last[3] == instructions
    ):
        return last[4]
    agreed = _agreement(meta, server_info, server_capabilities, instructions)
    _last_agreed[0] = (meta, server_info, server_capabilities, instructions, agreed)
    return agreed


def _agreement(
    meta: RequestMeta,
    server_info: Implementation,
    server_capabilities: ServerCapabilities,
    instructions: str | None,
) -> Negotiated:
    client_info, client_capabilities = meta.client_info, meta.client_capabilities
    key = (
        meta.protocol_version,
        meta.log_level,
        id(client_info),
        id(client_capabilities),
        id(server_info),
        id(server_capabilities),
        instructions,
    )
    agreed = _agreed.get(key)
    if (
        agreed is not None
        # It holds these objects, so their ids are still theirs: the same ones.
        and agreed.client_info is client_info
        and agreed.client_capabilities is client_capabilities
        and agreed.server_info is server_info
        and agreed.server_capabilities is server_capabilities
    ):
        return agreed
    agreed = Negotiated(
        protocol_version=meta.protocol_version,
        client_info=client_info,
        client_capabilities=client_capabilities,
        server_info=server_info,
        server_capabilities=server_capabilities,
        instructions=instructions,
        log_level=meta.log_level,
    )
    if len(_agreed) >= META_CACHE_ENTRIES:
        del _agreed[next(iter(_agreed))]
    _agreed[key] = agreed
    return agreed


#: The agreements made last, by their parts (see :func:`negotiated`); frozen, so shared.
_agreed: dict[tuple[Any, ...], Negotiated] = {}
#: The last agreement handed out, with the parts it was asked for (one slot).
_last_agreed: list[
    tuple[RequestMeta, Implementation, ServerCapabilities, str | None, Negotiated] | None
] = [None]


def request_meta(
    protocol_version: str,
    client_capabilities: ClientCapabilities | Mapping[str, Any],
    client_info: Implementation | Mapping[str, Any] | None = None,
    *,
    log_level: LoggingLevel | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_meta`` a client puts on every 2026 request (``extra`` keys are added, e.g.
    ``progressToken`` or trace context)."""
    meta: dict[str, Any] = dict(extra) if extra else {}
    meta[META_PROTOCOL_VERSION] = protocol_version
    meta[META_CLIENT_CAPABILITIES] = _plain(client_capabilities)
    if client_info is not None:
        meta[META_CLIENT_INFO] = _plain(client_info)
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else serde.unstructure(value)


# --- errors -------------------------------------------------------------------------------


def header_mismatch(message: str) -> RemoteProtocolError:
    """``-32020``: the HTTP headers disagree with the body (or a required one is missing)."""
    return RemoteProtocolError(HEADER_MISMATCH, f"Header mismatch: {message}")


def missing_capabilities(required: Mapping[str, Any]) -> RemoteProtocolError:
    """``-32021``: the request needs client capabilities it did not declare.

    ``required`` is a ``ClientCapabilities``-shaped object naming them, e.g.
    ``{"sampling": {}}``; it travels as ``data.requiredCapabilities``.
    """
    names = ", ".join(sorted(required))
    return RemoteProtocolError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: this request needs {names}; declare it in "
        f"_meta[{META_CLIENT_CAPABILITIES!r}] and retry",
        {"requiredCapabilities": dict(required)},
    )


def unsupported_version(requested: str, supported: Iterable[str]) -> RemoteProtocolError:
    """``-32022``: ``requested`` is not a version this side speaks; names those it does."""
    versions = list(supported)
    return RemoteProtocolError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested[:40]!r}; supported: {', '.join(versions)}",
        {"supported": versions, "requested": requested},
    )


#: HTTP status per JSON-RPC code, for an error answered as a plain JSON body.
_STATUS: Final[Mapping[int, int]] = {
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    INVALID_REQUEST: 400,
    PARSE_ERROR: 400,
}


def http_status(code: int, *, malformed: bool = False) -> int:
    """The HTTP status of a 2026 error answer with JSON-RPC ``code``.

    ``-32601`` is 404; header mismatch, missing capability, unsupported version and
    invalid requests are 400; ``malformed`` (the envelope itself was refused, e.g. a
    ``-32602`` for a missing ``_meta`` field) makes any code 400. Other errors of a
    request that was served (a tool's ``-32602``, ``-32603``) are 200.
    """
    if malformed:
        return 400
    return _STATUS.get(code, 200)


# --- results ------------------------------------------------------------------------------


def stamp_result(
    result: dict[str, Any],
    server_info: Mapping[str, Any] | None,
    result_type: ResultType = COMPLETE,
) -> dict[str, Any]:
    """``result`` (wire form, modified in place and returned) with ``resultType`` and, when
    ``server_info`` is given, ``_meta[io.modelcontextprotocol/serverInfo]``."""
    if result.get("resultType") != tasks_ext.RESULT_TYPE_TASK:  # a CreateTaskResult keeps it
        result["resultType"] = result_type
    if server_info is not None:
        meta = result.get("_meta")
        if type(meta) is dict:
            meta.setdefault(META_SERVER_INFO, server_info)
        else:
            result["_meta"] = {META_SERVER_INFO: server_info}
    return result


def subscription_meta(subscription_id: int | str) -> dict[str, Any]:
    """The ``_meta`` every message of a ``subscriptions/listen`` stream carries."""
    return {META_SUBSCRIPTION_ID: subscription_id}


def result_type_of(result: Mapping[str, Any]) -> str:
    """A received result's type; an absent ``resultType`` (older servers) is complete."""
    value = result.get("resultType")
    return value if type(value) is str else COMPLETE


# --- HTTP headers -------------------------------------------------------------------------

_SENTINEL_START: Final = "=?base64?"
_SENTINEL_END: Final = "?="
#: Visible ASCII and inner spaces: what travels in a header as it is.
_PLAIN: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?\Z")
#: RFC 9110 ``tchar``: what an ``x-mcp-header`` name may be made of.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_MAX_SAFE_INTEGER: Final = 2**53 - 1


def encode_header_value(value: str) -> str:
    """``value`` as it travels in ``Mcp-Name`` / ``Mcp-Param-*``: as is when it is visible
    ASCII without surrounding spaces, else ``=?base64?<UTF-8 in Base64>?=``."""
    if _PLAIN.match(value) and not (
        value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END)
    ):
        return value
    return _SENTINEL_START + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SENTINEL_END


def decode_header_value(value: str) -> str:
    """The value a ``Mcp-Name`` / ``Mcp-Param-*`` header carries (Base64 sentinel undone).

    Raises ``ValueError`` for characters a header value may not hold, or a sentinel whose
    content is not Base64 of UTF-8.
    """
    if value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END) and len(value) >= 11:
        inner = value[len(_SENTINEL_START) : -len(_SENTINEL_END)]
        try:
            return base64.b64decode(inner.encode("ascii"), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeError) as exc:
            raise ValueError(f"bad Base64 value ({exc})") from None
    if value and not _PLAIN.match(value):
        raise ValueError("characters outside visible ASCII")
    return value


def header_text(value: object) -> str | None:
    """The header form of a primitive parameter value (None when it has none: null,
    numbers with a fraction, objects)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return encode_header_value(value)
    return None


def name_of(method: str, params: Any) -> str | None:
    """The body value ``Mcp-Name`` mirrors for ``method`` (None when it has none)."""
    field = NAME_FIELDS.get(method)
    if field is None or type(params) is not dict:
        return None
    value = params.get(field)
    return value if type(value) is str else None


def standard_headers(method: str, params: Any, protocol_version: str) -> dict[str, str]:
    """The headers a 2026 client sends with a request (names as the spec spells them)."""
    headers = {"MCP-Protocol-Version": protocol_version, "Mcp-Method": method}
    name = name_of(method, params)
    if name is not None:
        headers["Mcp-Name"] = encode_header_value(name)
    return headers


def check_headers(headers: Mapping[str, str], method: str, params: Any) -> None:
    """Check the standard headers of a 2026 POST against its body.

    ``headers`` maps lower-case names to values. The body's ``_meta`` protocol version
    must equal ``MCP-Protocol-Version``; ``Mcp-Method`` must be present and equal the
    method; ``Mcp-Name`` must be present and equal (once decoded) the name or URI for
    ``tools/call``, ``prompts/get`` and ``resources/read``. Raises
    :func:`header_mismatch` naming the first header at fault.
    """
    version = headers.get(HEADER_PROTOCOL_VERSION)
    meta = params.get("_meta") if type(params) is dict else None
    body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
    if version is None:
        raise header_mismatch("the MCP-Protocol-Version header is missing")
    if type(body_version) is str and version != body_version:
        raise header_mismatch(
            f"MCP-Protocol-Version header {version[:40]!r} does not match "
            f"_meta[{META_PROTOCOL_VERSION!r}] {body_version[:40]!r}"
        )
    sent_method = headers.get(HEADER_METHOD)
    if sent_method is None:
        raise header_mismatch("the Mcp-Method header is missing")
    if sent_method != method:
        raise header_mismatch(
            f"Mcp-Method header {sent_method[:80]!r} does not match body method {method[:80]!r}"
        )
    field = NAME_FIELDS.get(method)
    if field is None:
        return
    sent_name = headers.get(HEADER_NAME)
    if sent_name is None:
        raise header_mismatch(f"the Mcp-Name header is missing (required for {method})")
    try:
        decoded = decode_header_value(sent_name)
    except ValueError as exc:
        raise header_mismatch(f"Mcp-Name header is malformed: {exc}") from None
    body_name = name_of(method, params)
    if decoded != body_name:
        shown = body_name[:80] if body_name is not None else None
        raise header_mismatch(
            f"Mcp-Name header value {decoded[:80]!r} does not match body {field} {shown!r}"
        )


def header_parameters(input_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The ``x-mcp-header`` annotations of a tool's input schema.

    Returns ``{lower-case header name (without the prefix): property path}``. Raises
    ``ValueError`` naming the property at fault when an annotation breaks the spec's
    rules: not a non-empty token, repeated (case-insensitively), on a non-primitive or
    ``number`` property, or not reachable from the root through ``properties`` alone.
    """
    found: dict[str, tuple[str, ...]] = {}

    def walk(schema: Any, path: tuple[str, ...], reachable: bool) -> None:
        if type(schema) is dict:
            if "x-mcp-header" in schema and path:
                add(schema, path, reachable)
            for key, value in schema.items():
                if key == "properties" and type(value) is dict:
                    for name, sub in value.items():
                        walk(sub, (*path, name), reachable)
                elif key not in ("x-mcp-header", "const", "default", "enum", "examples"):
                    walk(value, path, False)
        elif type(schema) is list:
            for item in schema:
                walk(item, path, False)

    def add(schema: dict[str, Any], path: tuple[str, ...], reachable: bool) -> None:
        where = ".".join(path)
        name = schema["x-mcp-header"]
        if type(name) is not str or not _TOKEN.match(name):
            raise ValueError(f"x-mcp-header of {where!r} must be a non-empty header token")
        if not reachable:
            raise ValueError(
                f"x-mcp-header of {where!r} is not reachable through 'properties' alone"
            )
        kind = schema.get("type")
        if kind not in ("string", "integer", "boolean"):
            raise ValueError(
                f"x-mcp-header of {where!r} needs type string, integer or boolean, not {kind!r}"
            )
        key = name.lower()
        if key in found:
            raise ValueError(f"x-mcp-header {name!r} is used twice (names are case-insensitive)")
        found[key] = path

    walk(dict(input_schema), (), True)
    return found


def _value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if type(node) is not dict:
            return None
        node = node.get(key)
    return node


def parameter_headers(
    arguments: Mapping[str, Any] | None, annotations: Mapping[str, tuple[str, ...]]
) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a client sends for a call (absent or null values, and
    values that are not primitives, send none)."""
    out: dict[str, str] = {}
    for name, path in annotations.items():
        text = header_text(_value_at(arguments, path))
        if text is not None:
            out[f"Mcp-Param-{name}"] = text
    return out


def check_parameter_headers(
    headers: Mapping[str, str],
    arguments: Any,
    annotations: Mapping[str, tuple[str, ...]],
) -> None:
    """Check the ``Mcp-Param-*`` headers of a ``tools/call`` against its arguments.

    For each annotated parameter: a value in the body needs the header, equal once
    decoded (integers compare as numbers); no value in the body needs no header, and a
    header then is a mismatch. Raises :func:`header_mismatch`.
    """
    for name, path in annotations.items():
        sent = headers.get(HEADER_PARAM_PREFIX + name)
        value = _value_at(arguments, path)
        header = f"Mcp-Param-{name}"
        if value is None:
            if sent is not None:
                raise header_mismatch(f"{header} is sent but the argument has no value")
            continue
        if sent is None:
            raise header_mismatch(f"{header} is missing (argument {'.'.join(path)!r} has a value)")
        try:
            decoded = decode_header_value(sent)
        except ValueError as exc:
            raise header_mismatch(f"{header} is malformed: {exc}") from None
        if not _same(decoded, value):
            raise header_mismatch(
                f"{header} value {decoded[:80]!r} does not match the argument {'.'.join(path)!r}"
            )


def _same(text: str, value: Any) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            number = float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            return False
        return abs(number) <= _MAX_SAFE_INTEGER and number == value
    if isinstance(value, str):
        return text == value
    return False
