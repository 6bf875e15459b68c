"""The official SDK client (PyPI ``mcp``) in 2026-07-28 through a balancer: one
``subscriptions/listen`` stream hears changes raised on every replica.

Usage: ``python sdk_listen_client.py URL --rounds N``. Opens a listen stream (tools list
changes, and resource subscriptions to ``bus://0`` .. ``bus://N-1``), then for each
round: ``touch`` ``bus://<round>`` (a resource update, raised on whichever replica the
balancer picks) and waits for that update on the stream; then ``grow`` a tool (a tools
list change) and waits for it. Prints one JSON report: the negotiated version, the
filter the server honoured, and per round the pid of the replica that raised each
change and whether the stream heard it (and how often). Every wait is bounded. Imports
nothing from trimcp.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections import Counter
from typing import Any

import anyio
from mcp.client import Client
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent, ToolsListChanged

WAIT = 10.0


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def next_event(events: Any) -> ServerEvent | None:
    with anyio.move_on_after(WAIT):
        event: ServerEvent = await events.__anext__()
        return event
    return None


async def run(url: str, rounds: int, report: dict[str, Any]) -> None:
    updates: Counter[str] = Counter()
    lists = 0
    async with Client(url, mode="auto", read_timeout_seconds=20) as client:
        report["protocol_version"] = client.protocol_version
        uris = [f"bus://{n}" for n in range(rounds)]
        async with client.listen(tools_list_changed=True, resource_subscriptions=uris) as sub:
            honored = sub.honored
            report["honored"] = {
                "tools": honored.tools_list_changed,
                "resources": honored.resource_subscriptions,
            }
            steps: list[dict[str, Any]] = []
            report["rounds"] = steps
            for n in range(rounds):
                step: dict[str, Any] = {}
                steps.append(step)
                step["touched_on"] = text_of(await client.call_tool("touch", {"n": n}))
                while (event := await next_event(sub)) is not None:
                    if isinstance(event, ResourceUpdated):
                        updates[event.uri] += 1
                        if event.uri == uris[n]:
                            break
                    elif isinstance(event, ToolsListChanged):
                        lists += 1
                step["updated"] = event is not None
                step["grown_on"] = text_of(
                    await client.call_tool("grow", {"name": f"sdk_listen_{n}"})
                )
                heard = lists
                while lists == heard and (event := await next_event(sub)) is not None:
                    if isinstance(event, ResourceUpdated):
                        updates[event.uri] += 1
                    elif isinstance(event, ToolsListChanged):
                        lists += 1
                step["list_changed"] = lists > heard
            # A duplicate would arrive meanwhile: round trips through every replica.
            for _ in range(3):
                await client.call_tool("whoami", {})
            with anyio.move_on_after(1):
                async for event in sub:
                    if isinstance(event, ResourceUpdated):
                        updates[event.uri] += 1
    report["updates"] = dict(updates)
    report["list_changes"] = lists


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    code = 0
    try:
        anyio.run(run, args.url, args.rounds, report)
    except BaseException:
        report["error"] = traceback.format_exc()
        code = 1
    json.dump(report, sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
