"""Codec micro-benchmark: trimcp's message path against the official SDK's, in one run.

Each case times the full codec work one message costs on a real hot path (parse, check,
structure into typed objects; or build, unstructure, encode), per message, in µs:

- ``call-request-in``: a server reads one ``tools/call`` request.
- ``call-result-out``: a server builds and encodes the ``tools/call`` result (one text block).
- ``list50-result-out``: a server encodes a ``tools/list`` result holding 50 tools.
- ``list50-result-in``: a client reads that result back into typed objects.
- ``call-result-in``: a client reads a ``tools/call`` result.

trimcp goes through :class:`trimcp.protocol.connection.Connection` (``receive`` and
``send_result``), exactly as the session engine does: JSON parse, envelope checks,
lifecycle/capability checks, cattrs structure, and on the way out unstructure plus
compact JSON encoding.

The SDK (``mcp`` 2.x, ``mcp_types``) is driven through the calls its own hot path makes:
its stdio transport parses a line with ``jsonrpc_message_adapter.validate_json``; the
server runner validates params with ``<Params>.model_validate``, dumps the handler's
result with ``model_dump(by_alias, mode="json", exclude_none)`` and sieves it through
``mcp_types.methods.serialize_server_result``; the transport writes
``JSONRPCResponse(...).model_dump_json(by_alias, exclude_unset)``. Its client validates
a result with ``validate_server_result`` and then ``<Result>.model_validate``.

Each case runs ``--repeats`` batches of ``--count`` messages per implementation,
alternating implementations; the median batch gives µs per message (min and max are
kept too). Garbage collection stays on, as in a real server.

Run: ``python -m benchmarks.codec [--count N] [--repeats R] [--json]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from trimcp import serde
from trimcp.protocol.connection import Connection
from trimcp.protocol.lifecycle import Role
from trimcp.types import (
    CallToolResult,
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolsCapability,
)

__all__ = ["CASES", "main", "run"]

PROTOCOL_VERSION = "2025-11-25"
TOOLS_IN_LIST = 50

#: Case name -> what one message of it is, for the printed table.
CASES: dict[str, str] = {
    "call-request-in": "server reads a tools/call request",
    "call-result-out": "server builds + encodes a tools/call result",
    "list50-result-out": "server encodes a tools/list result (50 tools)",
    "list50-result-in": "client reads a tools/list result (50 tools)",
    "call-result-in": "client reads a tools/call result",
}

# A batch runs ``count`` messages and returns nothing; setup happens before timing.
Batch = Callable[[], None]
# Given a count, prepare (untimed) and return the batch to time.
Prepare = Callable[[int], Batch]


def _schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": f"Text for tool {i}."},
            "count": {"type": "integer", "minimum": 0},
        },
        "required": ["text"],
    }


def _call_request(request_id: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
        b'"params":{"name":"echo","arguments":{"text":"hello %d"}}}' % (request_id, request_id)
    )


def _list_request(request_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % request_id


def _list_result_wire() -> dict[str, Any]:
    return {
        "tools": [
            {
                "name": f"tool_{i}",
                "description": f"Tool number {i}: does a thing with text.",
                "inputSchema": _schema(i),
            }
            for i in range(TOOLS_IN_LIST)
        ]
    }


def _call_result_wire(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _response_bytes(request_id: int, result: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return json.dumps(message, separators=(",", ":")).encode()


# ----------------------------------------------------------------------------- trimcp


def _trimcp_server() -> Connection:
    """A server connection past the handshake, with the tools capability declared."""
    conn = Connection(Role.SERVER)
    params = InitializeRequestParams(
        protocol_version=PROTOCOL_VERSION,
        capabilities=ClientCapabilities(),
        client_info=Implementation(name="bench", version="1"),
    )
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": serde.unstructure(params)}
    conn.receive(json.dumps(init).encode())
    conn.send_result(
        0,
        InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            capabilities=ServerCapabilities(tools=ToolsCapability()),
            server_info=Implementation(name="bench", version="1"),
        ),
    )
    conn.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return conn


def _trimcp_client(first_requests: int, method: str, params: Any) -> Connection:
    """A client connection past the handshake with ``first_requests`` requests in flight
    (ids 2 .. first_requests + 1)."""
    conn = Connection(Role.CLIENT)
    params0 = InitializeRequestParams(
        protocol_version=PROTOCOL_VERSION,
        capabilities=ClientCapabilities(),
        client_info=Implementation(name="bench", version="1"),
    )
    init_id, _ = conn.send_request("initialize", params0)
    assert isinstance(init_id, int)
    result = InitializeResult(
        protocol_version=PROTOCOL_VERSION,
        capabilities=ServerCapabilities(tools=ToolsCapability()),
        server_info=Implementation(name="bench", version="1"),
    )
    conn.receive(_response_bytes(init_id, serde.unstructure(result)))
    conn.send_notification("notifications/initialized")
    for _ in range(first_requests):
        conn.send_request(method, params)
    return conn


def _trimcp_call_request_in(count: int) -> Batch:
    conn = _trimcp_server()
    lines = [_call_request(i) for i in range(1, count + 1)]
    receive, forget = conn.receive, conn.forget_inbound

    def batch() -> None:
        for i, line in enumerate(lines, 1):
            receive(line)
            forget(i)

    return batch


def _trimcp_call_result_out(count: int) -> Batch:
    conn = _trimcp_server()
    for i in range(1, count + 1):
        conn.receive(_call_request(i))
    send_result = conn.send_result

    def batch() -> None:
        for i in range(1, count + 1):
            send_result(i, CallToolResult(content=[TextContent(text=f"hello {i}")]))

    return batch


def _trimcp_tools() -> list[Tool]:
    return [
        Tool(
            name=f"tool_{i}",
            description=f"Tool number {i}: does a thing with text.",
            input_schema=_schema(i),
        )
        for i in range(TOOLS_IN_LIST)
    ]


def _trimcp_list_result_out(count: int) -> Batch:
    conn = _trimcp_server()
    for i in range(1, count + 1):
        conn.receive(_list_request(i))
    tools = _trimcp_tools()  # registered once, as a server holds them
    send_result = conn.send_result

    def batch() -> None:
        for i in range(1, count + 1):
            send_result(i, ListToolsResult(tools=tools))

    return batch


def _trimcp_result_in(method: str, result: dict[str, Any]) -> Prepare:
    def prepare(count: int) -> Batch:
        conn = _trimcp_client(count, method, {"name": "echo"} if method == "tools/call" else None)
        lines = [_response_bytes(i, result) for i in range(2, count + 2)]
        receive = conn.receive

        def batch() -> None:
            for line in lines:
                receive(line)

        return batch

    return prepare


# ----------------------------------------------------------------------------- the SDK


def _sdk_available() -> str | None:
    """None when the official SDK's types import, else why not."""
    try:
        import mcp_types  # noqa: F401
        from mcp_types import methods  # noqa: F401
    except ImportError as exc:
        return f"the official SDK (mcp >= 2, mcp_types) is not importable: {exc}"
    return None


