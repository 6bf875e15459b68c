"""The mark of an error this process made up (trimcp.errors.LocalError, made_here): it
survives the wire form a transport's errors travel in, and nobody else's error carries it."""

from __future__ import annotations

from trimcp.errors import (
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    MADE_HERE,
    LocalError,
    McpError,
    RequestTimeout,
    authorization_failed,
    made_here,
)
from trimcp.http.errors import AuthorizationRefused, HttpClientError, HttpStatusError
from trimcp.protocol.jsonrpc import ErrorResponse, classify, encode_error, parse_json


def _round_trip(error: McpError) -> McpError:
    """``error`` as a transport hands it to the session: an error response, decoded."""
    decoded = classify(parse_json(encode_error(7, error)))
    assert isinstance(decoded, ErrorResponse)
    return decoded.error


def test_an_error_made_here_stays_marked_through_its_wire_form() -> None:
    for error in (
        HttpClientError("cannot connect to http://127.0.0.1:1/mcp: refused"),
        HttpStatusError(502, "http://127.0.0.1:1/mcp", "bad gateway"),
        AuthorizationRefused(401, "http://127.0.0.1:1/mcp", detail="no token"),
        LocalError(INTERNAL_ERROR, "a limit of this client"),
    ):
        assert made_here(error)
        received = _round_trip(error)
        assert type(received) is McpError
        assert made_here(received), error
        assert (received.code, received.message) == (error.code, error.message)
    # The raised object's data is what its class documents; only the wire form adds the mark.
    status = HttpStatusError(404, "http://127.0.0.1:1/mcp")
    assert status.data == {"httpStatus": 404}
    wire = _round_trip(status).data
    assert {key: value for key, value in wire.items() if key != MADE_HERE} == {"httpStatus": 404}


def test_the_sessions_own_errors_are_made_here() -> None:
    assert made_here(RequestTimeout("tools/call got no answer within 5s"))


def test_an_error_from_anyone_else_is_not_made_here() -> None:
    assert not made_here(McpError(CONNECTION_CLOSED, "Session is closing"))
    assert not made_here(McpError(INTERNAL_ERROR, "x", {MADE_HERE: True}))
    # What another process made up (a proxy relaying its own client's error) has its mark.
    assert not made_here(McpError(INTERNAL_ERROR, "x", {MADE_HERE: "0123456789abcdef"}))
    assert not made_here(McpError(INTERNAL_ERROR, "x", [MADE_HERE]))


def test_only_our_own_authorization_failure_ends_connecting() -> None:
    # Was: any error whose data said {"authorizationFailed": true} counted, so a server (or
    # an error a proxy relays from its own client) could stop a client's era fallback.
    ours = AuthorizationRefused(401, "http://127.0.0.1:1/mcp", detail="login refused")
    assert authorization_failed(ours)
    assert authorization_failed(_round_trip(ours))
    sent_by_a_peer = McpError(INTERNAL_ERROR, "HTTP 401", {AUTHORIZATION_FAILED: True})
    assert not authorization_failed(sent_by_a_peer)
    assert not authorization_failed(_round_trip(sent_by_a_peer))
    relayed = McpError(INTERNAL_ERROR, "HTTP 401", {AUTHORIZATION_FAILED: True, MADE_HERE: "x"})
    assert not authorization_failed(relayed)
