"""Simulation speed: virtual seconds per wall second, and the flagship scenario's wall time.

Run: ``.venv/bin/python benchmarks/bench_runtime.py`` (add ``--quick`` to skip 1,000 workers).
Prints one table. Targets (issue "groupsim end to end for Kafka Connect"): >= 1,000x virtual
speed-up at 100 workers; the flagship scenario in <= 2 s wall time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scenarios.input.library import library_dir  # noqa: E402
from scenarios.input.loader import load_scenario  # noqa: E402
from scenarios.sim.runner import simulate  # noqa: E402

HOUR_MS = 3_600_000


def steady_cluster(workers: int) -> Path:
    """A sessioned cluster of ``workers`` workers, 10 tasks each, run for one virtual hour."""
    connectors = workers  # 10 tasks per connector, one connector per worker
    text = f"""
name = "steady-{workers}"
seed = 1
settle_ms = {HOUR_MS}
[cluster]
size = {workers}
[cluster.config]
"connect.protocol" = "sessioned"
[workload.generate]
count = {connectors}
tasks = 10
prefix = "connector"
"""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as handle:
        handle.write(text)
    return Path(handle.name)


def main() -> None:
    sizes = [10, 100] if "--quick" in sys.argv else [10, 100, 1000]
    table = Table(title="groupsim simulation speed (one virtual hour, heartbeats on)")
    for column in ("case", "virtual s", "wall s", "speed-up", "log records", "target"):
        table.add_column(column, justify="right" if column != "case" else "left")
    for workers in sizes:
        path = steady_cluster(workers)
        loaded = load_scenario(path)
        started = time.perf_counter()
        result = simulate(loaded, 1)
        wall = time.perf_counter() - started
        path.unlink()
        virtual = result.records[-1]["t_ms"] / 1000
        target = ">= 1000x" if workers == 100 else ""
        table.add_row(
            f"steady, {workers} workers x 10 tasks",
            f"{virtual:.0f}",
            f"{wall:.2f}",
            f"{virtual / wall:,.0f}x",
            f"{len(result.records):,}",
            target,
        )
    loaded = load_scenario(library_dir() / "rolling-upgrade-eager-to-sessioned.toml")
    started = time.perf_counter()
    result = simulate(loaded, loaded.scenario.seed)
    wall = time.perf_counter() - started
    virtual = result.records[-1]["t_ms"] / 1000
    table.add_row(
        "flagship rolling upgrade",
        f"{virtual:.0f}",
        f"{wall:.2f}",
        f"{virtual / wall:,.0f}x",
        f"{len(result.records):,}",
        "<= 2 s wall",
    )
    Console().print(table)


if __name__ == "__main__":
    main()
