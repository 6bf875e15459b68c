"""Admission: may this request be served, and with which typed params? One rule, both eras.

:func:`admit_request` is the one place that decides, from the method table, whether an
inbound request exists in the revision in force, may come from this peer, is offered by
our capabilities, and what its params are as typed values. The session-era
:class:`~trimcp.protocol.connection.Connection` calls it for every request it reads; the
2026-07-28 path calls it for every stateless request. The eras differ only where the
spec makes them differ: 2026-07-28 removed some methods (answered ``-32601`` with the
reason), moved ``tasks/*`` to an extension (whose handlers check their own params), and
lets the three input-capable requests carry ``inputResponses``. Pure: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from trimcp import serde
from trimcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RemoteProtocolError
from trimcp.protocol import tasks_ext
from trimcp.protocol.methods import METHODS, Method
from trimcp.protocol.versions import STATELESS_VERSIONS

Peer = Literal["client", "server"]

#: What replaces each session-era method that 2026-07-28 removed.
_REMOVED_HINTS: Final[Mapping[str, str]] = {
    "initialize": "send server/discover, or any request with its _meta envelope",
    "ping": "any request answers whether the server is up",
    "logging/setLevel": "put _meta['io.modelcontextprotocol/logLevel'] on each request instead",
    "resources/subscribe": "use subscriptions/listen with resourceSubscriptions",
    "resources/unsubscribe": "close the subscriptions/listen stream",
}


def has_capability(capabilities: Mapping[str, Any] | None, path: tuple[str, ...]) -> bool:
    """Whether a wire-form capabilities object declares ``path`` (present, not false)."""
    node: Any = capabilities
    for key in path:
        if type(node) is not dict:
            return False
        node = node.get(key)
        if node is None or node is False:
            return False
    return True


def removed_method(method: str) -> RemoteProtocolError:
    """``-32601`` for a session-era method sent in a 2026 request, naming what replaces it."""
    hint = _REMOVED_HINTS.get(method, "it does not exist in 2026-07-28")
    return RemoteProtocolError(
        METHOD_NOT_FOUND, f"Method not found: {method} was removed in 2026-07-28 ({hint})"
    )


def admit_request(
    method: str,
    params: Any,
    *,
    peer: Peer,
    version: str | None,
    capabilities: Mapping[str, Any] | None,
    structure: bool = True,
) -> Any:
    """The typed params of an inbound request ``method``, or a refusal.

    ``peer``: who sent it. ``version``: the revision in force (None: not negotiated yet,
    so no revision check). ``capabilities``: ours, in wire form (None: not declared yet,
    so no capability check). ``structure=False`` leaves the params as they came (a relay
    passes them on untouched). A method the table does not know passes with its params
    as they are: whoever serves it answers it (or ``-32601``).

    Raises :class:`~trimcp.errors.RemoteProtocolError`: ``-32601`` for a method this peer
    may not send, that does not exist in ``version`` or that our capabilities do not
    offer; ``-32602`` (with the bad field's ``path`` in ``data``) for params that do not
    fit the method.
    """
    spec = admitted_method(method, peer=peer, version=version, capabilities=capabilities)
    return admitted_params(
        spec, params, stateless=version in STATELESS_VERSIONS, structure=structure
    )


def admitted_method(
    method: str, *, peer: Peer, version: str | None, capabilities: Mapping[str, Any] | None
) -> Method[Any, Any] | None:
    """The first half of :func:`admit_request`, which depends on the method alone: its
    row of the table, None when its params pass as they are (a method the table does not
    know, an extension method in 2026-07-28), or the ``-32601`` refusal."""
    spec = METHODS.get(method)  # (lookup and is_stateless, inline: every request asks)
    if version in STATELESS_VERSIONS:
        if spec is not None and spec.removed_in_stateless:
            raise removed_method(method)
        if method in tasks_ext.METHODS:
            return None  # an extension method: its handler checks its params
    if spec is None:
        return None
    if spec.kind != "request" or spec.sender not in (peer, "both"):
        raise RemoteProtocolError(
            METHOD_NOT_FOUND, f"Method not found: {method} is not a request a {peer} may send"
        )
    if version is not None and version not in spec.revisions:
        raise RemoteProtocolError(
            METHOD_NOT_FOUND,
            f"Method not found: {method} does not exist in protocol version {version}",
        )
    capability = spec.capability
    if (
        capability is not None
        and capabilities is not None
        and not has_capability(capabilities, capability)
    ):
        raise RemoteProtocolError(
            METHOD_NOT_FOUND,
            f"Method not found: {method} (capability {'.'.join(capability)} was not declared)",
        )
    return spec


#: :func:`admitted_params`' default ``params_type``: the method's own.
_OF_SPEC: Any = object()


def admitted_params(
    spec: Method[Any, Any] | None,
    params: Any,
    stateless: bool,
    structure: bool = True,
    params_type: Any = _OF_SPEC,
) -> Any:
    """The second half of :func:`admit_request`: the params of a request whose method
    was admitted (``spec``, from :func:`admitted_method`), typed; ``-32602`` when they do
    not fit. Every request asks: ``stateless`` may be given by position, the cheaper
    call; so may ``params_type``, ``spec.params_type`` kept by a caller that asks for the
    same method again and again (the property costs a Python frame per request)."""
    if spec is None:
        return params
    if stateless and spec.input_capable and type(params) is dict and "inputResponses" in params:
        _check_input_responses(params["inputResponses"])
    if params_type is _OF_SPEC:
        params_type = spec.params_type
    if not structure or params_type is None:
        return params
    try:
        return serde.structure(params if params is not None else {}, params_type)
    except serde.ShapeError as exc:
        raise RemoteProtocolError(
            INVALID_PARAMS,
            f"Invalid params for {spec.name}: {exc}",
            {"path": exc.path, "reason": exc.reason},
        ) from None


def _invalid(message: str, path: str) -> RemoteProtocolError:
    return RemoteProtocolError(INVALID_PARAMS, message, {"path": path})


def _check_input_responses(value: Any) -> None:
    if type(value) is not dict:
        raise _invalid(
            "Invalid params: inputResponses must be an object mapping input keys to responses",
            "params.inputResponses",
        )
    for key, answer in value.items():
        if type(answer) is not dict:
            raise _invalid(
                f"Invalid params: inputResponses[{key[:100]!r}] must be a response object",
                f"params.inputResponses.{key[:100]}",
            )
