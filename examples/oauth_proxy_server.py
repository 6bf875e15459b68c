"""An MCP server whose users log in with GitHub (or any OAuth 2 / OpenID provider), with
trimcp as the authorization server the MCP client sees.

    UPSTREAM_CLIENT_ID=... UPSTREAM_CLIENT_SECRET=... \\
        trimcp run examples/oauth_proxy_server.py --transport http --port 8000

The tool ``whoami`` answers the caller's upstream login. Configuration, from the
environment (secrets never in code):

- ``UPSTREAM_CLIENT_ID``, ``UPSTREAM_CLIENT_SECRET``: this server's registration at the
  provider, whose callback URL is ``<this server's origin>/oauth/callback``
  (``http://127.0.0.1:8000/oauth/callback`` here);
- ``UPSTREAM_AUTHORIZE_URL``, ``UPSTREAM_TOKEN_URL``, ``UPSTREAM_USER_URL``: a plain
  OAuth 2 provider's endpoints (GitHub's when none is set), with ``UPSTREAM_SUBJECT_FIELD``
  (default ``id``) naming the user in the user endpoint's answer; or ``UPSTREAM_ISSUER``:
  an OpenID Connect provider, found by discovery;
- ``UPSTREAM_SCOPES``: scopes asked upstream (space-separated);
- ``RESOURCE``: this server's URL as clients reach it (default: the URL served, on
  loopback); ``TRIMCP_AUTHSERVER_SECRET``: seals what the store keeps (``trimcp run`` reads
  it; give every replica the same one). With ``--workers N``, add ``--store
  redis://HOST:PORT/DB``: the workers then share the logins.

Needs ``pip install 'trimcp[auth]'``. docs/authorization.md ("Log in with GitHub, Google
or your OIDC provider") runs it on loopback against oidc-provider.
"""

from __future__ import annotations

import os

from trimcp import Context, Server
from trimcp.authserver import AuthorizationServer, Upstream, github, oidc

env = os.environ
client_id = env.get("UPSTREAM_CLIENT_ID", "")
client_secret = env.get("UPSTREAM_CLIENT_SECRET", "")
scopes = tuple(env.get("UPSTREAM_SCOPES", "").split())
upstream: Upstream
if env.get("UPSTREAM_ISSUER"):
    upstream = oidc(env["UPSTREAM_ISSUER"], client_id, client_secret, scopes=scopes or ("openid",))
elif env.get("UPSTREAM_AUTHORIZE_URL"):
    upstream = Upstream(
        client_id=client_id,
        client_secret=client_secret,
        authorize_url=env["UPSTREAM_AUTHORIZE_URL"],
        token_url=env.get("UPSTREAM_TOKEN_URL"),
        user_url=env.get("UPSTREAM_USER_URL"),
        subject_field=env.get("UPSTREAM_SUBJECT_FIELD", "id"),
        scopes=scopes,
        display_name=env.get("UPSTREAM_NAME", "your identity provider"),
    )
else:
    upstream = github(client_id, client_secret, scopes=scopes)

auth = AuthorizationServer(
    resource=env.get("RESOURCE"),  # None: the URL served (loopback, fixed port)
    upstream=upstream,
    server_name="whoami",
)
app = Server("whoami", auth=auth)


@app.tool()
async def whoami(ctx: Context) -> str:
    """Who you logged in as, at which provider."""
    assert ctx.auth is not None  # the MCP endpoint admits only trimcp's own tokens
    claims = ctx.auth.claims
    name = claims.get("login") or claims.get("preferred_username") or claims.get("email")
    shown = f"{name} " if name else ""
    return f"{shown}(user {ctx.auth.subject} at {claims.get('idp')}) via {ctx.auth.client_id}"


if __name__ == "__main__":
    app.run(transport="http", port=8000)
