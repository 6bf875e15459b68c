"""The server of the authorization-server worker tests (``trimcp run`` on this file):
trimcp's own authorization server in front of the GitHub-shaped provider at
``$FAKE_GITHUB`` (tests/authserver/fake_github.py), its resource the URL served.
``whoami`` answers who logged in and the pid of the worker that answered."""

from __future__ import annotations

import json
import os

from tests.authserver.fake_github import CLIENT_ID, CLIENT_SECRET
from trimcp import Context, Server
from trimcp.authserver import AuthorizationServer, Upstream

base = os.environ["FAKE_GITHUB"]
auth = AuthorizationServer(
    resource=None,
    upstream=Upstream(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        authorize_url=f"{base}/login/oauth/authorize",
        token_url=f"{base}/login/oauth/access_token",
        user_url=f"{base}/user",
        subject_field="id",
        display_name="GitHub",
    ),
    required_scopes=["mcp"],
    server_name="Workers",
)
app = Server("authserver-workers", auth=auth)


@app.tool()
async def whoami(ctx: Context) -> str:
    assert ctx.auth is not None
    login = ctx.auth.claims.get("login")
    return json.dumps({"sub": ctx.auth.subject, "login": login, "pid": os.getpid()})
