"""Choosing the era and the version when a client connects (see :mod:`.stateless`).

``auto``: send ``server/discover`` with 2026 ``_meta`` (bounded by ``discover_timeout``).

- A ``DiscoverResult``: the server is modern; take our newest version it lists.
- ``UnsupportedProtocolVersionError`` (-32022): modern too; retry once with a version from
  its ``supported`` list (or fall back to ``initialize`` if it only lists session versions).
- Any other error, or no answer in time: a 2025 (or older) server; send ``initialize``
  (codes say little here: the TypeScript SDK answers ``-32000`` "Server not initialized";
  a server that cannot be reached fails ``initialize`` the same way). Only a session
  that closed, and an authorization that failed (the server was reached and refused us;
  ``initialize`` would run the whole authorization again), are raised as they are.

The decision is made once per client; nothing is re-probed later.
"""

from __future__ import annotations

import logging

import attrs

from trimcp._record import Record
from trimcp.client.stateless import (
    Era,
    ModePlan,
    NoCommonVersion,
    choose_version,
    is_modern_error,
    negotiated_from_discover,
    request_meta,
    supported_of,
)
from trimcp.errors import (
    LocalProtocolError,
    McpError,
    RequestTimeout,
    SessionClosed,
    authorization_failed,
)
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS, V2025_11_25
from trimcp.session import Session
from trimcp.types import (
    ClientCapabilities,
    DiscoverResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    RequestParams,
)

logger = logging.getLogger("trimcp.client")


@attrs.frozen(repr=False, eq=False)
class Connected(Record):
    """What connecting produced: the era, the agreement, and the server's own answer."""

    era: Era
    negotiated: Negotiated
    answer: InitializeResult | DiscoverResult


class _Legacy(Exception):
    """Internal: the probe says "legacy server"; ``version`` is the one to offer."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


async def connect(
    session: Session,
    plan: ModePlan,
    client_info: Implementation,
    capabilities: ClientCapabilities,
    discover_timeout: float,
) -> Connected:
    """Decide the era over ``session`` (fresh, role client) and complete the connection.

    Raises :class:`NoCommonVersion` when the server speaks no version we do,
    :class:`McpError` for a server error that ends the attempt, ``SessionClosed`` /
    ``RequestTimeout`` as the underlying requests do. Cancellation: abandons the attempt;
    the session is then unusable and should be closed.
    """
    legacy_version = plan.legacy_version
    if plan.discover is not None:
        # Tasks moved to an extension in 2026: the session-era capability is not sent.
        modern = attrs.evolve(capabilities, tasks=None)
        try:
            return await _discover(session, plan, client_info, modern, discover_timeout)
        except _Legacy as legacy:
            legacy_version = legacy.version
    if legacy_version != V2025_11_25:  # tasks exist only in 2025-11-25
        capabilities = attrs.evolve(capabilities, tasks=None)
    params = InitializeRequestParams(
        protocol_version=legacy_version, capabilities=capabilities, client_info=client_info
    )
    result = await session.initialize(params)
    if not isinstance(result, InitializeResult):
        raise LocalProtocolError("initialize did not produce an InitializeResult")
    negotiated = session.negotiated
    assert negotiated is not None
    return Connected(Era.LEGACY, negotiated, result)


async def _discover(
    session: Session,
    plan: ModePlan,
    client_info: Implementation,
    capabilities: ClientCapabilities,
    timeout: float,
) -> Connected:
    assert plan.discover is not None
    ours = (plan.discover,) if not plan.may_fall_back else STATELESS_VERSIONS
    version = plan.discover
    retried = False
    while True:
        meta = request_meta(version, client_info, capabilities)
        try:
            result = await session.send_request(
                "server/discover", RequestParams(meta=meta), timeout=timeout
            )
        except (RequestTimeout, SessionClosed, McpError) as exc:
            version = _after_error(exc, plan, ours, version, retried)
            retried = True
            continue
        if not isinstance(result, DiscoverResult):
            raise LocalProtocolError("server/discover did not produce a DiscoverResult")
        chosen = choose_version(ours, result.supported_versions)
        if chosen is None:
            _fall_back_or_raise(plan, result.supported_versions, ours)
        assert chosen is not None
        negotiated = negotiated_from_discover(chosen, client_info, capabilities, result)
        session.adopt_stateless(negotiated)
        logger.debug("speaking %s with %s (stateless)", chosen, negotiated.server_info.name)
        return Connected(Era.MODERN, negotiated, result)


def _after_error(
    exc: McpError, plan: ModePlan, ours: tuple[str, ...], tried: str, retried: bool
) -> str:
    """The version to retry with, or raise what ends the probe (``_Legacy`` included)."""
    if isinstance(exc, RequestTimeout):
        if plan.may_fall_back:
            logger.info("no answer to server/discover; assuming a 2025 (session) server")
            raise _Legacy(plan.legacy_version) from None
        raise RequestTimeout(
            f"mode={tried!r}: no answer to server/discover; a 2025 server that ignores it "
            "needs mode='auto' or 'legacy'"
        ) from exc
    if isinstance(exc, SessionClosed) or authorization_failed(exc):
        # The server was reached and refused us: another era would authorize again.
        raise exc
    if _refused_authorization(exc):
        # The HTTP gate refused (401/403, after any login the transport could do): every
        # request meets the same gate, so falling back would only log in once more.
        raise exc
    supported = supported_of(exc)
    if supported is not None:
        chosen = choose_version(ours, supported)
        if chosen is None:
            _fall_back_or_raise(plan, supported, ours)
        assert chosen is not None
        if retried:
            # Asked twice with versions it lists and refused both: do not loop.
            raise NoCommonVersion(supported, ours) from exc
        logger.info("the server refused %s; retrying with %s", tried, chosen)
        return chosen
    if is_modern_error(exc):
        raise exc
    if not plan.may_fall_back:
        raise McpError(
            exc.code,
            f"mode={tried!r} needs a 2026-07-28 server, but server/discover failed "
            f"({exc.message}); a 2025 server needs mode='auto' or 'legacy'",
            exc.data,
        ) from exc
    logger.info("server/discover failed (%s); assuming a 2025 (session) server", exc.message)
    raise _Legacy(plan.legacy_version) from None


def _refused_authorization(exc: McpError) -> bool:
    data = exc.data if isinstance(exc.data, dict) else {}
    return data.get("httpStatus") in (401, 403)


def _fall_back_or_raise(plan: ModePlan, supported: list[str], ours: tuple[str, ...]) -> None:
    """A modern server listing no 2026 version we speak: use a session version it lists
    (when allowed), else raise :class:`NoCommonVersion`."""
    session_choice = choose_version(SUPPORTED_VERSIONS, supported)
    if plan.may_fall_back and session_choice is not None:
        raise _Legacy(session_choice)
    everything = ours + SUPPORTED_VERSIONS if plan.may_fall_back else ours
    raise NoCommonVersion(supported, everything)
