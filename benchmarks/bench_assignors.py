"""Connect assignor benchmark: wall time of one leader assignment by workers × tasks.

Run: ``.venv/bin/python benchmarks/bench_assignors.py [--reps N] [--quick]``

Every measurement is a full ``perform_assignment`` (decoding every member's JoinGroup metadata,
the assignment, encoding every member's SyncGroup bytes); building the inputs and copying the
leader state between repetitions is outside the timed region. Connectors have 100 tasks each.

Scenarios (incremental cooperative, protocol ``sessioned``, max delay 300000 ms):

* initial — every worker joins empty, everything is created and assigned;
* scale-out — W−1 workers hold a balanced assignment (leader state from the previous rounds),
  one empty worker joins: load-balancing revocations;
* steady — W workers hold a balanced assignment and nothing changed.

"scale-out" uses the leader instance of the previous rounds, which has already decoded the
W−1 unchanged metadata blobs (it keeps the last bytes and decoding per member); "scale-out
cold" clears that cache, so every member's metadata is decoded.

Eager (protocol ``default``): W workers, round robin from scratch.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from members.assignors import (  # noqa: E402
    ConfigSnapshot,
    EagerAssignor,
    IncrementalCooperativeAssignor,
)
from protocol.connect import ConnectAssignment, ConnectProtocol, WorkerSubscription  # noqa: E402
from protocol.connect_codec import encode_subscription  # noqa: E402

TARGETS_MS = {
    ("incremental_cooperative", "scale-out", 1000): 300.0,
    ("incremental_cooperative", "scale-out cold", 1000): 300.0,
    ("incremental_cooperative", "steady", 1000): 300.0,
    ("eager", "round", 1000): 50.0,
}


def _ids(n: int) -> list[str]:
    return [f"worker-{i}" for i in range(n)]


def _snapshot(tasks: int) -> ConfigSnapshot:
    return ConfigSnapshot(offset=100, connectors={f"conn-{i}": 100 for i in range(tasks // 100)})


def _metadata(
    proto: ConnectProtocol, member: str, held: dict[str, ConnectAssignment | None]
) -> bytes:
    sub = WorkerSubscription(proto.version, f"http://{member}:8083", 100, held.get(member))
    return encode_subscription(sub)


def _merge(old: ConnectAssignment | None, new: ConnectAssignment) -> ConnectAssignment:
    if old is None:
        return new
    rc = set(new.revoked_connectors)
    rt = set(new.revoked_tasks)
    return ConnectAssignment(
        new.version,
        new.error,
        new.leader,
        new.leader_url,
        new.config_offset,
        new.connectors + tuple(c for c in old.connectors if c not in rc),
        new.tasks + tuple(t for t in old.tasks if t not in rt),
    )


def _time(reps: int, setup: Callable[[], Callable[[], object]]) -> float:
    samples = []
    for _ in range(reps):
        run = setup()
        t0 = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def bench_incremental(workers: int, tasks: int, reps: int) -> dict[str, float]:
    proto = ConnectProtocol.SESSIONED
    snap = _snapshot(tasks)
    ids = _ids(workers)
    out: dict[str, float] = {}

    def run_round(assignor, members, held, gen, now=0):
        md = [(m, _metadata(proto, m, held)) for m in members]
        return md, lambda: assignor.perform_assignment(
            leader_id=members[0],
            protocol=proto,
            members=md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=gen - 1,
            generation=gen,
            now_ms=now,
        )

    # initial
    empty_md = [(m, _metadata(proto, m, {})) for m in ids]

    def setup_initial():
        a = IncrementalCooperativeAssignor(300_000)
        return lambda: a.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=empty_md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=0,
            generation=1,
            now_ms=0,
        )

    out["initial"] = _time(reps, setup_initial)

    # build the W-1 balanced cluster, then the scale-out round
    base = IncrementalCooperativeAssignor(300_000)
    small = ids[:-1]
    held: dict[str, ConnectAssignment | None] = {}
    md, fn = run_round(base, small, held, 1)
    res = fn()
    for m in small:
        held[m] = _merge(held.get(m), res.decoded[m])
    md, fn = run_round(base, small, held, 2)
    fn()  # settles (no change)
    scale_md = [(m, _metadata(proto, m, held)) for m in ids]

    def setup_scale():
        a = copy.deepcopy(base)
        return lambda: a.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=scale_md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=2,
            generation=3,
            now_ms=0,
        )

    out["scale-out"] = _time(reps, setup_scale)

    def setup_scale_cold():
        a = copy.deepcopy(base)
        a._metadata_cache = {}  # a leader that never saw these bytes: decode all 1000
        return lambda: a.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=scale_md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=2,
            generation=3,
            now_ms=0,
        )

    out["scale-out cold"] = _time(reps, setup_scale_cold)

    # steady state at W workers: run scale-out + follow-up, then time a no-change round
    steady = copy.deepcopy(base)
    res = steady.perform_assignment(
        leader_id=ids[0],
        protocol=proto,
        members=scale_md,
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=2,
        generation=3,
        now_ms=0,
    )
    held2 = dict(held)
    for m in ids:
        held2[m] = _merge(held2.get(m), res.decoded[m])
    gen = 4
    for _ in range(3):
        md = [(m, _metadata(proto, m, held2)) for m in ids]
        res = steady.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=gen - 1,
            generation=gen,
            now_ms=0,
        )
        for m in ids:
            held2[m] = _merge(held2.get(m), res.decoded[m])
        gen += 1
    steady_md = [(m, _metadata(proto, m, held2)) for m in ids]

    def setup_steady():
        a = copy.deepcopy(steady)
        return lambda: a.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=steady_md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=gen - 1,
            generation=gen,
            now_ms=0,
        )

    out["steady"] = _time(reps, setup_steady)
    return out


def bench_eager(workers: int, tasks: int, reps: int) -> float:
    proto = ConnectProtocol.EAGER
    snap = _snapshot(tasks)
    ids = _ids(workers)
    md = [(m, _metadata(proto, m, {})) for m in ids]

    def setup():
        a = EagerAssignor()
        return lambda: a.perform_assignment(
            leader_id=ids[0],
            protocol=proto,
            members=md,
            snapshot=snap,
            refresh_snapshot=lambda: snap,
            last_completed_generation=0,
            generation=1,
            now_ms=0,
        )

    return _time(reps, setup)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions (median reported)")
    parser.add_argument("--quick", action="store_true", help="only 100 workers × 10,000 tasks")
    args = parser.parse_args(argv)
    sizes = [(100, 10_000)] if args.quick else [(100, 10_000), (1000, 100_000)]
    rows: list[tuple[str, str, int, int, float, float | None]] = []
    for workers, tasks in sizes:
        inc = bench_incremental(workers, tasks, args.reps)
        for scen, ms in inc.items():
            target = TARGETS_MS.get(("incremental_cooperative", scen, workers))
            rows.append(("incremental_cooperative", scen, workers, tasks, ms, target))
        ms = bench_eager(workers, tasks, args.reps)
        target = TARGETS_MS.get(("eager", "round", workers))
        rows.append(("eager", "round", workers, tasks, ms, target))
    header = (
        f"{'assignor':<24} {'scenario':<16} {'workers':>7} {'tasks':>8} "
        f"{'median ms':>10} {'target ms':>10}  ok"
    )
    print(header)
    print("-" * len(header))
    for name, scen, w, t, ms, target in rows:
        tgt = f"{target:.0f}" if target is not None else "-"
        ok = "" if target is None else ("yes" if ms <= target else "NO")
        print(f"{name:<24} {scen:<16} {w:>7} {t:>8} {ms:>10.1f} {tgt:>10}  {ok}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
