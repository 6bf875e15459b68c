"""The official TypeScript everything server (``@modelcontextprotocol/server-everything``) as
a peer for trimcp's client: ``setup.sh`` installs it, ``conftest.py`` starts it."""
