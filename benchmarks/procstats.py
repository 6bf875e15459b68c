"""CPU time and memory of another process, read from Linux ``/proc``.

Only Linux is supported: every function raises ``ProcStatsUnavailable`` when ``/proc``
does not hold the process (it exited, or this is not Linux). Times come from the
kernel's clock ticks (``SC_CLK_TCK``, usually 100 Hz), so a single reading has a
resolution of ~10 ms; measure phases long enough that this does not matter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "CpuTimes",
    "ProcStatsUnavailable",
    "descendants",
    "peak_rss_kib",
    "read_cpu",
    "read_tree_cpu",
]

_CLK_TCK = os.sysconf("SC_CLK_TCK")


class ProcStatsUnavailable(RuntimeError):
    """The process is gone or ``/proc`` is not available."""


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """User and system CPU seconds consumed by a process (or a tree of processes)."""

    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(user=self.user - other.user, system=self.system - other.system)

    def __add__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(user=self.user + other.user, system=self.system + other.system)


def _stat_fields(pid: int) -> list[str]:
    """Fields of ``/proc/<pid>/stat`` from field 3 (state) onwards.

    The command name (field 2) is in parentheses and may itself contain spaces or
    parentheses, so we split after the *last* ``)``.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError) as exc:
        raise ProcStatsUnavailable(f"no /proc entry for pid {pid}") from exc
    end = raw.rfind(b")")
    if end < 0:
        raise ProcStatsUnavailable(f"unparseable /proc/{pid}/stat")
    return raw[end + 2 :].decode("ascii").split()


def read_cpu(pid: int) -> CpuTimes:
    """CPU time of ``pid`` itself (all its threads; not its children).

    Raises:
        ProcStatsUnavailable: the process has no ``/proc`` entry.
    """
    fields = _stat_fields(pid)
    # stat(5): utime is field 14, stime field 15; fields[0] here is field 3.
    return CpuTimes(user=int(fields[11]) / _CLK_TCK, system=int(fields[12]) / _CLK_TCK)


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (children, grandchildren, ...), found by scanning ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(name))[1])
        except (ProcStatsUnavailable, IndexError, ValueError, PermissionError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found: list[int] = []
    stack = list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, ()))
    return found


def read_tree_cpu(pid: int) -> CpuTimes:
    """CPU time of ``pid`` plus its live descendants.

    Use this when the measured command is a wrapper (a shell, ``uv run``) that execs
    the real server as a child. Descendants that exit between readings drop out of
    the sum, so prefer :func:`read_cpu` when the server is ``pid`` itself.

    Raises:
        ProcStatsUnavailable: ``pid`` has no ``/proc`` entry.
    """
    total = read_cpu(pid)
    for child in descendants(pid):
        try:
            total = total + read_cpu(child)
        except ProcStatsUnavailable:
            continue
    return total


def peak_rss_kib(pid: int) -> int | None:
    """Peak resident set size (``VmHWM``) of ``pid`` in KiB, or None if not reported."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError) as exc:
        raise ProcStatsUnavailable(f"no /proc entry for pid {pid}") from exc
    return None
