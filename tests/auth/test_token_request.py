"""trimcp.auth.grants.token_request: one POST to a token endpoint, read as the RFC says.

A scripted :class:`Fetcher` answers each form POST in turn (no sockets): the refusals
name the endpoint, the grant and the server's error; a DPoP request is sent once more
only when the server asks for a nonce it gave (RFC 9449 §8), never in a loop; a
DPoP-bound token is refused when no proof was sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from trimcp.auth.dpop import DpopKey, DpopProofs
from trimcp.auth.errors import AuthorizationFailed
from trimcp.auth.fetch import Fetcher, FetchError, JsonResponse
from trimcp.auth.grants import token_request
from trimcp.auth.tokens import TokenSet

ENDPOINT = "https://as.example/token"
FORM = {"grant_type": "client_credentials", "client_id": "app"}


class Scripted(Fetcher):
    """Answers form POSTs from ``replies`` in turn; records what was sent."""

    def __init__(self, *replies: JsonResponse | FetchError, dpop: bool = False) -> None:
        super().__init__()
        self.replies = list(replies)
        self.sent: list[dict[str, str]] = []
        if dpop:
            self.dpop = DpopProofs(DpopKey.generate())

    async def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        assert url == ENDPOINT
        self.sent.append(dict(headers or {}))
        reply = self.replies.pop(0)
        if isinstance(reply, FetchError):
            raise reply
        return reply


def reply(status: int, body: Any, **headers: str) -> JsonResponse:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return JsonResponse(status, headers, data)


GOOD = {"access_token": "at", "token_type": "Bearer", "expires_in": 60}
NEEDS_NONCE = {"error": "use_dpop_nonce", "error_description": "send the nonce"}


async def request(fetcher: Scripted) -> TokenSet:
    return await token_request(fetcher, ENDPOINT, FORM, {"x-extra": "1"}, issuer="https://as")


async def test_a_good_answer_gives_the_tokens_and_records_the_issuer() -> None:
    fetcher = Scripted(reply(200, GOOD))
    tokens = await request(fetcher)
    assert (tokens.access_token, tokens.token_type, tokens.issuer) == ("at", "Bearer", "https://as")
    assert fetcher.sent == [{"x-extra": "1"}]


async def test_a_failed_exchange_is_an_authorization_failure() -> None:
    with pytest.raises(AuthorizationFailed, match="the token request failed: connection reset"):
        await request(Scripted(FetchError("connection reset")))


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            reply(400, {"error": "invalid_client", "error_description": "who?"}),
            "invalid_client: who?",
        ),
        (reply(401, {"error": "invalid_client"}), "(HTTP 401: invalid_client)"),
        (reply(500, b"<html>oops</html>"), "(HTTP 500)"),
        (reply(200, ["not", "an", "object"]), "(HTTP 200)"),
        (reply(200, b"not json"), "(HTTP 200)"),
    ],
)
async def test_a_refusal_names_the_endpoint_the_grant_and_the_error(
    answer: JsonResponse, says: str
) -> None:
    with pytest.raises(AuthorizationFailed) as refused:
        await request(Scripted(answer))
    said = str(refused.value)
    assert f"the token endpoint {ENDPOINT} refused the client_credentials grant" in said
    assert says in said


async def test_an_answer_without_a_token_is_refused() -> None:
    with pytest.raises(AuthorizationFailed, match="holds no access_token"):
        await request(Scripted(reply(200, {"token_type": "Bearer"})))


async def test_a_dpop_bound_token_is_refused_when_no_proof_was_sent() -> None:
    with pytest.raises(AuthorizationFailed, match="issued a DPoP-bound token"):
        await request(Scripted(reply(200, {**GOOD, "token_type": "DPoP"})))


async def test_a_dpop_request_sends_a_proof_and_keeps_a_bearer_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "trimcp.auth")
    fetcher = Scripted(reply(200, GOOD), dpop=True)
    assert (await request(fetcher)).token_type == "Bearer"
    assert "dpop" in fetcher.sent[0]
    said = [record.getMessage() for record in caplog.records]
    assert said == [f"{ENDPOINT} issued a Bearer token to a DPoP request"]
    caplog.clear()
    await request(Scripted(reply(200, {**GOOD, "token_type": "DPoP"}), dpop=True))
    await request(Scripted(reply(200, GOOD)))
    assert caplog.records == []  # said only when a DPoP request got a Bearer token


async def test_a_nonce_asked_for_is_sent_once_more_with_it() -> None:
    fetcher = Scripted(
        reply(400, NEEDS_NONCE, **{"dpop-nonce": "n1"}),
        reply(200, {**GOOD, "token_type": "DPoP"}),
        dpop=True,
    )
    assert (await request(fetcher)).token_type == "DPoP"
    assert len(fetcher.sent) == 2
    assert fetcher.sent[0]["dpop"] != fetcher.sent[1]["dpop"]


@pytest.mark.parametrize(
    "first",
    [
        reply(400, NEEDS_NONCE),  # asks for a nonce it does not give
        reply(400, {"error": "invalid_grant"}, **{"dpop-nonce": "n1"}),  # another error
        reply(401, NEEDS_NONCE, **{"dpop-nonce": "n1"}),  # not a 400
        reply(400, b"use_dpop_nonce", **{"dpop-nonce": "n1"}),  # not a JSON object
    ],
)
async def test_no_second_request_unless_a_new_nonce_is_asked_for(first: JsonResponse) -> None:
    fetcher = Scripted(first, reply(200, {**GOOD, "token_type": "DPoP"}), dpop=True)
    with pytest.raises(AuthorizationFailed, match="refused the client_credentials grant"):
        await request(fetcher)
    assert len(fetcher.sent) == 1


async def test_a_nonce_asked_for_twice_is_not_a_loop() -> None:
    fetcher = Scripted(
        reply(400, NEEDS_NONCE, **{"dpop-nonce": "n1"}),
        reply(400, NEEDS_NONCE, **{"dpop-nonce": "n2"}),
        reply(200, {**GOOD, "token_type": "DPoP"}),
        dpop=True,
    )
    with pytest.raises(AuthorizationFailed, match="use_dpop_nonce: send the nonce"):
        await request(fetcher)
    assert len(fetcher.sent) == 2


async def test_without_dpop_a_nonce_request_is_a_refusal() -> None:
    fetcher = Scripted(reply(400, NEEDS_NONCE, **{"dpop-nonce": "n1"}), reply(200, GOOD))
    with pytest.raises(AuthorizationFailed, match="use_dpop_nonce"):
        await request(fetcher)
    assert len(fetcher.sent) == 1
