"""The two pages a user sees: the consent page and the error page.

Plain HTML, no script, no external resource (fonts, images, styles): every value is
escaped, and the response headers forbid framing (clickjacking) and loading anything
(``Content-Security-Policy: default-src 'none'``, only the inline style allowed).
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

#: Headers of every page.
PAGE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.5;color:#111;background:#fff}"
    "code{overflow-wrap:anywhere}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:1rem}"
    ".warn{border-left:4px solid #b45309;padding-left:.75rem}"
)


def _page(title: str, body: str) -> bytes:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>"
    ).encode()


def consent_page(
    *,
    client_name: str | None,
    client_id: str,
    redirect_host: str,
    scopes: Iterable[str],
    server_name: str,
    upstream_name: str,
    action: str,
    ask: str,
    signed_in_as: str | None = None,
) -> bytes:
    """The page asking whether ``client_id`` may act for the user on ``server_name``.

    ``action``: where the form posts; ``ask``: the one-time id of this request (the
    form's only secret: it works only with the cookie of the browser it was shown to).
    ``signed_in_as``: who signed in upstream, when the page comes after that sign-in."""
    name = client_name or "An unnamed application"
    scope_items = "".join(f"<li><code>{escape(s)}</code></li>" for s in scopes) or (
        "<li>no particular permission</li>"
    )
    if signed_in_as is None:
        when = f"After you sign in with {escape(upstream_name)}, you"
        who = ""
    else:
        when = "If you allow it, you"
        who = (
            f"<p>Signed in as <strong>{escape(signed_in_as)}</strong> with "
            f"{escape(upstream_name)}.</p>"
        )
    body = (
        f"<h1>Allow {escape(name)} to use {escape(server_name)}?</h1>"
        f"<p><strong>{escape(name)}</strong> (client id <code>{escape(client_id)}</code>) "
        f"asks to act for you on <strong>{escape(server_name)}</strong>.</p>{who}"
        f'<p class="warn">{when} will be sent to '
        f"<strong><code>{escape(redirect_host)}</code></strong>. The name above is what "
        "the application says about itself: continue only if you started this and trust "
        "that address.</p>"
        f"<h2>Permissions asked</h2><ul>{scope_items}</ul>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="ask" value="{escape(ask)}">'
        '<button type="submit" name="decision" value="approve">Allow</button>'
        '<button type="submit" name="decision" value="deny">Deny</button>'
        "</form>"
    )
    return _page(f"Allow {name}?", body)


def error_page(message: str) -> bytes:
    """A page saying what was wrong with the request (nothing to do but go back)."""
    body = (
        "<h1>This sign-in request cannot continue</h1>"
        f"<p>{escape(message)}</p>"
        "<p>Go back to the application and start again.</p>"
    )
    return _page("Sign-in error", body)
