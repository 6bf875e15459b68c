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

from trimcp.auth.dpop import (
    MAX_PROOF_BYTES,
    DpopChecker,
    DpopError,
    DpopKey,
    access_token_hash,
    b64url,
)

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


@pytest.mark.parametrize("part", [1, 2])
@pytest.mark.parametrize(
    ("needs", "respell"),
    [
        ("-", lambda s: s.replace("-", "+")),  # the other alphabet: the same bytes
        ("_", lambda s: s.replace("_", "/")),
        ("", lambda s: s[:8] + "    " + s[8:]),  # whitespace a lenient decoder skips
        ("", lambda s: s[:8] + "\n\n\n\n" + s[8:]),
    ],
    ids=["plus", "slash", "spaces", "newlines"],
)
def test_characters_outside_the_alphabet_are_refused(part: int, needs: str, respell: Any) -> None:
    key = KEYS["ES256"]
    for n in range(200):  # a proof whose segment holds the character to respell
        nonce = "n" * (n % 3) + "~~~???" * 2  # payload bytes spelled with - and _
        proof = key.proof("POST", URL, access_token=TOKEN, nonce=nonce)
        parts = proof.split(".")
        if needs in parts[part]:
            break
    assert needs in parts[part]
    parts[part] = respell(parts[part])
    checker = DpopChecker()
    check(checker, key.proof("POST", URL, access_token=TOKEN), key)  # its header is known
    with pytest.raises(DpopError, match="not canonical base64url"):
        check(checker, ".".join(parts), key)


@pytest.mark.parametrize("jwk", [None, "a key", ["a", "key"]])
def test_a_proof_without_a_jwk_object_is_refused(jwk: Any) -> None:
    key = KEYS["ES256"]
    with pytest.raises(DpopError, match=r"carries no public key \(jwk header\)"):
        check(DpopChecker(), by_hand(key, {"jwk": jwk}), key)


def sized(key: DpopKey, length: int) -> str:
    """A good proof of exactly ``length`` characters (a filler claim and header member)."""
    algorithm = jwt.get_algorithm_by_name(key.algorithm)
    for extra in range(4):  # a header one longer shifts which payload lengths fit
        header = {"typ": "dpop+jwt", "alg": key.algorithm, "jwk": key.public_jwk}
        header["kid"] = "k" * extra
        head = b64url(json.dumps(header).encode())
        # Each 3 filler characters take 4 in the proof: start a few short of the length.
        start = max(0, (length - len(head) - 500) * 3 // 4)
        for fill in range(start, length):
            body = {"jti": "s1", "htm": "POST", "htu": URL, "iat": int(time.time())}
            body.update(ath=access_token_hash(TOKEN), fill="f" * fill)
            signing_input = f"{head}.{b64url(json.dumps(body).encode())}"
            signature = b64url(algorithm.sign(signing_input.encode(), key._private))
            proof = f"{signing_input}.{signature}"
            if len(proof) >= length:
                if len(proof) == length:
                    return proof
                break
    raise AssertionError(f"no proof of {length} characters")


def test_a_proof_of_the_longest_size_is_read_and_a_longer_one_is_not() -> None:
    key = KEYS["ES256"]
    longest = sized(key, MAX_PROOF_BYTES)
    assert check(DpopChecker(), longest, key) == key.thumbprint
    with pytest.raises(DpopError, match=f"longer than {MAX_PROOF_BYTES} bytes"):
        check(DpopChecker(), sized(key, MAX_PROOF_BYTES + 1), key)


def test_the_key_cache_keeps_the_keys_seen_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # key_cache_size keys are kept; a new one past it pushes out the one seen first.
    loads: list[str] = []
    real = jwt.PyJWS._load

    def counted(self: jwt.PyJWS, token: str | bytes) -> Any:
        loads.append(str(token)[:8])
        return real(self, token)

    monkeypatch.setattr(jwt.PyJWS, "_load", counted)
    keys = [KEYS["ES256"], KEYS["RS256"], KEYS["EdDSA"]]
    checker = DpopChecker(key_cache_size=2)
    for key in keys[:2]:
        check(checker, key.proof("POST", URL, access_token=TOKEN), key)
    assert len(loads) == 2
    for key in keys[:2]:  # both kept
        check(checker, key.proof("POST", URL, access_token=TOKEN), key)
    assert len(loads) == 2
    check(checker, keys[2].proof("POST", URL, access_token=TOKEN), keys[2])  # ES256 out
    check(checker, keys[2].proof("POST", URL, access_token=TOKEN), keys[2])
    check(checker, keys[1].proof("POST", URL, access_token=TOKEN), keys[1])
    assert len(loads) == 3
    check(checker, keys[0].proof("POST", URL, access_token=TOKEN), keys[0])
    assert len(loads) == 4


def with_payload(key: DpopKey, payload: bytes) -> str:
    """A proof of ``key`` whose payload is exactly ``payload``, signed with PyJWT."""
    header = {"typ": "dpop+jwt", "alg": key.algorithm, "jwk": key.public_jwk}
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(payload)}"
    algorithm = jwt.get_algorithm_by_name(key.algorithm)
    return f"{signing_input}.{b64url(algorithm.sign(signing_input.encode(), key._private))}"


