"""Benchmark of tasks: many concurrent tasks created and polled to completion, and the
memory a finished task costs while it is kept until its TTL.

1. ``--tasks N`` (default 1,000) tool calls started at once as tasks over an in-process
   memory connection (``trimcp.testing.open_test_client``, real clock), each task sleeping
   ``--work`` seconds; every handle then polls ``tasks/get`` at the server's hint
   (``--poll`` seconds) until its task completes, and fetches the result. Reports the time
   to create them all, the time until the last result, polls answered and the process's
   CPU time.
2. ``--kept N`` (default 10,000) finished tasks held by a ``MemoryTaskStore`` (through the
   ``TaskManager``, each with a small text result), measured with ``tracemalloc``: bytes
   per finished task kept until its TTL.
3. ``--client-tasks N`` (default 1,000; 0 skips it): the other direction. A bare server
   session sends N task-augmented ``sampling/createMessage`` requests at once to a trimcp
   client (memory connection, real clock) whose sampling handler works ``--work`` seconds;
   the server polls each task with ``tasks/get`` every ``--poll`` seconds until it
   completes, then fetches it with ``tasks/result``. Reports the same figures.

Run from the repository root: .venv/bin/python -m benchmarks.tasks_bench
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
import tracemalloc
from typing import Any

import attrs
import trio

import trimcp
import trimcp.lowlevel
from trimcp.client import Client
from trimcp.client.task_receiver import CLIENT_TASK_OPTIONS, TaskReceiver
from trimcp.protocol.lifecycle import Role
from trimcp.server.tasks import TaskOptions
from trimcp.session import Session, open_session, serve_session
from trimcp.testing import open_test_client
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    Implementation,
    SamplingMessage,
    TaskMetadata,
    TextContent,
)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_app(work: float, poll: float) -> trimcp.Server:
    app = trimcp.Server("bench", task_options=TaskOptions(poll_interval=poll, max_running=10**6))

    @app.tool(task_support="optional")
    async def work_for(label: str) -> str:
        await trio.sleep(work)
        return f"done {label}"

    return app


async def concurrent_tasks(count: int, work: float, poll: float) -> dict[str, Any]:
    app = make_app(work, poll)
    polls = changes = 0
    get_task = app.methods.get("tasks/get")
    assert get_task is not None

    def counted(ctx: Any) -> Any:
        nonlocal polls
        polls += 1
        return get_task(ctx)

    app.methods.add_named("tasks/get", counted)
    async with (
        app.tasks.open(),
        open_test_client(app, max_buffered=4096, mode="legacy") as client,
    ):
        cpu0, t0 = _cpu(), time.perf_counter()
        handles: list[Any] = [None] * count

        async def create(i: int) -> None:
            handles[i] = await client.call_tool_as_task("work_for", {"label": str(i)})

        async with trio.open_nursery() as nursery:
            for i in range(count):
                nursery.start_soon(create, i)
        created = time.perf_counter() - t0
        results: list[str] = []

        async def follow(handle: Any) -> None:
            nonlocal changes
            async for _ in handle:
                changes += 1
            result = await handle.result()
            results.append(result.content[0].text)

        async with trio.open_nursery() as nursery:
            for handle in handles:
                nursery.start_soon(follow, handle)
        total = time.perf_counter() - t0
        cpu = _cpu() - cpu0
    assert len(results) == count
    assert all(r.startswith("done ") for r in results)
    assert app.tasks.live_count() == 0
    return {
        "created_s": created,
        "all_done_s": total,
        "polls": polls,
        "changes": changes,
        "cpu_s": cpu,
    }


async def memory_per_finished_task(count: int) -> float:
    app = make_app(0, 1.0)
    manager = app.tasks

    async def run(handle: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "a short result"}], "isError": False}

    async with manager.open():
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            await manager.create(
                run,
                owner=None,
                method="tools/call",
                protocol_version="2025-11-25",
                ttl_ms=3_600_000,
            )
        await manager.wait_idle()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(manager.store) == count  # type: ignore[arg-type]
    return (after - before) / count


async def client_run_tasks(count: int, work: float, poll: float) -> dict[str, Any]:
    """Part 3 (see the module docstring)."""

    async def model(ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        await trio.sleep(work)
        return CreateMessageResult(role="assistant", content=TextContent(text="ok"), model="m")

    options = attrs.evolve(CLIENT_TASK_OPTIONS, max_running=count)
    client = Client(sampling_handler=model, mode="legacy")
    client.task_receiver = TaskReceiver(options, max_kept=count)
    asker = trimcp.lowlevel.LowLevelServer(Implementation(name="asker", version="1"))
    ask = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="hi"))],
        max_tokens=5,
        task=TaskMetadata(ttl=600_000),
    )
    client_end, server_end = memory_transport_pair(max(4096, 4 * count))
    polls = 0
    results: list[Any] = []
    async with trio.open_nursery() as nursery:
        server: Session = await nursery.start(serve_session, server_end, asker)
        async with (
            open_session(client_end, role=Role.CLIENT, handler=client) as session,
            client.open_task_runner(session),
        ):
            await client.attach(session)
            cpu0, t0 = _cpu(), time.perf_counter()
            ids: list[str] = [""] * count

            async def create(i: int) -> None:
                created = await server.send_request("sampling/createMessage", ask)
                ids[i] = created.task.task_id

            async with trio.open_nursery() as starting:
                for i in range(count):
                    starting.start_soon(create, i)
            created_s = time.perf_counter() - t0

            async def follow(task_id: str) -> None:
                nonlocal polls
                while True:
                    await trio.sleep(poll)
                    polls += 1
                    got = await server.send_request("tasks/get", {"taskId": task_id})
                    if got.status == "completed":
                        break
                answer = {"taskId": task_id}
                results.append(await server.send_request("tasks/result", answer))

            async with trio.open_nursery() as following:
                for task_id in ids:
                    following.start_soon(follow, task_id)
            total = time.perf_counter() - t0
            cpu = _cpu() - cpu0
            assert client.task_receiver.live_count() == 0
        nursery.cancel_scope.cancel()
    assert len(results) == count
    assert all(result["content"]["text"] == "ok" for result in results)
    return {"created_s": created_s, "all_done_s": total, "polls": polls, "cpu_s": cpu}


async def main(args: argparse.Namespace) -> None:
    run = await concurrent_tasks(args.tasks, args.work, args.poll)
    print(
        f"{args.tasks} concurrent tasks ({args.work:g} s of work each, poll hint {args.poll:g} s):"
        f" created in {run['created_s']:.3f} s, all results in {run['all_done_s']:.3f} s,"
        f" {run['polls']} tasks/get answered, {run['changes']} states seen,"
        f" CPU {run['cpu_s']:.2f} s"
    )
    per_task = await memory_per_finished_task(args.kept)
    print(
        f"memory per finished task kept until its TTL: {per_task:,.0f} bytes "
        f"({args.kept} tasks, tracemalloc)"
    )
    if args.client_tasks:
        run = await client_run_tasks(args.client_tasks, args.work, args.poll)
        print(
            f"{args.client_tasks} sampling requests run as tasks by the client "
            f"({args.work:g} s of work each, server polling every {args.poll:g} s):"
            f" created in {run['created_s']:.3f} s, all results in {run['all_done_s']:.3f} s,"
            f" {run['polls']} tasks/get answered, CPU {run['cpu_s']:.2f} s"
        )


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--work", type=float, default=0.5, help="seconds each task works")
    parser.add_argument("--poll", type=float, default=0.1, help="poll interval hint (s)")
    parser.add_argument("--kept", type=int, default=10_000)
    parser.add_argument("--client-tasks", type=int, default=1000)
    trio.run(main, parser.parse_args(argv))


if __name__ == "__main__":
    cli()
