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
from collections.abc import Callable, Iterable, Mapping
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
#: How far, in seconds, a proof's ``iat`` may be ahead of the server's clock by default
#: (:class:`DpopChecker` ``max_skew``).
MAX_SKEW = 5
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

    One per server, or one shared by every replica (a Redis store gives one). Each key
    (the JWK thumbprint of the proofs' key) has a share of its own: a key that fills it
    forgets its own oldest proofs and from then on refuses its own proofs no newer than
    those, never another key's. Each call must be bounded in time.
    """

    async def first_use(self, thumbprint: str, jti: str, expires_at: float) -> bool:
        """True the first time key ``thumbprint`` uses ``jti``, False after;
        ``expires_at`` (seconds since the epoch) is when it may be forgotten (the proof is
        refused as stale by then). Raises :class:`DpopError` naming the share or budget
        when the proof is refused for want of room, and anything else (e.g.
        ``StoreUnavailable``) when it cannot tell: the proof is then refused."""
        ...


#: How many proofs one key may have remembered at once (the key's share of a replay
#: cache): a key past it forgets its own oldest. About this many proofs per second per
#: key, every one accepted; more in one second and the oldest of that second are refused.
MAX_PROOFS_PER_KEY = 10_000


def share_full(limit: str) -> DpopError:
    """The refusal of a proof no newer than the ones its key's full share forgot;
    ``limit`` names the bound and its setting."""
    return DpopError(
        f"this DPoP key's share of the replay cache is full ({limit}) and this proof is no "
        "newer than the proofs it forgot: make a fresh one"
    )


class _Share:
    """One key's proofs in a :class:`MemoryReplayCache`: jti -> expiry, a heap of
    (expiry, jti) holding exactly those, and the newest expiry it forgot early."""

    __slots__ = ("horizon", "queue", "until")

    def __init__(self) -> None:
        self.until: dict[str, float] = {}
        self.queue: list[tuple[float, str]] = []
        #: This key's proofs expiring up to this time may have been forgotten.
        self.horizon = float("-inf")


class MemoryReplayCache:
    """The proofs this process accepted: at most ``max_entries`` of them, at most
    ``max_entries_per_key`` of one key's (its thumbprint).

    A key whose share is full forgets its own proof that expires first and from then on
    refuses its own proofs that expire no later (:class:`DpopError` naming the share), so
    a replay never slips through a forgotten entry and no other key is touched. When the
    whole cache is full, the key holding the most proofs gives up its oldest the same way
    (only it is touched); a key's last proof is never forgotten for another key's, so
    with ``max_entries`` keys each holding one proof a new key is refused until one
    expires. ``clock``: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        max_entries: int = 100_000,
        *,
        max_entries_per_key: int = MAX_PROOFS_PER_KEY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_entries < 1 or max_entries_per_key < 1:
            raise ValueError("max_entries and max_entries_per_key must be at least 1")
        self.max_entries = max_entries
        self.max_entries_per_key = max_entries_per_key
        self._clock = clock
        self._shares: dict[str, _Share] = {}
        self._count = 0
        # The thumbprints holding n proofs, by n, and the largest n: the share to take
        # from when the cache is full, in O(1).
        self._by_size: dict[int, set[str]] = {}
        self._largest = 0
        # (expiry, thumbprint) for every proof remembered: when to look at a share for
        # expired proofs. A proof forgotten early leaves its entry behind until it is due
        # (harmless: the share is looked at and has nothing due); rebuilt when the
        # leftovers outnumber the proofs, so it stays within twice the proofs.
        self._due: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return self._count

    async def first_use(self, thumbprint: str, jti: str, expires_at: float) -> bool:
        now = self._clock()
        self._expire(now)
        share = self._shares.get(thumbprint)
        if share is None:
            share = _Share()
        elif jti in share.until:
            return False
        if expires_at <= share.horizon:
            raise share_full(f"{self._per_key()}; or it held the most of a full cache")
        size = len(share.until)
        if size >= self.max_entries_per_key:
            self._forget_own_oldest(thumbprint, share, expires_at, self._per_key())
        elif self._count >= self.max_entries:
            if size >= self._largest:  # this key holds the most: it pays itself
                held = (
                    f"MemoryReplayCache max_entries: {self._count} proofs in all and this "
                    "key holds the most"
                )
                self._forget_own_oldest(thumbprint, share, expires_at, held)
            elif self._largest > 1:
                victim = next(iter(self._by_size[self._largest]))
                self._forget_oldest(victim, self._shares[victim])
            else:
                raise DpopError(
                    f"the DPoP replay cache is full: {self._count} keys each have a proof in "
                    "use (MemoryReplayCache max_entries): try again in a few seconds"
                )
        size = len(share.until)  # one fewer if it made room itself
        if not size:
            self._shares[thumbprint] = share
        share.until[jti] = expires_at
        heapq.heappush(share.queue, (expires_at, jti))
        self._resized(thumbprint, size, size + 1)
        self._count += 1
        heapq.heappush(self._due, (expires_at, thumbprint))
        if len(self._due) > 2 * self._count + 1024:
            self._due = [(e, t) for t, s in self._shares.items() for e, _ in s.queue]
            heapq.heapify(self._due)
        return True

    def _per_key(self) -> str:
        return f"MemoryReplayCache max_entries_per_key: {self.max_entries_per_key} proofs"

    def _forget_own_oldest(
        self, thumbprint: str, share: _Share, expires_at: float, limit: str
    ) -> None:
        """Make room in ``share`` for a proof expiring at ``expires_at``: forget its oldest,
        unless the new one is no newer (then it is refused, nothing forgotten)."""
        if expires_at <= share.queue[0][0]:
            raise share_full(limit)
        self._forget_oldest(thumbprint, share)

    def _forget_oldest(self, thumbprint: str, share: _Share) -> None:
        expires_at, jti = heapq.heappop(share.queue)
        del share.until[jti]
        share.horizon = max(share.horizon, expires_at)
        size = len(share.until)
        self._resized(thumbprint, size + 1, size)
        self._count -= 1
        # Never empty here: a share is forgotten from only when it holds more than one
        # proof, or when a proof of its own takes the freed place at once.

    def _expire(self, now: float) -> None:
        due, shares = self._due, self._shares
        while due and due[0][0] <= now:
            _, thumbprint = heapq.heappop(due)
            share = shares.get(thumbprint)
            if share is None:
                continue
            queue = share.queue
            while queue and queue[0][0] <= now:
                _, jti = heapq.heappop(queue)
                del share.until[jti]
                size = len(share.until)
                self._resized(thumbprint, size + 1, size)
                self._count -= 1
            if not queue:
                # Its horizon is past too: only a proof expiring before one it still
                # held was ever forgotten, and those have all expired.
                del shares[thumbprint]

    def _resized(self, thumbprint: str, old: int, new: int) -> None:
        """Keep :attr:`_by_size` and :attr:`_largest` as a share goes from ``old`` to
        ``new`` proofs (one more or one fewer)."""
        by_size = self._by_size
        if old:
            holders = by_size[old]
            holders.discard(thumbprint)
            if not holders:
                del by_size[old]
                if old == self._largest and new < old:
                    self._largest = new
        if new:
            by_size.setdefault(new, set()).add(thumbprint)
            self._largest = max(self._largest, new)


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

    ``algorithms``: accepted proof algorithms. ``max_age``: how old a proof's ``iat`` may
    be, in seconds. ``max_skew``: how far ahead of this server's clock it may be (the
    clients' clocks are a little off; a proof dated further ahead would be remembered,
    and take room in the replay cache, for longer than ``max_age``). ``replay``: the
    :class:`ReplayCache` (default: this process's memory). ``nonces``: a
    :class:`NonceSource` to require server nonces (None: none required).
    ``key_cache_size``: parsed public keys kept (a client sends the same key with every
    proof). ``clock``: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        *,
        algorithms: Iterable[str] = DPOP_ALGORITHMS,
        max_age: float = 300.0,
        max_skew: float = MAX_SKEW,
        replay: ReplayCache | None = None,
        nonces: NonceSource | None = None,
        key_cache_size: int = 1024,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from trimcp.auth.verifiers import require_jwt_library

        require_jwt_library()
        self.algorithms = tuple(algorithms)
        bad = [a for a in self.algorithms if a not in DPOP_ALGORITHMS]
        if bad:
            raise ValueError(f"DPoP proofs need asymmetric algorithms; refusing {bad}")
        if max_skew < 0 or max_skew > max_age:
            raise ValueError("max_skew must be between 0 and max_age seconds")
        self.max_age = max_age
        self.max_skew = max_skew
        self._clock = clock
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
        age = self._clock() - iat
        if age > self.max_age:
            raise DpopError(
                f"the DPoP proof is stale: its iat is {age:.0f} s old, more than "
                f"{self.max_age:g} s: make a fresh one"
            )
        if -age > self.max_skew:
            raise DpopError(
                f"the DPoP proof's iat is {-age:.0f} s in the future; allowed clock skew is "
                f"{self.max_skew:g} s: check the client's clock"
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
        if not await cache.first_use(thumbprint, jti, expires_at):
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