def claimed(**claims: Any) -> dict[str, Any]:
    """The claims of a good proof for a POST to URL with TOKEN, with ``claims`` changed
    (None: left out)."""
    body = {"jti": "c1", "htm": "POST", "htu": URL, "iat": int(time.time())}
    body.update(ath=access_token_hash(TOKEN), **claims)
    return {name: value for name, value in body.items() if value is not None}


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"claims"', b"12", b"null", b"{nope", b"\xff"])
def test_a_payload_that_is_not_a_json_object_is_refused(payload: bytes) -> None:
    key = KEYS["ES256"]
    with pytest.raises(DpopError, match="payload is not a JSON object"):
        check(DpopChecker(), with_payload(key, payload), key)


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"jti": ""}, "no usable jti"),
        ({"jti": "j" * 257}, "no usable jti"),
        ({"jti": 17}, "no usable jti"),
        ({"jti": None}, "no usable jti"),
        ({"htu": 17}, "not for this URL"),
        ({"htu": None}, "not for this URL"),
        ({"htu": URL + "?a=1"}, "not for this URL"),  # htu carries no query...
        ({"htu": URL + "#top"}, "not for this URL"),  # ...and no fragment
        ({"htu": "not a url"}, "not for this URL"),
        ({"iat": "1700000000"}, "has no iat"),
        ({"iat": True}, "has no iat"),
        ({"iat": None}, "has no iat"),
        ({"htm": "post"}, "not for this method"),
    ],
)
def test_claims_of_the_wrong_kind_are_refused(claims: dict[str, Any], says: str) -> None:
    key = KEYS["ES256"]
    proof = with_payload(key, json.dumps(claimed(**claims)).encode())
    with pytest.raises(DpopError, match=says):
        check(DpopChecker(), proof, key)


@pytest.mark.parametrize("jti", ["j", "j" * 256])
def test_a_jti_of_one_to_256_characters_is_read(jti: str) -> None:
    key = KEYS["ES256"]
    proof = with_payload(key, json.dumps(claimed(jti=jti)).encode())
    assert check(DpopChecker(), proof, key) == key.thumbprint


def test_a_proof_exactly_max_age_old_is_accepted() -> None:
    key = KEYS["ES256"]
    now = 1_000_000.0
    proof = with_payload(key, json.dumps(claimed(iat=int(now) - 300)).encode())
    assert check(DpopChecker(clock=lambda: now), proof, key) == key.thumbprint
    with pytest.raises(DpopError, match="stale"):
        check(DpopChecker(clock=lambda: now + 1), proof, key)
