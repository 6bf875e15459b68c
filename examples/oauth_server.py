"""A protected MCP server: any OpenID Connect provider issues the tokens.

    ISSUER=https://accounts.example.com RESOURCE=http://127.0.0.1:8000/mcp \\
        python examples/oauth_server.py

``ISSUER``: your provider's issuer URL (its ``/.well-known/openid-configuration`` gives the
key set). ``RESOURCE``: this server's URL exactly as clients use it; the provider must put
it in the token's ``aud`` (RFC 8707 resource indicators). Tools see the caller as
``ctx.auth``; ``delete_note`` needs the ``notes:write`` scope (403 ``insufficient_scope``
otherwise, and clients step up). Needs ``pip install 'trimcp[auth]'``.
"""

from __future__ import annotations

import os

import trio

from trimcp import Context, JwtVerifier, ProtectedResource, Server
from trimcp.transports.http_server import HttpServerConfig, serve_http

ISSUER = os.environ.get("ISSUER", "http://127.0.0.1:3000")
RESOURCE = os.environ.get("RESOURCE", "http://127.0.0.1:8000/mcp")

app = Server("notes")
notes: dict[str, list[str]] = {}


@app.tool()
async def add_note(text: str, ctx: Context) -> str:
    """Add a note to the caller's own list."""
    assert ctx.auth is not None  # every request here carries a verified token
    notes.setdefault(ctx.auth.subject or "?", []).append(text)
    return f"{len(notes[ctx.auth.subject or '?'])} notes for {ctx.auth.subject}"


@app.tool()
async def delete_note(index: int, ctx: Context) -> str:
    """Delete one of the caller's notes (needs the notes:write scope)."""
    assert ctx.auth is not None
    mine = notes.get(ctx.auth.subject or "?", [])
    return f"deleted {mine.pop(index)!r}" if 0 <= index < len(mine) else "no such note"


protected = ProtectedResource(
    resource=RESOURCE,
    authorization_servers=[ISSUER],
    verifier=JwtVerifier(issuer=ISSUER),  # keys: the issuer's jwks_uri, refreshed
    required_scopes=["notes"],
    tool_scopes={"delete_note": ["notes:write"]},
    hide_unauthorized=True,
    resource_name="Notes",
)

if __name__ == "__main__":
    port = int(RESOURCE.rsplit(":", 1)[1].split("/", 1)[0])
    trio.run(lambda: serve_http(app, port=port, config=HttpServerConfig(auth=protected)))
