"""The sans-IO protocol core: JSON-RPC envelopes, framing, lifecycle, versions (no I/O)."""
