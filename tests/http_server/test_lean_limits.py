"""The lean engine's head limits, deterministically (memory streams, autojump clock).

The same head is delivered whole (one read: h11's own bound does not apply) and one byte
at a time (h11's bound on incomplete input applies): the answer is the same.
"""

from __future__ import annotations

import pytest
import trio

from tests.http_server.test_lean_engine import Wire, lean_connection, mcp_app, request


async def _answer(raw: bytes, delivery: str) -> tuple[int, dict[str, str], bytes]:
    async with mcp_app() as app, lean_connection(app) as (client, _):
        if delivery == "whole":
            await client.send_all(raw)
        else:
            for i in range(0, len(raw), 512):
                await client.send_all(raw[i : i + 512])
        wire = Wire(client)
        answer = await wire.response()
        rest = await wire.eof()
    return answer.status, answer.headers, rest


@pytest.mark.parametrize("delivery", ["whole", "in pieces"])
@pytest.mark.parametrize(
    ("extra", "path", "status"),
    [
        ([(f"x-pad-{i}", "a" * 1000) for i in range(60)], "/mcp", 431),
        ([("x-big", "b" * 17 * 1024)], "/mcp", 431),
        ([], "/mcp?" + "c" * 20 * 1024, 414),
    ],
    ids=["60 KiB head", "17 KiB header", "20 KiB request line"],
)
async def test_a_head_over_the_limit_is_refused_however_it_arrives(
    autojump_clock: trio.abc.Clock,
    delivery: str,
    extra: list[tuple[str, str]],
    path: str,
    status: int,
) -> None:
    raw = request("POST", path, b"{}", extra)
    got, headers, rest = await _answer(raw, delivery)
    assert got == status
    assert headers["connection"] == "close"
    assert rest == b""


async def test_a_head_of_exactly_the_limit_is_served(autojump_clock: trio.abc.Clock) -> None:
    base = request("POST", "/elsewhere", b"", [("x-pad", "")])
    pad = 16 * 1024 - (len(base) - 4) - 4
    raw = request("POST", "/elsewhere", b"", [("x-pad", "p" * pad)])
    assert raw.index(b"\r\n\r\n") + 4 == 16 * 1024
    got, _, _ = await _answer(
        raw + request("GET", "/elsewhere", b"", [("connection", "close")]), "whole"
    )
    assert got == 404  # served: the app answered


@pytest.mark.parametrize("spare", [0, 200])
async def test_the_limit_counts_a_head_as_written_with_a_space_after_each_colon(
    autojump_clock: trio.abc.Clock, spare: int
) -> None:
    # Header lines written "name:value" take a byte less on the wire than the limit counts
    # for them (the same count under every engine): 100 such lines in a head that fits the
    # limit on the wire are over it by that count, and refused; 200 bytes less and it fits.
    lines = b"".join(b"x-%d:v\r\n" % i for i in range(100))
    base = b"GET /elsewhere HTTP/1.1\r\nhost: h\r\n" + lines + b"x-pad:\r\n\r\n"
    pad = 16 * 1024 - len(base) - spare
    raw = base.replace(b"x-pad:", b"x-pad:" + b"p" * pad)
    assert len(raw) == 16 * 1024 - spare
    got, _, _ = await _answer(raw, "whole")
    assert got == (431 if spare == 0 else 404)
