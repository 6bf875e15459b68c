"""A trimcp proxy over stdio in front of the stdio server given after ``--``.

Run: ``python tests/peers/proxy_peer.py -- python some_server.py``
"""

from __future__ import annotations

import os
import sys

from trimcp.proxy import ProxyServer

if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :]
    ProxyServer.for_command(argv, env=dict(os.environ)).run("stdio")