def _sdk_cases() -> dict[str, Prepare]:
    import mcp_types as t
    from mcp_types import methods

    adapter = t.jsonrpc_message_adapter
    version = PROTOCOL_VERSION

    def result_out(method: str, make_result: Callable[[int], Any]) -> Prepare:
        def prepare(count: int) -> Batch:
            def batch() -> None:
                for i in range(1, count + 1):
                    # runner._serialize: dump, sieve through the per-version surface;
                    # then the transport encodes the response envelope.
                    dumped = make_result(i).model_dump(
                        by_alias=True, mode="json", exclude_none=True
                    )
                    dumped = methods.serialize_server_result(method, version, dumped)
                    response = t.JSONRPCResponse(jsonrpc="2.0", id=i, result=dumped)
                    response.model_dump_json(by_alias=True, exclude_unset=True)

            return batch

        return prepare

    def call_request_in(count: int) -> Batch:
        lines = [_call_request(i) for i in range(1, count + 1)]

        def batch() -> None:
            for line in lines:
                message = adapter.validate_json(line, by_name=False)
                t.CallToolRequestParams.model_validate(message.params, by_name=False)  # type: ignore[union-attr]

        return batch

    tools = [
        t.Tool(
            name=f"tool_{i}",
            description=f"Tool number {i}: does a thing with text.",
            input_schema=_schema(i),
        )
        for i in range(TOOLS_IN_LIST)
    ]

    def result_in(method: str, result_type: Any, result: dict[str, Any]) -> Prepare:
        def prepare(count: int) -> Batch:
            lines = [_response_bytes(i, result) for i in range(2, count + 2)]

            def batch() -> None:
                for line in lines:
                    message = adapter.validate_json(line, by_name=False)
                    raw = message.result  # type: ignore[union-attr]
                    methods.validate_server_result(method, version, raw)
                    result_type.model_validate(raw, by_name=False)

            return batch

        return prepare

    return {
        "call-request-in": call_request_in,
        "call-result-out": result_out(
            "tools/call",
            lambda i: t.CallToolResult(content=[t.TextContent(type="text", text=f"hello {i}")]),
        ),
        "list50-result-out": result_out("tools/list", lambda i: t.ListToolsResult(tools=tools)),
        "list50-result-in": result_in("tools/list", t.ListToolsResult, _list_result_wire()),
        "call-result-in": result_in("tools/call", t.CallToolResult, _call_result_wire("hello")),
    }


