"""Servers benchmarked by the load generators; each serves echo(text) -> text over stdio."""
