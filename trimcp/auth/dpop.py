"""DPoP (RFC 9449, MCP SEP-1932): access tokens bound to a key the client holds.

Client side: :class:`DpopKey` holds the client's key pair and makes proofs (a JWT of type
``dpop+jwt`` carrying the public key, the request's method ``htm`` and URL ``htu``, its
time ``iat``, a unique ``jti``, and on resource requests ``ath``, the hash of the access
token). The authorization server binds the token to the key's thumbprint (``cnf.jkt``).

Server side: :class:`DpopChecker` checks a proof against the request and the token (see
:meth:`DpopChecker.check`); a proof is accepted once (:class:`ReplayCache`, shared across
replicas by a Redis store) and, when asked for, must carry a server nonce
(:class:`NonceSource`).

Signing and verifying are PyJWT's (with ``cryptography``); keys are ``cryptography``'s.
trimcp only chooses claims and compares them. The JWK thumbprint (RFC 7638) is a SHA-256
of the key's required members as canonical JSON.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import heapq
import hmac
import json
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs
import orjson

#: Asymmetric JWS algorithms a proof may use (never ``none``, never HMAC).
DPOP_ALGORITHMS: tuple[str, ...] = (
    "ES256",
    "ES384",
    "ES512",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "EdDSA",
)
PROOF_TYPE = "dpop+jwt"
#: Proofs longer than this are refused unread (a proof is about 500 bytes with an EC key).
MAX_PROOF_BYTES = 8192
_MAX_JTI = 256
#: The members of a public JWK that its thumbprint covers, by key type (RFC 7638 §3.2).
_THUMBPRINT_MEMBERS = {
    "EC": ("crv", "kty", "x", "y"),
    "RSA": ("e", "kty", "n"),
    "OKP": ("crv", "kty", "x"),
}
#: Members that only a private JWK has: a proof carrying one gives its key away.
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (base64url); ValueError when the
    key type is unknown or a required member is missing."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None:
        raise ValueError(f"unsupported key type {str(jwk.get('kty'))[:20]!r}")
    try:
        required = {name: jwk[name] for name in members}
    except KeyError as missing:
        raise ValueError(f"the key has no {missing.args[0]!r} member") from None
    if not all(isinstance(value, str) for value in required.values()):
        raise ValueError("the key's members must be strings")
    canonical = json.dumps(required, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def access_token_hash(token: str) -> str:
    """The ``ath`` claim: base64url of the SHA-256 of the access token's ASCII bytes."""
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


@functools.lru_cache(maxsize=256)  # a server sees the same few URLs again and again
def htu_of(url: str) -> str:
    """The ``htu`` for a request to ``url``: no query or fragment, lower-case scheme and
    host, the default port left out (RFC 9449 §4.2, §4.3 with RFC 3986 normalisation)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port is None or port == default else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path or '/'}"


# --- the client's key ---------------------------------------------------------------------


class DpopKey:
    """A client's DPoP key pair; makes proofs with PyJWT.

    ``pem``: the private key (PKCS#8 PEM); ``algorithm``: its JWS algorithm. Make one with
    :meth:`generate`. :class:`~trimcp.auth.OAuthClient` keeps it with the tokens in its
    token store, so tokens bound to it stay usable after a restart.
    """

    def __init__(self, pem: str, algorithm: str = "ES256") -> None:
        from jwt.algorithms import get_default_algorithms

        from trimcp.auth.verifiers import require_jwt_library

        require_jwt_library()
        if algorithm not in DPOP_ALGORITHMS:
            raise ValueError(f"DPoP needs an asymmetric algorithm, not {algorithm!r}")
        implementation = get_default_algorithms()[algorithm]
        self.pem = pem
        self.algorithm = algorithm
        self._private = implementation.prepare_key(pem)
        public = self._private.public_key()
        jwk = implementation.to_jwk(public, as_dict=True)
        #: The public key as a JWK (what every proof carries in its header).
        self.public_jwk: dict[str, Any] = {
            k: v for k, v in jwk.items() if k in _THUMBPRINT_MEMBERS[str(jwk["kty"])]
        }
        #: The key's thumbprint: the ``jkt`` a bound token names.
        self.thumbprint = jwk_thumbprint(self.public_jwk)

    @classmethod
    def generate(cls, algorithm: str = "ES256") -> DpopKey:
        """A new key pair: P-256/384/521 for ``ES*``, RSA 2048 for ``RS*``/``PS*``,
        Ed25519 for ``EdDSA``."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        key: Any
        if algorithm.startswith("ES"):
            curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
            key = ec.generate_private_key(curve[algorithm])
        elif algorithm == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        elif algorithm in DPOP_ALGORITHMS:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            raise ValueError(f"DPoP needs an asymmetric algorithm, not {algorithm!r}")
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")
        return cls(pem, algorithm)

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
    ) -> str:
        """A fresh proof for one ``method`` request to ``url`` (its query and fragment
        left out); ``access_token``: the token it goes with (adds ``ath``); ``nonce``: the
        last nonce the server gave."""
        import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": PROOF_TYPE, "jwk": self.public_jwk}
        return jwt.encode(claims, self._private, algorithm=self.algorithm, headers=headers)


