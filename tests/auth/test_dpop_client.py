"""The client's side of DPoP in small pieces: challenges naming DPoP, the key kept with
the tokens in a file, proofs that name the request and carry the server's nonce, and a
server that keeps asking for a nonce it already gave (refused, not looped on).
End to end: tests/auth/test_oidc_dpop.py and the conformance scenarios auth/dpop*."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest

from trimcp.auth import AuthorizationFailed, DpopKey, FileTokenStore, OAuthClient
from trimcp.auth.discovery import Discovery, parse_challenge
from trimcp.auth.dpop import access_token_hash
from trimcp.auth.tokens import StoredAuth, TokenSet

URL = "https://mcp.example.com/mcp"


def test_challenges_with_bearer_and_dpop() -> None:
    both = parse_challenge(
        'Bearer scope="a", resource_metadata="https://m/x", DPoP algs="ES256", '
        'error="use_dpop_nonce", error_description="say DPoP again"'
    )
    assert both.dpop
    assert both.error == "use_dpop_nonce"
    assert both.scope == "a"
    assert "algs" not in both.params
    quoted = parse_challenge('Bearer error="invalid_token", error_description="use DPoP, x"')
    assert not quoted.dpop  # a scheme name inside a quoted value is not a challenge
    assert quoted.error == "invalid_token"


def test_when_the_client_asks_for_dpop() -> None:
    supported = {"dpop_signing_alg_values_supported": ["ES256"]}
    found = Discovery(resource=URL, issuer="https://as", metadata=supported)
    required = Discovery(
        resource=URL,
        issuer="https://as",
        metadata=supported,
        resource_metadata={"dpop_bound_access_tokens_required": True},
    )
    unsupported = Discovery(resource=URL, issuer="https://as", metadata={})
    offered = parse_challenge('DPoP algs="ES256"')
    bearer = parse_challenge("Bearer")
    assert OAuthClient().wants_dpop(found, offered)
    assert OAuthClient().wants_dpop(required, bearer)
    assert not OAuthClient().wants_dpop(found, bearer)
    assert not OAuthClient().wants_dpop(unsupported, offered)
    assert not OAuthClient(dpop_algorithm="PS256").wants_dpop(found, offered)
    assert OAuthClient(dpop=True).wants_dpop(unsupported, bearer)
    assert not OAuthClient(dpop=False).wants_dpop(required, offered)


async def test_the_key_is_kept_with_the_tokens(tmp_path: Path) -> None:
    key = DpopKey.generate()
    store = FileTokenStore(tmp_path / "tokens.json")
    tokens = TokenSet(access_token="t", token_type="DPoP")
    await store.save(URL, StoredAuth(tokens=tokens, dpop_key=key.pem, dpop_algorithm="ES256"))
    loaded = await store.load(URL)
    assert loaded is not None
    assert loaded.tokens is not None
    assert loaded.tokens.token_type == "DPoP"
    assert loaded.dpop_key is not None
    assert DpopKey(loaded.dpop_key, loaded.dpop_algorithm).thumbprint == key.thumbprint


async def test_proofs_and_the_nonce_a_server_gives() -> None:
    key = DpopKey.generate()
    client = OAuthClient()
    await client.store.save(
        URL, StoredAuth(tokens=TokenSet(access_token="tok", token_type="DPoP"), dpop_key=key.pem)
    )
    session = client.session(URL, spawn=print)  # no flow runs here: nothing is spawned
    authorization = await session.authorization()
    assert authorization == "DPoP tok"

    def claims() -> dict[str, object]:
        proof = session.proof_headers("GET", URL + "?q=1", authorization)["dpop"]
        assert jwt.get_unverified_header(proof)["jwk"] == key.public_jwk
        decoded: dict[str, object] = jwt.decode(proof, options={"verify_signature": False})
        return decoded

    first = claims()
    assert (first["htm"], first["htu"], first["ath"]) == ("GET", URL, access_token_hash("tok"))
    assert "nonce" not in first
    assert claims()["jti"] != first["jti"]  # fresh every time
    challenge = 'DPoP error="use_dpop_nonce"'
    session.remember_dpop_nonce("n-1")
    await session.challenge(401, challenge, authorization)
    assert claims()["nonce"] == "n-1"
    # The same nonce again (or none): the server will not be satisfied; say so.
    session.remember_dpop_nonce("n-1")
    with pytest.raises(AuthorizationFailed, match="DPoP nonce"):
        await session.challenge(401, challenge, authorization)
    with pytest.raises(AuthorizationFailed, match="DPoP nonce"):
        await session.challenge(401, challenge, authorization)
    assert session.proof_headers("POST", URL, "Bearer tok") == {}
