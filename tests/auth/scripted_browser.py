"""A browser for the recipe tests (``BROWSER="python scripted_browser.py %s"``): allows
trimcp's own consent page when there is one, logs in at oidc-provider's form as
``$BROWSER_LOGIN``, and follows the redirect back to the client's loopback listener. It
returns at once (the work goes on in a child): the client listens for the redirect only once
the browser command returned."""

from __future__ import annotations

import os
import re
import sys
import urllib.parse

import trio

from trimcp.auth import FollowRedirects
from trimcp.auth.fetch import Fetcher


def fill_in(url: str, body: bytes) -> tuple[str, dict[str, str]] | None:
    action = re.search(rb'action="([^"]+)"', body)
    if action is None:
        return None
    target = action.group(1).decode().replace("&amp;", "&")
    if b'name="decision"' in body:  # trimcp's consent page: allow
        fields = dict(re.findall(rb'type="hidden" name="([^"]+)" value="([^"]*)"', body))
        form = {k.decode(): v.decode() for k, v in fields.items()}
        return target, {**form, "decision": "approve"}
    return target, {"login": os.environ.get("BROWSER_LOGIN", "alice")}


async def visit(url: str) -> None:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    callback = await FollowRedirects(query["redirect_uri"][0], login=fill_in).authorize(url)
    fetcher = Fetcher(timeout=30)
    try:
        await fetcher.get(callback)
    finally:
        await fetcher.aclose()


if __name__ == "__main__":
    if os.fork() == 0:
        trio.run(visit, sys.argv[1])