def _trimcp_cases() -> dict[str, Prepare]:
    return {
        "call-request-in": _trimcp_call_request_in,
        "call-result-out": _trimcp_call_result_out,
        "list50-result-out": _trimcp_list_result_out,
        "list50-result-in": _trimcp_result_in("tools/list", _list_result_wire()),
        "call-result-in": _trimcp_result_in("tools/call", _call_result_wire("hello")),
    }


# ----------------------------------------------------------------------------- running


def _time_batch(prepare: Prepare, count: int) -> float:
    """µs per message of one freshly prepared batch."""
    batch = prepare(count)
    gc.collect()
    start = time.perf_counter_ns()
    batch()
    return (time.perf_counter_ns() - start) / 1000.0 / count


def _run_case(
    case: str,
    impls: dict[str, dict[str, Prepare]],
    count: int,
    repeats: int,
    results: dict[str, dict[str, Any]],
    ratios: dict[str, float],
) -> None:
    samples: dict[str, list[float]] = {name: [] for name in impls}
    for table in impls.values():  # warm-up: imports, caches, specialised code
        _time_batch(table[case], min(count, 200))
    for _ in range(repeats):
        for name, table in impls.items():
            samples[name].append(_time_batch(table[case], count))
    results[case] = {
        name: {
            "median": statistics.median(values),
            "min": min(values),
            "max": max(values),
            "samples": values,
        }
        for name, values in samples.items()
    }
    if "sdk" in results[case]:
        ratios[case] = results[case]["sdk"]["median"] / results[case]["trimcp"]["median"]


def run(count: int = 2000, repeats: int = 5, *, cases: list[str] | None = None) -> dict[str, Any]:
    """Time every case for trimcp and (when importable) the SDK.

    Returns ``{"cases": {case: {impl: {"median", "min", "max", "samples"}}},
    "ratios": {case: sdk_median / trimcp_median}, "sdk_skipped": reason-or-None}``;
    times are µs per message. Batches alternate implementations (A B A B ...) and the
    first batch of each is a discarded warm-up.
    """
    if count <= 0 or repeats <= 0:
        raise ValueError("count and repeats must be positive")
    selected = list(CASES) if cases is None else cases
    unknown = [c for c in selected if c not in CASES]
    if unknown:
        raise ValueError(f"unknown codec case(s): {', '.join(unknown)}")
    impls: dict[str, dict[str, Prepare]] = {"trimcp": _trimcp_cases()}
    skipped = _sdk_available()
    if skipped is None:
        impls["sdk"] = _sdk_cases()
    results: dict[str, dict[str, Any]] = {}
    ratios: dict[str, float] = {}
    # Imports left a big heap (pydantic schemas, cattrs code); freezing it keeps the
    # collection before each batch cheap and out of the way of the measurement.
    gc.collect()
    gc.freeze()
    try:
        for case in selected:
            _run_case(case, impls, count, repeats, results, ratios)
    finally:
        gc.unfreeze()
    total = {name: sum(results[c][name]["median"] for c in selected) for name in impls}
    out: dict[str, Any] = {
        "count": count,
        "repeats": repeats,
        "protocol_version": PROTOCOL_VERSION,
        "cases": results,
        "ratios": ratios,
        "total_us": total,
        "sdk_skipped": skipped,
    }
    if "sdk" in total:
        out["total_ratio"] = total["sdk"] / total["trimcp"]
    return out


def render(result: dict[str, Any]) -> str:
    """A plain-text table of :func:`run`'s result."""
    lines = [
        f"{'case':<20} {'trimcp µs':>10} {'SDK µs':>10} {'SDK/trimcp':>11}  what one message is",
        "-" * 100,
    ]
    for case, by_impl in result["cases"].items():
        ours = by_impl["trimcp"]["median"]
        sdk = by_impl.get("sdk", {}).get("median")
        ratio = result["ratios"].get(case)
        lines.append(
            f"{case:<20} {ours:>10.1f} "
            f"{(f'{sdk:.1f}' if sdk is not None else '-'):>10} "
            f"{(f'{ratio:.1f}x' if ratio is not None else '-'):>11}  {CASES[case]}"
        )
    total = result["total_us"]
    if "total_ratio" in result:
        lines.append(
            f"{'all five':<20} {total['trimcp']:>10.1f} {total['sdk']:>10.1f} "
            f"{result['total_ratio']:>10.1f}x"
        )
    if result["sdk_skipped"]:
        lines.append(f"SDK skipped: {result['sdk_skipped']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.codec",
        description="µs per message of the MCP codec path: trimcp vs the official SDK.",
    )
    parser.add_argument("--count", type=int, default=2000, help="messages per batch")
    parser.add_argument("--repeats", type=int, default=5, help="batches per implementation")
    parser.add_argument("--case", action="append", choices=list(CASES), help="only this case")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    opts = parser.parse_args(argv)
    result = run(opts.count, opts.repeats, cases=opts.case)
    if opts.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
