"""How :class:`DpopChecker` reads a proof: PyJWT parses a client's header once (its key),
then each proof's payload and signature are decoded here (strict, canonical base64url)
and the signature checked by PyJWT's algorithm object.

The decoding is the part trimcp does itself, so it is held to PyJWT's own verdict: a
proof the checker's signature step accepts must be one ``jwt.PyJWS().decode`` accepts
(a property over mutated proofs, for each kind of key), and the spellings RFC 7515
forbids (padding, a second spelling of the same bytes, characters outside the alphabet)
are refused outright.
"""

from __future__ import annotations

import base64
import json
import time
import warnings
from typing import Any

import jwt
import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trimcp.auth.dpop import DpopChecker, DpopError, DpopKey, access_token_hash, b64url

URL = "http://127.0.0.1:8000/mcp"
TOKEN = "header.payload.signature"
KEYS = {alg: DpopKey.generate(alg) for alg in ("ES256", "RS256", "EdDSA")}


def check(checker: DpopChecker, proof: str, key: DpopKey) -> str:
    """``checker.check`` of ``proof`` for a POST to URL with TOKEN, bound to ``key``."""

    async def run() -> str:
        return await checker.check(
            proof, method="POST", url=URL, access_token=TOKEN, jkt=key.thumbprint
        )

    return trio.run(run)


def pyjwt_accepts(proof: str, key: DpopKey) -> bool:
    try:
        jwt.PyJWS().decode(proof, key._private.public_key(), algorithms=[key.algorithm])
    except jwt.PyJWTError:
        return False
    return True


def by_hand(key: DpopKey, header: dict[str, Any]) -> str:
    """A proof whose header is exactly ``header`` (with typ, alg and jwk), which
    ``jwt.encode`` would not write (it drops ``b64: true``); signed with PyJWT."""
    full = {"typ": "dpop+jwt", "alg": key.algorithm, "jwk": key.public_jwk, **header}
    body = {"jti": "h1", "htm": "POST", "htu": URL, "iat": int(time.time())}
    body["ath"] = access_token_hash(TOKEN)
    signing_input = f"{b64url(json.dumps(full).encode())}.{b64url(json.dumps(body).encode())}"
    algorithm = jwt.get_algorithm_by_name(key.algorithm)
    return f"{signing_input}.{b64url(algorithm.sign(signing_input.encode(), key._private))}"


#: Characters a mutation may put in a proof: the alphabet, the other base64 alphabet, the
#: pad, the separator, whitespace and bytes that are not ASCII.
_CHARS = st.sampled_from([*"AQgwBz09_-+/=. \t\n\x00é\u2024"])


@st.composite
def mutated(draw: st.DrawFn, proof: str) -> str:
    """``proof`` with a few characters replaced, inserted or removed, or padding added."""
    text = list(proof)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["replace", "insert", "delete", "pad"]))
        if action == "pad":
            segment = draw(st.integers(0, 2))
            parts = "".join(text).split(".")
            if segment < len(parts):
                parts[segment] += draw(st.sampled_from(["=", "=="]))
            text = list(".".join(parts))
        elif action == "insert":
            text.insert(where, draw(_CHARS))
        elif text and where < len(text):
            if action == "replace":
                text[where] = draw(_CHARS)
            else:
                del text[where]
    return "".join(text)


@pytest.mark.parametrize("alg", sorted(KEYS))
def test_a_good_proof_passes_both(alg: str) -> None:
    key = KEYS[alg]
    proof = key.proof("POST", URL, access_token=TOKEN)
    assert pyjwt_accepts(proof, key)
    assert check(DpopChecker(), proof, key) == key.thumbprint


@pytest.mark.parametrize("alg", sorted(KEYS))
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_never_more_lenient_than_pyjwt(alg: str, data: st.DataObject) -> None:
    key = KEYS[alg]
    original = key.proof("POST", URL, access_token=TOKEN)
    proof = data.draw(mutated(original))
    checker = DpopChecker()
    check(checker, original, key)  # the header is known: the mutation meets the fast path
    try:
        check(checker, proof, key)
    except DpopError as refused:
        if "already used" in str(refused):  # the same claims and key: the signature held
            assert pyjwt_accepts(proof, key), proof
        return
    assert pyjwt_accepts(proof, key), proof


