"""Preparing one 2026-07-28 request, sans I/O: read its ``_meta``, agree, admit, type.

A 2026 request carries its protocol version, client capabilities and client info. Before
anything runs, :func:`prepare` reads that envelope into the request's own
:class:`~trimcp.protocol.negotiated.Negotiated` (through the server's
:class:`Negotiator`), admits the method and types its params with the one admission rule of
both eras (:func:`~trimcp.protocol.admission.admit_request`), and returns a
:class:`Prepared` request, or raises :class:`RequestRefused` carrying the error to answer
with. Every transport (HTTP, stdio, the proxy) prepares through it; running the handler
is the session layer's job (:mod:`trimcp.session.stateless`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar, overload, runtime_checkable

import attrs

from trimcp._record import Record
from trimcp.errors import UNSUPPORTED_PROTOCOL_VERSION, McpError, RemoteProtocolError
from trimcp.protocol import modern
from trimcp.protocol.admission import admitted_method, admitted_params
from trimcp.protocol.connection import wire_capabilities
from trimcp.protocol.jsonrpc import Request, RequestId, encode_error
from trimcp.protocol.methods import Method
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS
from trimcp.serde import ShapeError, StructureHook, structure_attempt
from trimcp.serde import structure as _structure


@runtime_checkable
class Negotiator(Protocol):
    """What a server offers 2026-07-28 requests: ``negotiate_request`` builds one request's
    agreement from its ``_meta`` (raise :class:`RemoteProtocolError` to refuse it, e.g.
    ``-32021``); ``advertised_versions`` are the versions an
    ``UnsupportedProtocolVersionError`` names."""

    @property
    def advertised_versions(self) -> tuple[str, ...]: ...

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated: ...


class RequestRefused(Exception):
    """A 2026 request refused before its handler ran; ``error`` is the answer.

    ``malformed``: the envelope itself was at fault (HTTP 400 whatever the code; see
    :func:`~trimcp.protocol.modern.http_status`).
    """

    def __init__(self, request_id: RequestId, error: McpError, *, malformed: bool) -> None:
        super().__init__(error.message)
        self.request_id = request_id
        self.error = error
        self.malformed = malformed

    def encode(self) -> bytes:
        return encode_error(self.request_id, self.error)

    @property
    def http_status(self) -> int:
        return modern.http_status(self.error.code, malformed=self.malformed)


@attrs.define(repr=False, eq=False)
class Prepared(Record):
    """A 2026 request that passed its checks, ready to run (made once per request and only
    read: not frozen, since a frozen attrs class costs about 1,000 more instructions per
    field to make; made positionally, the cheaper call)."""

    request_id: RequestId
    method: str
    params: Any
    progress_token: int | str | None
    negotiated: Negotiated
    trace: modern.TraceContext | None = None


_T = TypeVar("_T")

#: What :func:`prepare` makes of a request that passed its checks, from its parts (in
#: :class:`Prepared`'s order).
MakePrepared = Callable[
    [RequestId, str, Any, "int | str | None", Negotiated, "modern.TraceContext | None"], _T
]


@overload
def prepare(handler: Negotiator, request: Request) -> Prepared: ...


@overload
def prepare(handler: Negotiator, request: Request, make: MakePrepared[_T]) -> _T: ...


def prepare(handler: Negotiator, request: Request, make: MakePrepared[Any] = Prepared) -> Any:
    """Check a 2026 request and build its :class:`Negotiated` (sans I/O).

    Returns a :class:`Prepared` request, or what ``make`` makes of its parts (a transport
    that runs the request itself makes its context directly: one object fewer per
    request).

    Raises :class:`RequestRefused`: ``-32602`` for a missing or malformed ``_meta``
    field, ``-32022`` for an unsupported version (both malformed), ``-32601`` for a
    removed or unknown method, ``-32602`` for params that do not fit the method.
    """
    request_id = request.id
    try:
        meta = modern.read_request_meta(request.params)
    except RemoteProtocolError as exc:
        if exc.code == UNSUPPORTED_PROTOCOL_VERSION and type(exc.data) is dict:
            # Named with every version this server speaks (asked only now: each ask makes
            # a new tuple).
            exc = modern.unsupported_version(exc.data["requested"], handler.advertised_versions)
        raise RequestRefused(request_id, exc, malformed=True) from None
    try:
        negotiated = handler.negotiate_request(meta)
    except RemoteProtocolError as exc:
        raise RequestRefused(request_id, exc, malformed=True) from None
    method = request.method
    params = request.params
    try:
        entry = _admitted.get((method, id(negotiated)))
        if entry is None or entry[0] is not negotiated:  # not asked before (see _admitted)
            entry = _admit_method(method, negotiated)
        params_type = entry[3]
        attempt = entry[4]  # None exactly when params_type is
        if attempt is not None and type(params) is dict and "inputResponses" not in params:
            # What admitted_params does for these params (no input responses to check:
            # structure them), without its frame nor structure()'s (its first attempt,
            # kept with the method); params it does not take go to structure(), and a
            # ShapeError to admitted_params for its -32602.
            try:
                typed = attempt(params, params_type)
            except Exception:
                try:
                    typed = _structure(params, params_type)
                except ShapeError:
                    typed = admitted_params(entry[1], params, entry[2], True, params_type)
        else:
            typed = admitted_params(entry[1], params, entry[2], True, params_type)
    except RemoteProtocolError as exc:
        raise RequestRefused(request_id, exc, malformed=False) from None
    # read_request_meta() checked that params._meta is an object.
    token = params["_meta"].get("progressToken") if params is not None else None
    return make(
        request_id,
        method,
        typed,
        token if type(token) is int or type(token) is str else None,
        negotiated,
        meta.trace,
    )


#: Methods admitted under an agreement, by (method, id of the agreement): what
#: :func:`~trimcp.protocol.admission.admitted_method` said, which depends on nothing else,
#: whether the agreed version is a stateless one, the method's params type and
#: :func:`~trimcp.serde.structure_attempt` of it.
#: Agreements are frozen and shared (:func:`~trimcp.protocol.modern.negotiated`), so a
#: client's requests ask the table once per method (of the table: others are not kept).
#: Each entry holds its agreement (so the
#: id stays its own); at most ``_ADMITTED_ENTRIES``, the oldest goes first.
_Admitted = tuple[Negotiated, "Method[Any, Any] | None", bool, Any, "StructureHook | None"]
_admitted: dict[tuple[str, int], _Admitted] = {}
_ADMITTED_ENTRIES: Final = 256


def _admit_method(method: str, negotiated: Negotiated) -> _Admitted:
    """The method's row (see :func:`~trimcp.protocol.admission.admitted_method`), whether
    the agreed version is a stateless one and the row's params type, kept in
    :data:`_admitted` (which :func:`prepare` reads first), after the agreement."""
    version = negotiated.protocol_version
    spec = admitted_method(
        method,
        peer="client",
        version=version,
        capabilities=wire_capabilities(negotiated.server_capabilities),
    )  # raises RemoteProtocolError (not kept: a refusal is made anew each time)
    params_type = None if spec is None else spec.params_type
    entry = (
        negotiated,
        spec,
        version in STATELESS_VERSIONS,
        params_type,
        None if params_type is None else structure_attempt(params_type),
    )
    if spec is not None:  # a method of the table (a short name: an unknown one could be long)
        if len(_admitted) >= _ADMITTED_ENTRIES:
            del _admitted[next(iter(_admitted))]
        _admitted[(method, id(negotiated))] = entry
    return entry
