"""Cold start, trimcp against the official SDK's high-level server, in one run.

Spawns each server ``--repeats`` times (interleaved, so machine load hits both alike) and
reports the median time from spawn to the ``initialize`` answer, plus the ratio. The
trimcp server is the smallest real one: a ``trimcp.Server`` with one tool and
``app.run()`` (stdio), as users write it. Targets (issue 15): <= 200 ms and <= 0.4x the
SDK on an idle machine.

Both sides start from compiled bytecode, as an installed package does: pip compiles the
SDK's modules into ``__pycache__`` when it installs them, while a checkout of trimcp
(an editable install) has none until something writes it, and with
``PYTHONDONTWRITEBYTECODE`` set nothing ever does, so each start would recompile all of
trimcp from source (about 40% more work: callgrind counted 1,767 M instructions against
1,049 M). So the benchmark first compiles trimcp's bytecode with :mod:`compileall`,
which is what ``pip install`` does for a wheel, and starts trimcp once with bytecode
writing on, which fills trimcp's cache of attrs-generated methods
(``trimcp/_attrs_cache.py``, installed by ``trimcp.server``) as any first start of an
installed trimcp does.

Run from the repository root: .venv/bin/python -m benchmarks.cold_start [--repeats 10]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.loadgen_stdio import cold_start

TRIMCP_APP = """\
from trimcp import Server

app = Server("cold")


@app.tool()
def echo(text: str) -> str:
    return text


app.run()
"""
SDK_APP = Path(__file__).with_name("servers") / "sdk_highlevel.py"


def compile_trimcp() -> None:
    """Write trimcp's bytecode, as ``pip install`` does for an installed package."""
    import trimcp

    package = Path(trimcp.__file__).parent
    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"could not compile the bytecode of {package}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-c", "import trimcp.server, trimcp.transports.stdio"],
        env=env,
        check=True,
        timeout=120,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    opts = parser.parse_args(argv)
    compile_trimcp()
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "cold_app.py"
        app.write_text(TRIMCP_APP)
        servers = {"trimcp": [sys.executable, str(app)], "sdk": [sys.executable, str(SDK_APP)]}
        times: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(opts.repeats):
            for name, argv_ in servers.items():
                result = cold_start(argv_, 1)
                times[name].append(result["initialize_ms"]["median"])
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(
            f"{name:7s} spawn -> initialize answer: median {value:7.1f} ms "
            f"(min {min(times[name]):.1f}, max {max(times[name]):.1f}, n={opts.repeats})"
        )
    print(f"ratio trimcp/sdk: {medians['trimcp'] / medians['sdk']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
