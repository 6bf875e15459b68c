"""Store URLs in messages: never with their password."""

from __future__ import annotations

from urllib.parse import urlsplit


def shown_url(url: str) -> str:
    """``url`` fit for a message or a log: a password in it becomes ``***`` (a store URL
    may carry the Redis password, and messages reach terminals, logs and bug reports)."""
    parts = urlsplit(url)
    try:
        password = parts.password
    except ValueError:
        password = None
    if not password and "@" not in parts.netloc:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()
