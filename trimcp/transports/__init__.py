"""Transports: move whole MCP messages between peers."""
