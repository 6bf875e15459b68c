"""Workload identity (SEP-1933): the workload's JWT, read afresh for every token request
(a file the platform rotates in place, or a function), refused early when it expired.
The grant itself runs against the conformance suite's mock (``auth/wif-jwt-bearer`` in
tests/conformance) and is pinned here by its form."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import jwt
import pytest

from trimcp.auth import AuthorizationFailed, WorkloadIdentity
from trimcp.auth.discovery import Discovery
from trimcp.auth.fetch import Fetcher, JsonResponse
from trimcp.auth.grants import JWT_BEARER


def workload_jwt(subject: str, lifetime: float = 600) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://k8s.example",
        "sub": subject,
        "aud": "https://as.example.com",  # the authorization server it is for (FOUND)
        "exp": now + int(lifetime),
    }
    return jwt.encode(claims, "not-checked-by-the-client-" * 2, algorithm="HS256")


async def test_a_token_file_is_read_again_for_every_request(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(workload_jwt("first") + "\n")
    client = WorkloadIdentity(token_file=path)
    first = await client.workload_token()
    path.write_text(workload_jwt("rotated"))  # the platform rotates it in place
    second = await client.workload_token()
    assert jwt.decode(first, options={"verify_signature": False})["sub"] == "first"
    assert jwt.decode(second, options={"verify_signature": False})["sub"] == "rotated"


async def test_a_token_function_sync_or_async() -> None:
    tokens = iter([workload_jwt("a"), workload_jwt("b")])

    async def current() -> str:
        return next(tokens)

    client = WorkloadIdentity(token=current)
    assert await client.workload_token() != await client.workload_token()
    assert await WorkloadIdentity(token=lambda: workload_jwt("c")).workload_token()


async def test_an_expired_missing_or_malformed_token_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    with pytest.raises(AuthorizationFailed, match=r"expired .* rotates it"):
        await WorkloadIdentity(token=workload_jwt("old", lifetime=-60)).workload_token()
    with pytest.raises(AuthorizationFailed, match="cannot read the workload token"):
        await WorkloadIdentity(token_file=tmp_path / "absent").workload_token()
    with pytest.raises(AuthorizationFailed, match="not a JWT"):
        await WorkloadIdentity(token="opaque").workload_token()
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentity()


class Recorded(Fetcher):
    """A fetcher whose token endpoint answers from a script and records each form."""

    def __init__(self, answer: bytes, status: int = 200) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []
        self.answer = answer
        self.status = status

    async def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        self.forms.append(dict(form))
        return JsonResponse(self.status, {}, self.answer)


FOUND = Discovery(
    resource="https://mcp.example.com/mcp",
    issuer="https://as.example.com",
    metadata={"issuer": "https://as.example.com", "token_endpoint": "https://as.example.com/t"},
)


async def test_the_grant_and_a_refusal_that_is_not_retried() -> None:
    token = workload_jwt("w")
    fetcher = Recorded(b'{"access_token": "at", "token_type": "Bearer"}')
    stored = await WorkloadIdentity(token=token, client_id="wl").obtain(fetcher, FOUND, "mcp", None)
    assert stored.tokens is not None
    assert stored.tokens.access_token == "at"
    assert fetcher.forms == [
        {
            "grant_type": JWT_BEARER,
            "assertion": token,
            "resource": "https://mcp.example.com/mcp",
            "scope": "mcp",
            "client_id": "wl",
        }
    ]
    refusing = Recorded(b'{"error": "invalid_grant", "error_description": "untrusted"}', 400)
    with pytest.raises(AuthorizationFailed, match="invalid_grant: untrusted"):
        await WorkloadIdentity(token=token).obtain(refusing, FOUND, None, None)
    assert len(refusing.forms) == 1
    assert "client_id" not in refusing.forms[0]
