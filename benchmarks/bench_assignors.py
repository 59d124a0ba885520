"""Connect assignor benchmark against Kafka's Java assignors (issue 13, targets 1 and 5).

Run (from the repository root)::

    .venv/bin/python benchmarks/bench_assignors.py [--reps 5] [--quick] [--no-rss]

Workloads are Kafka's (``kafka_reference.json``, next to this file): N connectors × 10 tasks
each, W workers, protocol ``sessioned`` (incremental) or ``default`` (eager), max delay
300,000 ms. Each row is one assignor call:

* ``full`` — ``perform_assignment``: decode every member's JoinGroup metadata, assign, encode
  every member's SyncGroup bytes (Kafka ``performAssignment``);
* ``core`` — ``IncrementalCooperativeAssignor.perform_task_assignment`` only (Kafka
  ``performTaskAssignment``);
* ``initial`` — every worker joins empty; ``+1 worker`` — W−1 workers hold a settled,
  balanced assignment (the leader's state from the previous rounds) and one empty worker
  joins; ``steady`` — W workers hold a settled assignment and nothing changed; ``round`` —
  an eager round robin from scratch.

Timing: one warm-up call (its CPU time is the ``first`` column: it builds the per-snapshot
tables and byte caches), then ``--reps`` calls, each on fresh inputs (a deep copy of the
leader state, made outside the timed region, after a full collection). Reported per row:

* ``cpu`` — median ``time.process_time`` of the call (Kafka's figures are CPU time);
* ``min`` — the smallest of those (closest to an idle machine when others share the cores);
* ``+gc`` — median CPU time of the young collection right after the call: the assignors pause
  the cyclic collector during a round, so the work of examining what the round left behind
  is done here instead; it is charged to groupsim in the ratio;
* ``wall`` — median ``time.perf_counter`` (the machine may be shared: trust ``cpu``);
* ``java`` and ``ratio`` = (cpu + gc) / java; rows without a Java figure show ``-``.

Memory (target 5): ``peak RSS`` of a child process that builds the 1,000 workers × 100,000
tasks inputs and runs the incremental full path's initial, +1 worker and steady rounds once
each (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), next to the same child's RSS after the
imports alone. The child runs before any timing, while this process is small: Linux carries
``ru_maxrss`` across ``exec``.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from members.assignors import (  # noqa: E402
    ConfigSnapshot,
    EagerAssignor,
    IncrementalCooperativeAssignor,
)
from protocol.connect import (  # noqa: E402
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import encode_subscription  # noqa: E402

REFERENCE = Path(__file__).with_name("kafka_reference.json")
TASKS_PER_CONNECTOR = 10
MAX_DELAY_MS = 300_000
RSS_LIMIT_MB = 150.0

Held = dict[str, tuple[list[str], list[tuple[str, int]]]]


@dataclass(frozen=True)
class Workload:
    """One benchmark row: which assignor call, at which size, and Kafka's figure if any."""

    assignor: str  # "incremental" | "eager"
    path: str  # "full" | "core"
    scenario: str  # "initial" | "+1 worker" | "steady" | "round"
    workers: int
    tasks: int
    java_ms: float | None = None


@dataclass(frozen=True)
class Sample:
    """Milliseconds: medians of call CPU, young collection after it and call wall; the
    smallest call CPU; the first (warm-up) call's CPU."""

    cpu_ms: float
    min_ms: float
    gc_ms: float
    wall_ms: float
    first_ms: float


def load_reference() -> tuple[str, list[Workload]]:
    """Kafka's figures: (source line, workloads) from ``kafka_reference.json``."""
    data = json.loads(REFERENCE.read_text())
    rows = [
        Workload(w["assignor"], w["path"], w["scenario"], w["workers"], w["tasks"], w["java_ms"])
        for w in data["workloads"]
    ]
    return data["source"], rows


def workloads(quick: bool) -> tuple[str, list[Workload]]:
    """Kafka's workloads plus the full-path +1 worker / steady rows (no Java figure)."""
    source, rows = load_reference()
    rows += [
        Workload("incremental", "full", "+1 worker", 1000, 100_000),
        Workload("incremental", "full", "steady", 1000, 100_000),
    ]
    if quick:
        rows = [w for w in rows if w.tasks <= 10_000]
    return source, rows


