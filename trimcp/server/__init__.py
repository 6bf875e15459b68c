"""The server framework: decorators, Context, and the low-level handler registry."""
