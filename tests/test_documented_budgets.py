"""docs/input-limits.md lists every limit and budget with its default, as the code has it.

Each row of the page's tables with a "Default" column is read as "these settings, these
defaults" (several separated by ``;``), and compared both ways with the code: a
default changed in the code or on the page fails, and so does a limit the page lists
that no test pins here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from trimcp.auth import discovery
from trimcp.auth.dpop import DpopChecker, MemoryReplayCache
from trimcp.authserver import clients as authserver_clients
from trimcp.authserver import server as authserver_server
from trimcp.authserver.redis_store import RedisAuthStore
from trimcp.authserver.store import MemoryAuthStore
from trimcp.client import Client
from trimcp.protocol import modern
from trimcp.protocol import skills as skills_wire
from trimcp.protocol.connection import Connection
from trimcp.protocol.lifecycle import Role
from trimcp.server import openapi
from trimcp.server import skills as skills_server
from trimcp.server.state import MAX_KEY_BYTES
from trimcp.server.stateless import StatelessOptions
from trimcp.session import SessionOptions
from trimcp.session import late as late_answers
from trimcp.stores import RedisStore
from trimcp.stores.event_ids import MAX_EVENT_ID_CHARS, MAX_NAMED_IDS
from trimcp.stores.events import InMemoryEventStore
from trimcp.stores.replay import RedisReplayCache
from trimcp.stores.user_state import StateBudget
from trimcp.tasks.store import SMALL_PAYLOAD_BYTES, TaskBudget
from trimcp.transports.http_server import HttpServerConfig
from trimcp.transports.http_server.asgi import parse_body
from trimcp.transports.stdio import serve_stdio
from trimcp.transports.websocket import serve_websocket

PAGE = Path(__file__).resolve().parent.parent / "docs" / "input-limits.md"
#: A setting as the page names it: ``Class.field``, ``NAME`` or ``function(parameter)``.
SETTING = re.compile(r"`([\w.]+(?:\(\w+\))?)`")


def _size(value: int) -> str:
    """How the page writes a default: a count as is, bytes in KiB or MiB when whole."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return str(value)


def _table_rows(text: str) -> dict[str, str]:
    """Setting name -> the default the page gives, from every row of every table whose
    header ends in "Default" (three columns: what, the settings, their defaults)."""
    rows: dict[str, str] = {}
    header: list[str] = []
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            header = []  # a table ends at the first line that is not a row
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif header[-1] == "Default" and len(cells) == 3 and not set(cells[0]) <= {"-"}:
            names = SETTING.findall(cells[1])
            defaults = [part.strip() for part in cells[2].split(";")]
            assert names, f"a limit without a setting in backticks: {line}"
            assert len(names) == len(defaults), f"names and defaults do not pair up: {line}"
            rows.update(zip(names, defaults, strict=True))
    return rows


def _parameter_default(function: Callable[..., Any], name: str) -> Any:
    return inspect.signature(function).parameters[name].default