# ------------------------------------------------------------------------------------ inputs


def _snapshot(tasks: int) -> ConfigSnapshot:
    n = tasks // TASKS_PER_CONNECTOR
    return ConfigSnapshot(
        offset=100, connectors={f"conn-{i}": TASKS_PER_CONNECTOR for i in range(n)}
    )


def _ids(n: int) -> list[str]:
    return [f"worker-{i}" for i in range(n)]


def _metadata(proto: ConnectProtocol, member: str, held: Held) -> bytes:
    conns, tasks = held.get(member, ([], []))
    alloc = None
    if proto.version > 0 and (conns or tasks):
        alloc = ConnectAssignment(
            proto.version,
            0,
            "worker-0",
            "http://worker-0:8083",
            100,
            tuple(conns),
            tuple(ConnectorTaskId(c, t) for c, t in tasks),
        )
    return encode_subscription(
        WorkerSubscription(proto.version, f"http://{member}:8083", 100, alloc)
    )


def _full_call(
    assignor: IncrementalCooperativeAssignor | EagerAssignor,
    proto: ConnectProtocol,
    members: list[tuple[str, bytes]],
    snap: ConfigSnapshot,
    generation: int,
) -> Callable[[], object]:
    def call() -> object:
        return assignor.perform_assignment(
            leader_id=members[0][0],
            protocol=proto,
            members=members,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=generation - 1,
            generation=generation,
            now_ms=0,
        )

    return call


def _settle(
    assignor: IncrementalCooperativeAssignor, snap: ConfigSnapshot, held: Held, generation: int
) -> tuple[Held, int]:
    """Core rounds until nothing is revoked or assigned; returns what each worker holds."""
    for _ in range(10):
        res = assignor.perform_task_assignment(snap, generation - 1, generation, held, 0)
        held = {
            w: (list(res.all_assigned_connectors[w]), list(res.all_assigned_tasks[w])) for w in held
        }
        generation += 1
        if not res.has_revocations() and res.is_empty_assignment():
            return held, generation
    raise RuntimeError("the benchmark cluster did not settle in 10 rounds")


@dataclass
class Cluster:
    """A leader state and the held assignments for the +1 worker and steady scenarios."""

    state: IncrementalCooperativeAssignor
    held: Held
    generation: int


def _cluster(snap: ConfigSnapshot, ids: list[str], *, warm_full: bool) -> Cluster:
    """A settled cluster of ``ids``; with ``warm_full`` one unchanged full-path round follows,
    so the leader has last round's metadata of every member (as a real leader has)."""
    assignor = IncrementalCooperativeAssignor(MAX_DELAY_MS)
    held, gen = _settle(assignor, snap, {w: ([], []) for w in ids}, 1)
    if warm_full:
        proto = ConnectProtocol.SESSIONED
        md = [(w, _metadata(proto, w, held)) for w in ids]
        _full_call(assignor, proto, md, snap, gen)()
        gen += 1
    return Cluster(assignor, held, gen)


def setup_for(w: Workload) -> Callable[[], Callable[[], object]]:
    """A factory of fresh calls for ``w``: each call gets its own leader state."""
    snap = _snapshot(w.tasks)
    ids = _ids(w.workers)
    if w.assignor == "eager":
        proto = ConnectProtocol.EAGER
        md = [(m, _metadata(proto, m, {})) for m in ids]
        return lambda: _full_call(EagerAssignor(), proto, md, snap, 1)
    proto = ConnectProtocol.SESSIONED
    if w.scenario == "initial":
        if w.path == "core":
            empty: Held = {m: ([], []) for m in ids}
            return lambda: _core_call(IncrementalCooperativeAssignor(MAX_DELAY_MS), snap, empty, 1)
        md = [(m, _metadata(proto, m, {})) for m in ids]
        return lambda: _full_call(IncrementalCooperativeAssignor(MAX_DELAY_MS), proto, md, snap, 1)
    full = w.path == "full"
    if w.scenario == "+1 worker":
        cluster = _cluster(snap, ids[:-1], warm_full=full)
        held = {**cluster.held, ids[-1]: ([], [])}
    else:
        cluster = _cluster(snap, ids, warm_full=full)
        held = cluster.held
    if full:
        md = [(m, _metadata(proto, m, held)) for m in ids]
        return lambda: _full_call(copy.deepcopy(cluster.state), proto, md, snap, cluster.generation)
    return lambda: _core_call(copy.deepcopy(cluster.state), snap, held, cluster.generation)


