"""Extensions through the proxy, in both eras (a session client and a 2026-07-28 client,
each over Streamable HTTP to a ProxyServer in front of a trimcp server): the backend's
declarations reach the client unchanged, the client's reach the backend, and the
extensions' methods are relayed: Skills (skills/list, skills/get,
resources/directory/read, verified reads of skill:// files) and a user-defined one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

import trimcp
from tests.proxy.test_proxy_2026 import proxy_over_http
from tests.server.test_extensions import NOTES_ID, SEARCH, NoteHits, NoteQuery, notes_extension
from trimcp.client import Client
from trimcp.client.skills import get_skill, list_skills, read_skill_file
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol import skills as wire
from trimcp.proxy import ProxyServer
from trimcp.server.skills import Skill, Skills
from trimcp.session import serve_session
from trimcp.session.transport import Transport
from trimcp.transports.memory import memory_transport_pair

SKILL_MD = "---\nname: triage\ndescription: Sort incoming bugs\n---\nLabel, then assign.\n"
LABELS = "bug\nfeature\nquestion\n"


def skills_backend() -> trimcp.Server:
    app = trimcp.Server("skills-upstream", page_size=1)
    skills = Skills(app)
    skills.add(Skill.from_text(SKILL_MD, {"reference/labels.txt": LABELS}))
    skills.add(Skill.from_text("---\nname: zebra\ndescription: Stripes\n---\nStripes.\n"))
    app.add_extension(notes_extension())
    return app


def proxy_for(app: trimcp.Server, *, sessions_only: bool) -> ProxyServer:
    """A proxy whose backend is ``app`` over memory, speaking both eras (or the session
    era only)."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        proxy_end, server_end = memory_transport_pair()
        async with trio.open_nursery() as nursery:
            if sessions_only:
                nursery.start_soon(serve_session, server_end, app)
            else:
                nursery.start_soon(app.serve_stream, server_end)
            yield proxy_end
            nursery.cancel_scope.cancel()

    return ProxyServer(connect, label="the skills backend")


@asynccontextmanager
async def through_proxy(mode: str, *, sessions_only: bool = False) -> AsyncIterator[Client]:
    proxy = proxy_for(skills_backend(), sessions_only=sessions_only)
    async with (
        proxy_over_http(proxy) as url,
        trimcp.connect_http(url, mode=mode, extensions={NOTES_ID: {}}) as client,
    ):
        expected = "2025-11-25" if mode != "2026-07-28" else mode
        assert client.protocol_version == expected
        yield client


MODES = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_skills_are_declared_listed_and_read_verified_through_the_proxy(mode: str) -> None:
    with trio.fail_after(30):
        async with through_proxy(mode) as client:
            assert client.extension(wire.EXTENSION_ID) == {"directoryRead": True}
            first = await list_skills(client)
            assert [e["uri"] for e in first["skills"]] == ["skill://triage/SKILL.md"]
            second = await list_skills(client, first["nextCursor"])
            assert [e["uri"] for e in second["skills"]] == ["skill://zebra/SKILL.md"]
            entry = await get_skill(client, "skill://triage/SKILL.md")
            assert entry == first["skills"][0]
            assert await read_skill_file(client, entry, entry["uri"]) == SKILL_MD.encode()
            labels = await read_skill_file(client, entry, "skill://triage/reference/labels.txt")
            assert labels == LABELS.encode()
            top = await client.request(wire.READ_DIRECTORY, {"uri": "skill://triage"})
            assert [(r["name"], r.get("mimeType")) for r in top["resources"]] == [
                ("SKILL.md", "text/markdown"),
                ("reference", wire.DIRECTORY_MIME),
            ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_backends_refusal_of_an_extension_method_reaches_the_client(mode: str) -> None:
    with trio.fail_after(30):
        async with through_proxy(mode) as client:
            with pytest.raises(McpError) as info:
                await get_skill(client, "skill://nosuch/SKILL.md")
            assert (info.value.code, info.value.message) == (
                INVALID_PARAMS,
                "No skill is served at skill://nosuch/SKILL.md",
            )


@pytest.mark.parametrize("mode", MODES)
async def test_a_user_extension_is_declared_both_ways_and_typed_through_the_proxy(
    mode: str,
) -> None:
    with trio.fail_after(30):
        async with through_proxy(mode) as client:
            assert client.extension(NOTES_ID) == {"maxResults": 20}
            found = await client.request(SEARCH, NoteQuery(text="milk"))
            # client_declared: the backend saw the client's declaration through the proxy.
            assert found == NoteHits(hits=["buy milk", "milk the cow"], client_declared=True)


async def test_an_auto_client_falls_back_to_a_session_and_still_gets_the_extensions() -> None:
    # A backend that speaks only the session era: the proxy refuses server/discover as
    # such a server does, and the auto client's session carries the extensions.
    with trio.fail_after(30):
        async with through_proxy("auto", sessions_only=True) as client:
            assert client.extension(wire.EXTENSION_ID) == {"directoryRead": True}
            page = await list_skills(client)
            assert page["skills"][0]["frontmatter"]["name"] == "triage"