#: Every limit and budget: (the name the page uses, the default the code has).
LIMITS: list[tuple[str, int]] = [
    ("serve_stdio(max_message_bytes)", _parameter_default(serve_stdio, "max_message_bytes")),
    (
        "serve_websocket(max_message_bytes)",
        _parameter_default(serve_websocket, "max_message_bytes"),
    ),
    ("HttpServerConfig.max_body_bytes", HttpServerConfig().max_body_bytes),
    *(
        (f"HttpServerConfig.{name}", getattr(HttpServerConfig(), name))
        for name in ("max_follows", "max_follows_per_principal", "max_follows_per_session")
    ),
    ("MAX_EVENT_ID_CHARS", MAX_EVENT_ID_CHARS),
    ("MAX_NAMED_IDS", MAX_NAMED_IDS),
    *(
        (f"InMemoryEventStore({name})", _parameter_default(InMemoryEventStore, name))
        for name in ("max_events", "max_bytes")
    ),
    *(
        (f"RedisStore({name})", _parameter_default(RedisStore, name))
        for name in ("max_events", "max_event_bytes")
    ),
    ("Client(max_pages)", _parameter_default(Client, "max_pages")),
    ("auth.discovery.MAX_AUTHORIZATION_SERVERS", discovery.MAX_AUTHORIZATION_SERVERS),
    ("session.late.MAX_LATE_ANSWERS", late_answers.MAX_LATE_ANSWERS),
    ("session.late.LATE_ANSWER_SECONDS", late_answers.LATE_ANSWER_SECONDS),
    ("Connection.max_batch", Connection(Role.SERVER).max_batch),
    ("SessionOptions.max_in_flight", SessionOptions().max_in_flight),
    ("META_CACHE_ENTRIES", modern.META_CACHE_ENTRIES),
    ("META_CACHE_BYTES", modern.META_CACHE_BYTES),
    ("META_CACHE_ENTRY_BYTES", modern.META_CACHE_ENTRY_BYTES),
    ("protocol.skills.MAX_FILES", skills_wire.MAX_FILES),
    ("protocol.skills.MAX_TOTAL_BYTES", skills_wire.MAX_TOTAL_BYTES),
    ("server.skills.MAX_FOLDER_ENTRIES", skills_server.MAX_FOLDER_ENTRIES),
    *(
        (f"{cache.__name__}({name})", _parameter_default(cache, name))
        for cache, name in (
            (MemoryReplayCache, "max_entries"),
            (MemoryReplayCache, "max_entries_per_key"),
            (RedisReplayCache, "max_entries_per_key"),
            (DpopChecker, "max_skew"),
            (MemoryAuthStore, "max_entries"),
            (MemoryAuthStore, "max_per_client"),
            (RedisAuthStore, "max_per_client"),
        )
    ),
    ("authserver.server.MAX_FORM_BYTES", authserver_server.MAX_FORM_BYTES),
    ("authserver.clients.MAX_DOCUMENT_BYTES", authserver_clients.MAX_DOCUMENT_BYTES),
    ("authserver.clients.MAX_REDIRECT_URIS", authserver_clients.MAX_REDIRECT_URIS),
    *(
        (f"StatelessOptions.{name}", getattr(StatelessOptions(), name))
        for name in ("listen_max_streams", "listen_max_streams_per_principal")
    ),
    *(
        (f"TaskBudget.{field.name}", field.default)
        for field in attrs.fields(TaskBudget)
        if isinstance(field.default, int)
    ),
    *(
        (f"StateBudget.{field.name}", getattr(StateBudget(), field.name))
        for field in attrs.fields(StateBudget)
    ),
    ("server.state.MAX_KEY_BYTES", MAX_KEY_BYTES),
    ("server.openapi.MAX_DOCUMENT_BYTES", openapi.MAX_DOCUMENT_BYTES),
    ("server.openapi.MAX_SCHEMA_NODES", openapi.MAX_SCHEMA_NODES),
    (
        "OpenApiProvider(max_response_bytes)",
        _parameter_default(openapi.OpenApiProvider, "max_response_bytes"),
    ),
]


@pytest.mark.parametrize(("name", "default"), LIMITS, ids=[name for name, _ in LIMITS])
def test_each_limit_is_documented_with_its_default(name: str, default: int) -> None:
    rows = _table_rows(PAGE.read_text())
    assert name in rows, f"docs/input-limits.md does not list {name}"
    assert rows[name] == _size(default), f"{name}: the page says {rows[name]}, the code {default}"


def test_every_limit_the_page_lists_is_pinned() -> None:
    assert set(_table_rows(PAGE.read_text())) == {name for name, _ in LIMITS}


def test_the_http_batch_limit_is_the_sessions() -> None:
    """A POST body's batch is refused by ``parse_body`` before any session sees it: its
    default must be the one the page documents for ``Connection.max_batch``."""
    assert _parameter_default(parse_body, "max_batch") == Connection(Role.SERVER).max_batch


def test_the_small_error_that_is_always_kept() -> None:
    found = re.search(r"at most ([\d,]+ \w+) \(`SMALL_PAYLOAD_BYTES`\)", PAGE.read_text())
    assert found is not None, "docs/input-limits.md no longer states SMALL_PAYLOAD_BYTES"
    assert found.group(1) == _size(SMALL_PAYLOAD_BYTES)


def test_the_reader_sees_a_changed_default() -> None:
    """The comparison is not vacuous: a page or a code default of 1000 reads differently."""
    head = "| What | Limit | Default |\n|---|---|---|\n"
    row = "| Members of one batch | `Connection.max_batch` | 1000 |"
    assert _table_rows(head + row) == {"Connection.max_batch": "1000"}
    assert _size(1000) != "100"
    two = "| a | `f(x)`; `B` | 4 MiB; 1 KiB |"
    assert _table_rows(head + two) == {"f(x)": "4 MiB", "B": "1 KiB"}
    assert _table_rows("| What | Answer |\n|---|---|\n" + row) == {}  # not a limits table
