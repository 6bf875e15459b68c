"""Peers built on the official TypeScript SDK v2 (``@modelcontextprotocol/server`` and
``@modelcontextprotocol/client``): ``setup.sh`` installs the SDK, ``conftest.py`` has the
fixture the tests one level up import."""