def _core_call(
    assignor: IncrementalCooperativeAssignor, snap: ConfigSnapshot, held: Held, generation: int
) -> Callable[[], object]:
    return lambda: assignor.perform_task_assignment(snap, generation - 1, generation, held, 0)


# ------------------------------------------------------------------------------------ timing


def measure(setup: Callable[[], Callable[[], object]], reps: int) -> Sample:
    """Warm up once, then the medians of ``reps`` calls (see the module docstring)."""
    cpu: list[float] = []
    young: list[float] = []
    wall: list[float] = []
    first = 0.0
    for i in range(reps + 1):
        call = setup()
        gc.collect()
        c0 = time.process_time()
        w0 = time.perf_counter()
        result = call()
        w1 = time.perf_counter()
        c1 = time.process_time()
        gc.collect(0)
        c2 = time.process_time()
        del result
        if i == 0:
            first = (c1 - c0) * 1000
            continue
        cpu.append((c1 - c0) * 1000)
        young.append((c2 - c1) * 1000)
        wall.append((w1 - w0) * 1000)
    return Sample(
        statistics.median(cpu),
        min(cpu),
        statistics.median(young),
        statistics.median(wall),
        first,
    )


# ------------------------------------------------------------------------------------ memory


def rss_child() -> None:
    """Child process: report RSS after imports, then peak RSS after the 1,000 × 100k rounds."""
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for scenario in ("initial", "+1 worker", "steady"):
        call = setup_for(Workload("incremental", "full", scenario, 1000, 100_000))()
        call()
        del call
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_mb": base_kb / 1024, "peak_mb": peak_kb / 1024}))


def measure_rss() -> dict[str, float]:
    """Run :func:`rss_child` in a fresh interpreter; returns its base and peak RSS in MB."""
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--rss-child"],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="timed calls per row (median)")
    parser.add_argument("--quick", action="store_true", help="only the 10,000-task rows")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak RSS child")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        rss_child()
        return 0
    source, rows = workloads(args.quick)
    # the child first, while this process is small: Linux keeps ru_maxrss across exec
    rss = None if args.no_rss or args.quick else measure_rss()
    header = (
        f"{'assignor':<12}{'path':<6}{'scenario':<11}{'workers':>8}{'tasks':>8}"
        f"{'cpu ms':>9}{'min ms':>8}{'+gc ms':>8}{'wall ms':>9}{'first ms':>10}"
        f"{'java ms':>9}{'ratio':>7}"
    )
    print(f"Kafka reference: {source}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    for w in rows:
        s = measure(setup_for(w), args.reps)
        if w.java_ms is None:
            java = ratio = "-"
        else:
            r = (s.cpu_ms + s.gc_ms) / w.java_ms
            worst = max(worst, r)
            java, ratio = f"{w.java_ms:.1f}", f"{r:.2f}"
        print(
            f"{w.assignor:<12}{w.path:<6}{w.scenario:<11}{w.workers:>8}{w.tasks:>8}"
            f"{s.cpu_ms:>9.1f}{s.min_ms:>8.1f}{s.gc_ms:>8.1f}{s.wall_ms:>9.1f}{s.first_ms:>10.1f}"
            f"{java:>9}{ratio:>7}",
            flush=True,
        )
    print(f"worst ratio (cpu + gc) / java: {worst:.2f}")
    if rss is not None:
        ok = "yes" if rss["peak_mb"] <= RSS_LIMIT_MB else "NO"
        print(
            f"peak RSS, incremental full path 1000 x 100000 (initial, +1 worker, steady): "
            f"{rss['peak_mb']:.0f} MB (imports alone {rss['base_mb']:.0f} MB; "
            f"limit {RSS_LIMIT_MB:.0f} MB: {ok})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