def _respell_last(segment: str) -> str | None:
    """``segment`` with its last character swapped for one that decodes to the same bytes
    (its unused low bits set), or None when it has none."""
    if len(segment) % 4 in (0, 1):
        return None
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return segment[:-1] + alphabet[alphabet.index(segment[-1]) + 1]


@pytest.mark.parametrize("part", [1, 2])
def test_a_second_spelling_of_a_segment_is_refused(part: int) -> None:
    key = KEYS["ES256"]
    for _ in range(20):  # find a proof whose segment has unused bits to set
        proof = key.proof("POST", URL, access_token=TOKEN)
        parts = proof.split(".")
        respelled = _respell_last(parts[part])
        if respelled is not None:
            break
    assert respelled is not None
    pad = "=" * (-len(respelled) % 4)
    assert base64.urlsafe_b64decode(respelled + pad) == base64.urlsafe_b64decode(parts[part] + pad)
    parts[part] = respelled
    checker = DpopChecker()
    check(checker, key.proof("POST", URL, access_token=TOKEN), key)  # its header is known
    with pytest.raises(DpopError, match="not canonical base64url"):
        check(checker, ".".join(parts), key)


@pytest.mark.parametrize("part", [1, 2])
def test_padding_is_refused(part: int) -> None:
    key = KEYS["ES256"]
    for _ in range(20):
        parts = key.proof("POST", URL, access_token=TOKEN).split(".")
        if len(parts[part]) % 4:
            break
    parts[part] += "=" * (-len(parts[part]) % 4)
    checker = DpopChecker()
    check(checker, key.proof("POST", URL, access_token=TOKEN), key)  # its header is known
    with pytest.raises(DpopError, match="not canonical base64url"):
        check(checker, ".".join(parts), key)


@pytest.mark.parametrize(
    ("proof", "says"),
    [
        ("a.b", "three dot-separated parts"),
        ("a.b.c.d", "three dot-separated parts"),
        ("", "three dot-separated parts"),
    ],
)
def test_not_a_compact_jws(proof: str, says: str) -> None:
    with pytest.raises(DpopError, match=says):
        check(DpopChecker(), proof, KEYS["ES256"])


def test_a_jws_extension_in_the_header_is_refused() -> None:
    key = KEYS["ES256"]
    assert check(DpopChecker(), by_hand(key, {}), key) == key.thumbprint
    with pytest.raises(DpopError, match="JWS extension"):
        check(DpopChecker(), by_hand(key, {"b64": True}), key)


def test_a_short_rsa_key_is_refused() -> None:
    # PyJWT only warns about a 1024-bit key; a proof made with one is refused.
    private = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    key = DpopKey(pem, "RS256")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jwt.warnings.InsecureKeyLengthWarning)
        proof = key.proof("POST", URL, access_token=TOKEN)
    with pytest.raises(DpopError, match="too short"):
        check(DpopChecker(), proof, key)


def test_a_key_on_another_curve_than_the_algorithm_is_refused() -> None:
    # alg ES256 with a P-384 key: PyJWT's key preparation refuses the curve.
    key = DpopKey.generate("ES384")
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.public_jwk}
    body = {"jti": "x", "htm": "POST", "htu": URL, "iat": int(time.time())}
    forged = ".".join(
        [
            b64url(json.dumps(header).encode()),
            b64url(json.dumps(body).encode()),
            b64url(b"\x00" * 64),
        ]
    )
    with pytest.raises(DpopError, match="not a usable ES256 public key"):
        check(DpopChecker(), forged, key)


def test_pyjwt_parses_a_clients_header_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each proof is decoded by the checker; PyJWT reads only the first header of a key.
    key = KEYS["ES256"]
    loads: list[int] = []
    real = jwt.PyJWS._load

    def counted(self: jwt.PyJWS, token: str | bytes) -> Any:
        loads.append(1)
        return real(self, token)

    monkeypatch.setattr(jwt.PyJWS, "_load", counted)
    checker = DpopChecker()
    for _ in range(5):
        check(checker, key.proof("POST", URL, access_token=TOKEN), key)
    assert len(loads) == 1
