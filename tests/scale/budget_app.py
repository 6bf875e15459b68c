"""A replica with small budgets of what requests hold open, for tests/scale/test_follow_budgets.py.

``python budget_app.py --transport http --port N --store redis://...`` serves
``tests/scale/replica_app.py``'s ``slow`` tool with at most 16 follows per session, 45
per principal and 100 in all, and 1 listen stream per principal (2 in all).
"""

from __future__ import annotations

import argparse

import trio

import trimcp
from tests.scale.replica_app import slow
from trimcp.server.stateless import StatelessOptions
from trimcp.transports.http_server import HttpServerConfig, serve_http

app = trimcp.Server(
    "scale-budgets",
    version="1.0.0",
    stateless=StatelessOptions(listen_max_streams=2, listen_max_streams_per_principal=1),
)
app.add_tool(slow.fn)  # the same tool as every replica of the scale tests

CONFIG = HttpServerConfig(max_follows=100, max_follows_per_principal=45, max_follows_per_session=16)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["http"], default="http")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", required=True)
    args = parser.parse_args()
    trio.run(lambda: serve_http(app, port=args.port, config=CONFIG, store=args.store))


if __name__ == "__main__":
    main()
