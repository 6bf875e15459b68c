"""MCP wire types: frozen, slotted, keyword-only attrs classes (no I/O)."""
