"""Reading Skills (SEP-2640) from a server, verified: the client side of
:mod:`trimcp.protocol.skills`.

Nothing is fetched ahead of need: :func:`list_skills` (one page), :func:`iter_skills`
(every page, at most the client's ``max_pages``) and :func:`get_skill` return entries
(URI, front matter, manifest) only; :func:`read_skill_file` reads one file when asked and
checks it against the entry's manifest before returning it: its size, its SHA-256 digest
and, for ``SKILL.md``, that its front matter equals the entry's field by field. Content
that fails is never returned: :class:`SkillVerificationError` says what differed.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from trimcp.client.pagination import PageIterator
from trimcp.errors import LocalProtocolError
from trimcp.protocol import skills as wire
from trimcp.types import BlobResourceContents, TextResourceContents

if TYPE_CHECKING:
    from trimcp.client.client import Client


class SkillVerificationError(LocalProtocolError):
    """A skill file read from the server does not match its entry's manifest."""


async def list_skills(client: Client, cursor: str | None = None) -> dict[str, Any]:
    """One page of ``skills/list``: ``{"skills": [entry...], "nextCursor"?}``."""
    _require(client)
    return await client.request(wire.LIST_SKILLS, {"cursor": cursor} if cursor else {})


def iter_skills(client: Client, *, max_pages: int | None = None) -> PageIterator[dict[str, Any]]:
    """Every skill entry, page after page, fetched as the iteration goes: at most
    ``max_pages`` pages (default the client's ``max_pages``), then
    :class:`~trimcp.client.PaginationError` after the entries received, as for
    ``client.iter_tools()`` (a server handing out a new cursor on every page cannot keep
    it going). Raises ``LocalProtocolError`` at once when the server serves no skills.
    Cancellation: cancelling a fetch cancels that request; drop the iterator then."""
    _require(client)

    async def fetch(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        page = await list_skills(client, cursor)
        entries = page.get("skills")
        following = page.get("nextCursor")
        return (
            [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else [],
            following if isinstance(following, str) else None,
        )

    bound = client.max_pages if max_pages is None else max_pages
    return PageIterator(wire.LIST_SKILLS.name, fetch, bound)


async def get_skill(client: Client, uri: str) -> dict[str, Any]:
    """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``)."""
    _require(client)
    result = await client.request(wire.GET_SKILL, {"uri": uri})
    entry: dict[str, Any] = result["skill"]
    return entry


async def read_skill_file(client: Client, entry: dict[str, Any], uri: str) -> bytes:
    """Read ``uri``, a file of the skill ``entry``, and return its bytes once verified.

    Raises :class:`SkillVerificationError` when ``uri`` is not in the entry's manifest,
    or its size, digest or (``SKILL.md``) front matter differ. Cancellation: as
    :meth:`Client.read_resource`; nothing is returned."""
    manifest = entry.get("resources")
    listed = (
        next((r for r in manifest if isinstance(r, dict) and r.get("uri") == uri), None)
        if isinstance(manifest, list)
        else None
    )
    if listed is None and manifest != "dynamic":
        raise SkillVerificationError(f"{uri} is not a file of the skill {entry.get('uri')}")
    result = await client.read_resource(uri)
    data = b"".join(_bytes(c) for c in result.contents)
    if listed is not None:
        if len(data) != listed.get("size"):
            raise SkillVerificationError(
                f"{uri}: read {len(data)} bytes, the manifest says {listed.get('size')}"
            )
        if wire.digest(data) != listed.get("digest"):
            raise SkillVerificationError(f"{uri}: its digest differs from the manifest's")
    if uri == entry.get("uri"):
        try:
            front, _ = wire.split_front_matter(data.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise SkillVerificationError(f"{uri}: {exc}") from None
        if front != entry.get("frontmatter"):
            differ = sorted(
                key
                for key in {*front, *(entry.get("frontmatter") or {})}
                if front.get(key) != (entry.get("frontmatter") or {}).get(key)
            )
            raise SkillVerificationError(
                f"{uri}: its front matter differs from the entry's ({', '.join(differ)})"
            )
    return data


def _bytes(content: Any) -> bytes:
    if isinstance(content, TextResourceContents):
        return content.text.encode()
    if isinstance(content, BlobResourceContents):
        return base64.b64decode(content.blob)
    return b""


def _require(client: Client) -> None:
    if client.extension(wire.EXTENSION_ID) is None:
        raise LocalProtocolError(
            f"{client.server_info.name} did not declare the {wire.EXTENSION_ID} extension; "
            "it serves no skills"
        )
