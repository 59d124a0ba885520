"""``groupsim`` start-up: CPU and wall time of fresh interpreters (issue 25, target 4).

Run: ``.venv/bin/python benchmarks/bench_startup.py [--runs 7]``. Prints one table.

Rows: ``groupsim --help`` (target ≤ 0.2 s), the flagship ``groupsim run --no-plot`` and
``groupsim run`` with its ``timeline.png`` (target ≤ 1 s including the plot). Each row runs
``--runs`` fresh interpreters one after another (bytecode cached: one untimed run first) and
reports the best and the median of the child's CPU time (user + system,
``RUSAGE_CHILDREN``) and of its wall time. On a shared machine wall time swings with the
load (printed with the table); CPU time is the figure to compare with the targets.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = "import sys; sys.argv[0] = 'groupsim'; from scenarios.cli.main import main; main()"
ROWS = (
    ("groupsim --help", ["--help"], "≤ 0.2 s"),
    ("groupsim run --no-plot (flagship)", ["run", "--no-plot", "--out", "out"], ""),
    ("groupsim run (flagship, with timeline.png)", ["run", "--out", "out"], "≤ 1 s"),
)


def measure(args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """(CPU seconds, wall seconds) of ``runs`` fresh ``groupsim <args>`` processes."""
    cpu: list[float] = []
    wall: list[float] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiling the sources again is not start-up
    with tempfile.TemporaryDirectory() as out:
        for i in range(runs + 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", CODE, *args],
                cwd=out,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i == 0:
                continue  # fills the bytecode cache
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            wall.append(elapsed)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed processes per row")
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, CPython {sys.version.split()[0]}; load average {load}")
    print("| command | CPU best | CPU median | wall best | wall median | target |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, cli_args, target in ROWS:
        cpu, wall = measure(cli_args, args.runs)
        print(
            f"| `{label}` | {min(cpu):.2f} s | {statistics.median(cpu):.2f} s "
            f"| {min(wall):.2f} s | {statistics.median(wall):.2f} s | {target} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