class DpopProofs:
    """One client's proofs to one set of servers: its :class:`DpopKey` and the last
    nonce each server (by origin) gave (RFC 9449 §8, §9)."""

    def __init__(self, key: DpopKey) -> None:
        self.key = key
        self._nonces: dict[str, str] = {}

    def headers(self, method: str, url: str, access_token: str | None = None) -> dict[str, str]:
        """The ``DPoP`` header for one request (a fresh proof each call)."""
        nonce = self._nonces.get(_origin(url))
        return {"dpop": self.key.proof(method, url, access_token=access_token, nonce=nonce)}

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep the ``DPoP-Nonce`` a response from ``url`` carried; True if it is new."""
        if not nonce or len(nonce) > 1024 or not nonce.isascii():
            return False
        origin = _origin(url)
        if self._nonces.get(origin) == nonce:
            return False
        self._nonces[origin] = nonce
        return True


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


# --- the server's side ----------------------------------------------------------------------


class DpopError(Exception):
    """A proof was refused. ``error`` is the RFC 9449 code (``invalid_dpop_proof`` or
    ``use_dpop_nonce``); the message is safe to show the client."""

    def __init__(self, message: str, error: str = "invalid_dpop_proof") -> None:
        super().__init__(message)
        self.error = error


class ReplayCache(Protocol):
    """Remembers the proofs already accepted, for as long as they could be accepted.

    One per server, or one shared by every replica (a Redis store gives one). Each call
    must be bounded in time.
    """

    async def first_use(self, key: str, expires_at: float) -> bool:
        """True the first time ``key`` is seen, False after; ``expires_at`` (seconds since
        the epoch) is when it may be forgotten (the proof is refused as stale by then).
        Raises (e.g. ``StoreUnavailable``) when it cannot tell: the proof is then refused."""
        ...


class MemoryReplayCache:
    """The proofs this process accepted, at most ``max_entries`` of them.

    Full, it forgets the entry that expires first and from then on refuses every proof
    that expires no later (:meth:`first_use` answers False), so a replay never slips
    through a forgotten entry: the price of the bound is that, under a flood, a client
    whose proof is that old makes a new one.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._until: dict[str, float] = {}
        self._queue: list[tuple[float, str]] = []  # a heap: (expires_at, key)
        #: Entries expiring up to this time may have been forgotten.
        self.horizon = float("-inf")

    def __len__(self) -> int:
        return len(self._until)

    async def first_use(self, key: str, expires_at: float) -> bool:
        now = time.time()
        queue, until = self._queue, self._until
        while queue and queue[0][0] <= now:
            _, old = heapq.heappop(queue)
            until.pop(old, None)
        if key in until or expires_at <= self.horizon:
            return False
        if len(until) >= self.max_entries:
            forgotten, old = heapq.heappop(queue)
            until.pop(old, None)
            self.horizon = max(self.horizon, forgotten)
            if expires_at <= self.horizon:
                return False
        until[key] = expires_at
        heapq.heappush(queue, (expires_at, key))
        return True


