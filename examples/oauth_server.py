"""A protected MCP server: any OpenID Connect provider issues the tokens.

    trimcp run examples/oauth_server.py --transport http        # or --workers 2, --store ...
    ISSUER=https://accounts.example.com RESOURCE=https://mcp.example.com/mcp \\
        trimcp run examples/oauth_server.py --transport http --host 0.0.0.0 --allow-host ...

``ISSUER``: your provider's issuer URL (its ``/.well-known/openid-configuration`` gives the
key set; default ``http://127.0.0.1:3000``, the provider of ``examples/oidc/``).
``RESOURCE``: this server's URL exactly as clients use it (default
``http://127.0.0.1:8000/mcp``); the provider must put it in the token's ``aud`` (RFC 8707
resource indicators). Every request needs the ``notes`` scope; ``delete_note`` also needs
``notes:write`` (403 ``insufficient_scope`` otherwise, and clients step up). Tools see the
caller as ``ctx.auth``. The protection is part of the server (``Server(auth=...)``), so
every way of serving it over HTTP applies it. The loopback recipe in
docs/authorization.md runs it end to end. Needs ``pip install 'trimcp[auth]'``.
"""

from __future__ import annotations

import os

from trimcp import Context, JwtVerifier, ProtectedResource, Server

ISSUER = os.environ.get("ISSUER", "http://127.0.0.1:3000")
RESOURCE = os.environ.get("RESOURCE", "http://127.0.0.1:8000/mcp")

protected = ProtectedResource(
    resource=RESOURCE,
    authorization_servers=[ISSUER],
    verifier=JwtVerifier(issuer=ISSUER),  # keys: the issuer's jwks_uri, refreshed
    required_scopes=["notes"],
    tool_scopes={"delete_note": ["notes:write"]},
    hide_unauthorized=True,
    resource_name="Notes",
)
app = Server("notes", auth=protected)
notes: dict[str, list[str]] = {}


@app.tool()
async def add_note(text: str, ctx: Context) -> str:
    """Add a note to the caller's own list."""
    owner = ctx.auth.subject if ctx.auth is not None else None
    mine = notes.setdefault(owner or "?", [])
    mine.append(text)
    return f"{len(mine)} notes for {owner}"


@app.tool()
async def delete_note(index: int, ctx: Context) -> str:
    """Delete one of the caller's notes (needs the notes:write scope)."""
    owner = ctx.auth.subject if ctx.auth is not None else None
    mine = notes.get(owner or "?", [])
    return f"deleted {mine.pop(index)!r}" if 0 <= index < len(mine) else "no such note"


if __name__ == "__main__":
    port = int(RESOURCE.rsplit(":", 1)[1].split("/", 1)[0])
    app.run(transport="http", port=port)
