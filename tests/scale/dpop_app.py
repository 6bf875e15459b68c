"""The server of the DPoP deployment test (``trimcp run`` on this file, protected by the
``--auth-*`` flags): ``whoami`` answers who called and which replica answered."""

from __future__ import annotations

import json
import os

import trimcp

app = trimcp.Server("dpop-replica", version="1.0.0")


@app.tool()
def whoami(ctx: trimcp.Context) -> str:
    """The caller's subject and key binding, and the pid of the replica that answered."""
    assert ctx.auth is not None
    cnf = ctx.auth.claims.get("cnf")
    return json.dumps({"sub": ctx.auth.subject, "cnf": cnf, "pid": os.getpid()})