class NonceSource:
    """Server nonces (RFC 9449 §9) that need no storage: a nonce is an HMAC of the
    current period of ``lifetime`` seconds, and the previous period's stays valid.

    ``secret``: give every replica the same bytes (default: random per process, so a
    nonce from one replica makes another ask again).
    """

    def __init__(self, secret: bytes | None = None, *, lifetime: float = 300.0) -> None:
        if lifetime <= 0:
            raise ValueError("the nonce lifetime must be positive")
        self._secret = secret if secret is not None else os.urandom(32)
        self.lifetime = lifetime

    def _for(self, period: int) -> str:
        digest = hmac.new(self._secret, str(period).encode("ascii"), hashlib.sha256).digest()
        return b64url(digest[:18])

    def current(self) -> str:
        """The nonce to hand out now."""
        return self._for(int(time.time() // self.lifetime))

    def valid(self, nonce: str) -> bool:
        period = int(time.time() // self.lifetime)
        return any(hmac.compare_digest(nonce, self._for(p)) for p in (period, period - 1))


@attrs.frozen
class _ProofKey:
    """What a proof's protected header gives, once checked: its algorithm, its key's
    thumbprint, the key, and PyJWT's algorithm object that verifies with it."""

    alg: str
    thumbprint: str
    key: Any
    algorithm: Any


_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
#: By a segment's length mod 4, the last characters whose unused low bits are zero
#: (RFC 4648 §3.5): any other is a second spelling of the same bytes.
_CANONICAL_LAST = {0: None, 2: frozenset("AQgw"), 3: frozenset("AEIMQUYcgkosw048")}


def _segment(text: str) -> bytes | None:
    """The bytes of one compact-JWS segment, or None unless it is canonical unpadded
    base64url (RFC 7515 §2), so a proof has one spelling. PyJWT applies the same rule one
    character at a time, which cost more than the signature check of an RS256 proof."""
    tail = len(text) % 4
    if tail == 1 or "+" in text or "/" in text or "=" in text:
        return None
    last = _CANONICAL_LAST[tail]
    if last is not None and text[-1] not in last:
        return None
    try:  # strict: any character outside the alphabet (after the swap) is refused
        standard = text.encode("ascii").translate(_TO_STANDARD)
        return binascii.a2b_base64(standard + b"=" * (-len(text) % 4), strict_mode=True)
    except (binascii.Error, ValueError):  # ValueError: not ASCII
        return None


class DpopChecker:
    """Checks DPoP proofs on a resource server (RFC 9449 §4.3, §7).

    ``algorithms``: accepted proof algorithms. ``max_age``: how old (and how far in the
    future) a proof's ``iat`` may be, in seconds. ``replay``: the :class:`ReplayCache`
    (default: this process's memory). ``nonces``: a :class:`NonceSource` to require
    server nonces (None: none required). ``key_cache_size``: parsed public keys kept (a
    client sends the same key with every proof).
    """

    def __init__(
        self,
        *,
        algorithms: Iterable[str] = DPOP_ALGORITHMS,
        max_age: float = 300.0,
        replay: ReplayCache | None = None,
        nonces: NonceSource | None = None,
        key_cache_size: int = 1024,
    ) -> None:
        from trimcp.auth.verifiers import require_jwt_library

        require_jwt_library()
        self.algorithms = tuple(algorithms)
        bad = [a for a in self.algorithms if a not in DPOP_ALGORITHMS]
        if bad:
            raise ValueError(f"DPoP proofs need asymmetric algorithms; refusing {bad}")
        self.max_age = max_age
        self.replay: ReplayCache = replay if replay is not None else MemoryReplayCache()
        self.nonces = nonces
        self.key_cache_size = key_cache_size
        self._keys: OrderedDict[str, _ProofKey] = OrderedDict()
        self._hashes: dict[str, str] = {}

    def _header(self, segment: str, proof: str) -> _ProofKey:
        """The checked header of a proof whose protected header is ``segment``. Cached by
        the segment's text: a client sends the same header (its key) with every proof, so
        PyJWT parses only its first proof's header; later proofs cost a dict lookup."""
        import jwt

        cached = self._keys.get(segment)
        if cached is not None:
            return cached
        try:
            header = jwt.get_unverified_header(proof)  # also PyJWT's kid/crit checks
        except jwt.PyJWTError:
            raise DpopError("the DPoP proof is not a signed JWT") from None
        if header.get("typ") != PROOF_TYPE:
            raise DpopError(f"the DPoP proof's typ must be {PROOF_TYPE}")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise DpopError(f"the DPoP proof's algorithm {str(alg)[:20]!r} is not accepted")
        if "crit" in header or "b64" in header:  # no JWS extension belongs in a proof
            raise DpopError("the DPoP proof's header names a JWS extension (crit/b64): refused")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise DpopError("the proof carries no public key (jwk header)")
        if _PRIVATE_MEMBERS.intersection(jwk):
            raise DpopError("the proof's jwk holds a private key: refused")
        try:
            thumbprint = jwk_thumbprint(jwk)
            algorithm = jwt.get_algorithm_by_name(alg)
            # PyJWK checks the key against alg; prepare_key checks the curve again.
            key = algorithm.prepare_key(jwt.PyJWK(jwk, algorithm=alg).key)
        except (ValueError, NotImplementedError, jwt.PyJWTError) as exc:
            raise DpopError(f"the proof's jwk is not a usable {alg} public key ({exc})") from None
        too_short = algorithm.check_key_length(key)
        if too_short:
            raise DpopError(f"the proof's key is too short: {too_short}")
        found = _ProofKey(alg, thumbprint, key, algorithm)
        self._keys[segment] = found
        if len(self._keys) > self.key_cache_size:
            self._keys.popitem(last=False)
        return found

    async def check(
        self,
        proof: str,
        *,
        method: str,
        url: str,
        access_token: str | None = None,
        jkt: str | None = None,
        replay: ReplayCache | None = None,
    ) -> str:
        """Check ``proof`` for a ``method`` request to ``url``; returns the thumbprint of
        its key. With ``access_token``, ``ath`` must be its hash; with ``jkt`` (the
        token's ``cnf.jkt``), the proof's key must be that key. ``replay``: the cache to
        record it in (None: :attr:`replay`). Raises
        :class:`DpopError`: ``use_dpop_nonce`` when a nonce is required and missing or
        stale (answer with :meth:`nonce`), else ``invalid_dpop_proof``.

        Cancellation: a cancelled check may have recorded the proof as used.
        """
        if len(proof) > MAX_PROOF_BYTES:
            raise DpopError(f"the DPoP proof is longer than {MAX_PROOF_BYTES} bytes")
        segments = proof.split(".")
        if len(segments) != 3:
            raise DpopError("the DPoP proof is not a signed JWT (three dot-separated parts)")
        found = self._header(segments[0], proof)
        thumbprint = found.thumbprint
        payload = _segment(segments[1])
        signature = _segment(segments[2])
        if payload is None or signature is None:
            raise DpopError("the DPoP proof is not canonical base64url")
        # Both segments are ASCII now; the signature is checked by PyJWT's algorithm
        # object (over cryptography). The claims are checked below, against this request.
        signing_input = f"{segments[0]}.{segments[1]}".encode("ascii")
        if not found.algorithm.verify(signing_input, found.key, signature):
            raise DpopError("the DPoP proof's signature does not verify")
        try:
            claims = orjson.loads(payload)
        except orjson.JSONDecodeError:
            claims = None
        if not isinstance(claims, dict):
            raise DpopError("the DPoP proof's payload is not a JSON object")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= _MAX_JTI:
            raise DpopError("the DPoP proof has no usable jti")
        if claims.get("htm") != method.upper():
            raise DpopError(f"the DPoP proof is not for this method ({method.upper()})")
        htu = claims.get("htu")
        if not isinstance(htu, str) or "?" in htu or "#" in htu or _htu(htu) != htu_of(url):
            raise DpopError(f"the DPoP proof is not for this URL ({htu_of(url)})")
        iat = claims.get("iat")
        if not isinstance(iat, (int, float)) or isinstance(iat, bool):
            raise DpopError("the DPoP proof has no iat")
        if abs(time.time() - iat) > self.max_age:
            raise DpopError(
                f"the DPoP proof is stale or from the future (iat more than "
                f"{self.max_age:g} s away): make a fresh one"
            )
        if access_token is not None:
            ath = claims.get("ath")
            if not isinstance(ath, str) or not hmac.compare_digest(
                ath, self._token_hash(access_token)
            ):
                raise DpopError("the DPoP proof's ath does not match the access token")
        if jkt is not None and not hmac.compare_digest(jkt, thumbprint):
            raise DpopError("the DPoP proof's key is not the key the token is bound to")
        if self.nonces is not None:
            nonce = claims.get("nonce")
            if not isinstance(nonce, str) or not self.nonces.valid(nonce):
                raise DpopError(
                    "this server requires a DPoP nonce: use the one given", "use_dpop_nonce"
                )
        # Last: only a proof that passed every other check uses up its jti.
        expires_at = float(iat) + self.max_age + 1
        cache = replay if replay is not None else self.replay
        if not await cache.first_use(f"{thumbprint}:{jti}", expires_at):
            raise DpopError("the DPoP proof was already used: make a fresh one for each request")
        return thumbprint

    def _token_hash(self, token: str) -> str:
        """``access_token_hash(token)``, remembered for the few tokens a server sees again
        and again (one per client) so a proof's ``ath`` costs a lookup."""
        known = self._hashes.get(token)
        if known is None:
            if len(self._hashes) >= self.key_cache_size:
                self._hashes.clear()
            known = self._hashes[token] = access_token_hash(token)
        return known

    def nonce(self) -> str | None:
        """The nonce to send in ``DPoP-Nonce`` (None: nonces are not required)."""
        return self.nonces.current() if self.nonces is not None else None


def _htu(value: str) -> str:
    try:
        return htu_of(value)
    except ValueError:
        return ""
