"""A server that declares no authorization (``trimcp run`` protects it, e.g. with
``--auth-upstream``): ``whoami`` answers the caller's login as JSON."""

from __future__ import annotations

import json

from trimcp import Context, Server

app = Server("whoami")


@app.tool()
async def whoami(ctx: Context) -> str:
    auth = ctx.auth
    assert auth is not None
    return json.dumps(
        {
            "sub": auth.subject,
            "idp": auth.claims.get("idp"),
            "client": auth.client_id,
            "scopes": sorted(auth.scopes),
        }
    )
