"""Kafka Streams assignor benchmark: wall time by clients × tasks.

Run: ``.venv/bin/python benchmarks/bench_streams.py [--reps N] [--quick] [--check]``

Rows:

* ``high_availability`` — one full HighAvailabilityTaskAssignor run (1 standby, rack awareness
  off) in two situations: *scale-out* (C−1 clients held a balanced assignment and report lag 0
  for what they held, one client joins empty: the round-robin target differs, so every task
  whose desired owner is not caught up is moved back with warmups) and *steady* (every client
  is caught up on exactly what the assignor's target gives it, actives and standbys).
  Target: ≤ 2 s at 100 × 10,000.
* ``rack_aware <strategy>`` — ``RackAwareTaskAssignor.optimize_active_tasks`` on the stateful
  actives of a round-robin assignment (10 subtopologies, 3 racks, every client on a random
  rack, every task one source partition on 1–2 random racks), HATA's costs 10 / 1. Kafka's
  cycle cancelling takes ~15 s (min_traffic) / ~40 s (balance_subtopology) at 40 × 400.
  Targets: ≥ 100× faster than that at 40 × 400; ≤ 1 s at 50 × 500 and 200 × 2,000.
* ``rack_aware standbys`` — ``optimize_standby_tasks`` (pairwise rounds) after 1 standby per
  task.

``--check`` also runs Kafka's cycle-cancelling algorithm (groupsim's Python port of it) on a
12 × 120 instance of each strategy and prints both total costs, which must be equal. On the
40 × 400 instances themselves the port (554 s / 374 s in Python) reached 233 (min_traffic)
and 317 (balance_subtopology), the same totals OR-Tools reaches in ~5 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from members.assignors.streams import (  # noqa: E402
    AssignmentConfigs,
    ClientState,
    DefaultStandbyTaskAssignor,
    ProcessId,
    RackAwareTaskAssignor,
    TaskId,
    assign_high_availability,
)

RACKS = ["rack0", "rack1", "rack2"]


def _tasks(n: int, subtopologies: int = 10) -> list[TaskId]:
    per = -(-n // subtopologies)
    return [TaskId(s, p) for s in range(subtopologies) for p in range(per)][:n]


def _hata_inputs(
    n_clients: int, n_tasks: int, steady: bool
) -> tuple[dict[ProcessId, ClientState], list[TaskId]]:
    tasks = _tasks(n_tasks)
    pids = [ProcessId.of(f"PID_{i}") for i in range(n_clients)]
    holders = pids if steady else pids[:-1]
    owner = {t: holders[i % len(holders)] for i, t in enumerate(tasks)}
    clients = {}
    for p in pids:
        lags = {t: (0 if owner[t] == p else 500_000) for t in tasks}
        clients[p] = ClientState(p, 1, lags=lags)
    return clients, tasks


def bench_hata(n_clients: int, n_tasks: int, steady: bool) -> Callable[[], object]:
    configs = AssignmentConfigs(num_standby_replicas=1)
    clients, tasks = _hata_inputs(n_clients, n_tasks, False)
    if steady:  # every client caught up on what the scale-out round's target gives it
        target = {p: c.copy() for p, c in clients.items()}
        for c in target.values():
            c.lags = {t: 0 for t in tasks}
        assign_high_availability(target, tasks, [], configs)
        for p, c in clients.items():
            held = target[p].active | target[p].standby
            c.lags = {t: (0 if t in held else 500_000) for t in tasks}

    def run() -> object:
        fresh = {p: c.copy() for p, c in clients.items()}
        return assign_high_availability(fresh, tasks, [], configs)

    return run


def _rack_inputs(
    n_clients: int, n_tasks: int, seed: int = 7
) -> tuple[dict[ProcessId, ClientState], list[TaskId], dict[TaskId, list[frozenset[str]]]]:
    rng = random.Random(seed)
    tasks = _tasks(n_tasks)
    pids = [ProcessId.of(f"PID_{i}") for i in range(n_clients)]
    clients = {p: ClientState(p, 1, rack=rng.choice(RACKS)) for p in pids}
    for i, t in enumerate(tasks):
        clients[pids[i % n_clients]].assign_active(t)
    racks = {t: [frozenset(rng.sample(RACKS, rng.randint(1, 2)))] for t in tasks}
    return clients, tasks, racks


def bench_rack(
    n_clients: int, n_tasks: int, strategy: str, solver: str = "ortools"
) -> tuple[Callable[[], int], int]:
    clients, tasks, racks = _rack_inputs(n_clients, n_tasks)
    configs = AssignmentConfigs(rack_aware_assignment_strategy=strategy)
    before = RackAwareTaskAssignor(clients, racks, racks, configs).assignment_cost(tasks, 10, 1)

    def run() -> int:
        fresh = {p: c.copy() for p, c in clients.items()}
        rack = RackAwareTaskAssignor(fresh, racks, racks, configs, solver=solver)  # type: ignore[arg-type]
        return rack.optimize_active_tasks(tasks, 10, 1)

    return run, before


def bench_standby(n_clients: int, n_tasks: int) -> tuple[Callable[[], int], int]:
    clients, tasks, racks = _rack_inputs(n_clients, n_tasks)
    DefaultStandbyTaskAssignor(1).assign(clients, tasks)
    configs = AssignmentConfigs(rack_aware_assignment_strategy="min_traffic")
    before = RackAwareTaskAssignor(clients, racks, racks, configs).assignment_cost(
        tasks, 10, 0, standby=True
    )

    def run() -> int:
        fresh = {p: c.copy() for p, c in clients.items()}
        return RackAwareTaskAssignor(fresh, racks, racks, configs).optimize_standby_tasks(10, 1)

    return run, before


def _time(fn: Callable[[], object], reps: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="repetitions (median reported)")
    parser.add_argument("--quick", action="store_true", help="skip the 10,000-task row")
    parser.add_argument("--check", action="store_true", help="compare with Kafka's algorithm")
    args = parser.parse_args()

    rows: list[tuple[str, str, str, str, str]] = []

    def add(name: str, size: str, seconds: float, detail: str, target: str) -> None:
        rows.append((name, size, f"{seconds * 1000:9.1f} ms", detail, target))
        print(f"  {name:32} {size:>12} {seconds * 1000:9.1f} ms  {detail}", file=sys.stderr)

    sizes = [(100, 1_000), (100, 10_000)] if not args.quick else [(100, 1_000)]
    for n_c, n_t in sizes:
        for steady in (False, True):
            secs, res = _time(bench_hata(n_c, n_t, steady), args.reps)
            label = "steady" if steady else "scale-out"
            probing = getattr(res, "probing_rebalance_needed", None)
            add(
                f"high_availability {label}",
                f"{n_c}×{n_t}",
                secs,
                f"probing={probing}",
                "≤ 2 s" if n_t == 10_000 else "",
            )
    kafka = {"min_traffic": 15.0, "balance_subtopology": 40.0}
    for n_c, n_t in [(40, 400), (50, 500), (200, 2_000)]:
        for strategy in ("min_traffic", "balance_subtopology"):
            fn, before = bench_rack(n_c, n_t, strategy)
            secs, after = _time(fn, args.reps)
            if (n_c, n_t) == (40, 400):
                target = f"≥100× Kafka: {kafka[strategy] / secs:,.0f}×"
            else:
                target = "≤ 1 s"
            add(f"rack_aware {strategy}", f"{n_c}×{n_t}", secs, f"cost {before}→{after}", target)
    for n_c, n_t in [(40, 400), (50, 500)]:
        fn, before = bench_standby(n_c, n_t)
        secs, after = _time(fn, 1)
        add("rack_aware standbys", f"{n_c}×{n_t}", secs, f"cost {before}→{after}", "")
    if args.check:
        for strategy in ("min_traffic", "balance_subtopology"):
            fast, _ = bench_rack(12, 120, strategy)
            slow, _ = bench_rack(12, 120, strategy, solver="cycle_cancelling")
            secs, kafka_cost = _time(slow, 1)
            ours = fast()
            add(
                f"check {strategy}",
                "12×120",
                secs,
                f"Kafka algorithm {kafka_cost} vs OR-Tools {ours}",
                "equal" if kafka_cost == ours else "DIFFERENT",
            )

    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="Kafka Streams assignors (median wall time)")
        for col in ("assignor", "clients×tasks", "time", "result", "target"):
            table.add_column(col, justify="right" if col == "time" else "left")
        for row in rows:
            table.add_row(*row)
        Console(width=120).print(table)
    except ImportError:  # pragma: no cover
        for row in rows:
            print(" | ".join(row))


if __name__ == "__main__":
    main()
