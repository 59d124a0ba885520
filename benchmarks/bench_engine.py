"""Engine speed by cluster size, and ``groupsim`` start-up time (issue 13, targets 2 and 4).

Run: ``.venv/bin/python benchmarks/bench_engine.py`` (``--quick`` skips 1,000 workers,
``--repeat N`` takes the best of N runs per size, default 1; ``--no-startup`` skips the CLI
timings). Prints one table.

Each size is a stable sessioned Connect group (10 tasks per worker, heartbeats every 3 s,
nothing logged per heartbeat) run for one virtual hour. ``speed-up (CPU)`` is virtual seconds
per CPU second of this process (what an idle core gives; the targets are stated on it),
``speed-up (wall)`` per wall second (lower when other work shares the cores). Targets: >=
10,000x at 100 workers, >= 1,000x at 1,000 workers.

Start-up: the best of 5 fresh interpreters (hyperfine-like) for ``groupsim --help`` (target
<= 0.4 s) and ``groupsim run --no-plot`` of the flagship scenario (target <= 1 s), wall time
and the child's CPU time.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_runtime import HOUR_MS, steady_cluster  # noqa: E402
from scenarios.input.loader import load_scenario  # noqa: E402
from scenarios.sim.runner import simulate  # noqa: E402

#: workers -> minimum virtual speed-up (by CPU time) the issue asks for.
TARGETS = {100: 10_000, 1000: 1_000}
STARTUP_RUNS = 5


def engine_row(workers: int, repeat: int) -> tuple[float, float, int]:
    """Best (CPU s, wall s) of ``repeat`` one-hour runs of ``workers`` workers; log records."""
    path = steady_cluster(workers)
    try:
        loaded = load_scenario(path)
        best_cpu = best_wall = float("inf")
        records = 0
        for _ in range(repeat):
            cpu, wall = time.process_time(), time.perf_counter()
            result = simulate(loaded, 1)
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
            records = len(result.records)
    finally:
        path.unlink()
    return best_cpu, best_wall, records


def startup(args: list[str]) -> tuple[float, float]:
    """Best (wall s, CPU s) over fresh interpreters running ``groupsim <args>``."""
    code = "import sys; from scenarios.cli.main import main; sys.argv[0] = 'groupsim'; main()"
    best_wall = best_cpu = float("inf")
    with tempfile.TemporaryDirectory() as out:
        for _ in range(STARTUP_RUNS):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", code, *args],
                cwd=out,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 1,000 workers")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per size")
    parser.add_argument("--no-startup", action="store_true", help="skip the CLI timings")
    args = parser.parse_args()
    sizes = [10, 100, 300] if args.quick else [10, 100, 300, 1000]
    virtual_s = HOUR_MS / 1000

    table = Table(title="groupsim engine: one virtual hour of a stable group, heartbeats on")
    for column in ("case", "CPU s", "wall s", "speed-up (CPU)", "speed-up (wall)", "target"):
        table.add_column(column, justify="left" if column == "case" else "right")
    for workers in sizes:
        cpu, wall, records = engine_row(workers, args.repeat)
        target = TARGETS.get(workers)
        table.add_row(
            f"{workers:,} workers x 10 tasks ({records:,} records)",
            f"{cpu:.2f}",
            f"{wall:.2f}",
            f"{virtual_s / cpu:,.0f}x",
            f"{virtual_s / wall:,.0f}x",
            f">= {target:,}x (CPU)" if target else "",
        )
    if not args.no_startup:
        for label, cli_args, target_s in (
            ("groupsim --help", ["--help"], 0.4),
            ("groupsim run --no-plot (flagship)", ["run", "--no-plot", "--out", "out"], 1.0),
        ):
            wall, cpu = startup(cli_args)
            table.add_row(label, f"{cpu:.2f}", f"{wall:.2f}", "", "", f"<= {target_s} s wall")
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
