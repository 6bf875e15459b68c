"""State that outlives a call: per-user values and a cart behind a handle (docs/state.md).

Callers are told apart by API keys from the environment, ``key=user`` pairs::

    DEMO_API_KEYS="key-a=alice,key-b=bob" \\
        trimcp run examples/user_state.py --transport http --port 8000 [--store redis://HOST:PORT/0]

and send ``Authorization: Bearer key-a``. Tools:

- ``remember(key, value)`` / ``recall(key)``: the caller's own values (another user's are
  never seen; a key never set recalls nothing);
- ``open_cart()`` returns a handle; ``add_item(cart, item)`` adds to that cart and returns
  its items. The handle works for the user it was minted for, in either protocol era, on
  any replica sharing the store, until it expires; anyone else's use, or a forged handle,
  is a tool error saying why.

With ``--store redis://...`` every replica on that Redis shares both kinds of state, and
they outlive a restart of the replicas (the sealing keys are shared through Redis too).
An unknown key is answered ``401``. ``RESOURCE`` (default ``http://127.0.0.1:8000/mcp``)
is the URL named in the protected-resource metadata; API keys are not OAuth tokens, so
the audience is not checked.
"""

from __future__ import annotations

import os

from trimcp import AuthInfo, Context, ProtectedResource, Server


def api_keys(text: str) -> dict[str, str]:
    """``"key-a=alice,key-b=bob"`` -> ``{"key-a": "alice", "key-b": "bob"}``."""
    keys: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        key, sep, user = pair.partition("=")
        if not sep or not key.strip() or not user.strip():
            raise SystemExit(f"DEMO_API_KEYS: {pair!r} is not key=user")
        keys[key.strip()] = user.strip()
    if not keys:
        raise SystemExit('set DEMO_API_KEYS, e.g. DEMO_API_KEYS="key-a=alice,key-b=bob"')
    return keys


KEYS = api_keys(os.environ.get("DEMO_API_KEYS", ""))
RESOURCE = os.environ.get("RESOURCE", "http://127.0.0.1:8000/mcp")


async def verify(token: str) -> AuthInfo | None:
    user = KEYS.get(token)
    if user is None:
        return None  # 401: not a key we know
    # The principal is the user: the same user with two keys shares one state.
    return AuthInfo(subject=user, issuer="demo-api-keys")


app = Server(
    "user-state-demo",
    instructions="remember/recall keep values per user; open_cart/add_item keep a cart.",
    auth=ProtectedResource(
        resource=RESOURCE,
        # The metadata must name an authorization server; API keys have none, so it names
        # this server: a client that tries to log in there finds no login, and needs a key.
        authorization_servers=[RESOURCE.rsplit("/", 1)[0]],
        verifier=verify,
        verify_audience=False,
    ),
)


@app.tool()
async def remember(key: str, value: str, ctx: Context) -> str:
    """Keep value under key, for you only."""
    await ctx.user_state.set(key, value)
    return f"remembered {key}"


@app.tool()
async def recall(key: str, ctx: Context) -> str | None:
    """What you kept under key (nothing when you never did)."""
    value: str | None = await ctx.user_state.get(key)
    return value


@app.tool()
async def open_cart(ctx: Context) -> str:
    """A new, empty cart: pass the handle it returns to add_item."""
    return await ctx.handles.mint("cart", [])


@app.tool()
async def add_item(cart: str, item: str, ctx: Context) -> list[str]:
    """Add item to the cart open_cart gave you; returns the cart's items."""
    state = ctx.handles.open(cart, "cart")
    items: list[str] = await state.update(lambda items: [*items, item], default=[])
    return items


if __name__ == "__main__":
    app.run(transport="http")
