"""Where the authorization server's state and secret come from when it is deployed: the
secret from ``TRIMCP_AUTHSERVER_SECRET`` unless given in code, the store from the HTTP
server's when it is shared, both fixed once serving; signing keys stored under the
sealing key's id, so a process with another secret signs with keys of its own."""

from __future__ import annotations

import pytest
import trio

from tests.authserver.fake_github import CLIENT_ID, CLIENT_SECRET
from trimcp.authserver import AuthorizationServer, MemoryAuthStore, Upstream
from trimcp.authserver.keys import SigningKeys
from trimcp.authserver.sealing import Sealer
from trimcp.server.serving import AUTHSERVER_SECRET, SettingsError, use_authserver_secret
from trimcp.stores import MemoryStore

UPSTREAM = Upstream(
    client_id=CLIENT_ID,
    client_secret=CLIENT_SECRET,
    authorize_url="http://127.0.0.1:9/authorize",
    token_url="http://127.0.0.1:9/token",
    user_url="http://127.0.0.1:9/user",
)
URL = "http://127.0.0.1:8000/mcp"


async def test_a_process_with_another_secret_signs_with_keys_of_its_own() -> None:
    # Before: the second process found keys sealed with the first one's secret, could not
    # open them, and could sign nothing (KeysUnavailable) until they expired, days later:
    # what a restart with a new random secret on a Redis store did.
    store = MemoryAuthStore()
    first = SigningKeys(store, Sealer("first secret, 16 bytes or more"))
    await first.refresh()
    second = SigningKeys(store, Sealer("second secret, also long enough"))
    await second.refresh()
    assert first.jwks() != second.jwks()
    same = SigningKeys(store, Sealer("first secret, 16 bytes or more"))
    await same.refresh()
    assert same.jwks() == first.jwks()  # one secret: one key set, whichever process


async def test_the_environment_secret_is_taken_unless_one_is_given_in_code() -> None:
    secret = "a deployment secret of 32 bytes."
    store = MemoryAuthStore()  # as two replicas share one

    async def key_set(auth: AuthorizationServer) -> object:
        await auth.keys.refresh()
        return auth.keys.jwks()

    one, two = (AuthorizationServer(resource=URL, upstream=UPSTREAM, store=store) for _ in "12")
    assert not one.secret_configured
    assert await key_set(one) != await key_set(two)  # random secrets: keys of their own
    for auth in (one, two):
        use_authserver_secret(auth, {AUTHSERVER_SECRET: secret})
        assert auth.secret_configured
    assert await key_set(one) == await key_set(two)
    own = AuthorizationServer(
        resource=URL, upstream=UPSTREAM, store=store, secret="given in code: long enough"
    )
    before = await key_set(own)
    use_authserver_secret(own, {AUTHSERVER_SECRET: secret})
    assert await key_set(own) == before  # the code's secret is kept
    short = AuthorizationServer(resource=URL, upstream=UPSTREAM)
    with pytest.raises(SettingsError, match=f"{AUTHSERVER_SECRET}: .* at least 16 bytes"):
        use_authserver_secret(short, {AUTHSERVER_SECRET: "short"})


def test_a_store_that_is_not_shared_keeps_the_logins_in_memory() -> None:
    auth = AuthorizationServer(resource=URL, upstream=UPSTREAM)
    assert auth.state_in_memory
    auth.use_store(MemoryStore())
    assert auth.state_in_memory
    given = MemoryAuthStore()
    own = AuthorizationServer(resource=URL, upstream=UPSTREAM, store=given)
    own.use_store(MemoryStore())
    assert own.store is given


async def test_the_secret_and_store_are_fixed_once_serving() -> None:
    auth = AuthorizationServer(resource=URL, upstream=UPSTREAM)
    async with trio.open_nursery() as nursery:
        await nursery.start(auth.run)
        with pytest.raises(RuntimeError, match="must come before the authorization server runs"):
            auth.adopt_secret("a deployment secret of 32 bytes.")
        nursery.cancel_scope.cancel()
