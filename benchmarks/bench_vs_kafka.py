"""groupsim's Connect assignors side by side with Kafka's, both timed in the same run (issue 25).

Run (from the repository root; needs Java and Maven, like the ``kafka`` tests)::

    .venv/bin/python benchmarks/bench_vs_kafka.py [--quick] [--reps 5] [--warmup 5] [--write]

``--write`` puts the table into ``docs/benchmarks.md`` (the generated block of its section
"Side by side with Kafka's JVM"; the prose around it is kept).
``GROUPSIM_KAFKA_VERSION=4.4.0`` runs against another Kafka release.

Workloads: N connectors × 10 tasks each, W workers, leader ``worker-0``, max delay 300,000 ms.
Each workload is a short sequence of rebalance rounds; only the **last** is timed, on both sides:

* ``initial`` — every worker joins empty (one round);
* ``+1 worker`` — W−1 workers settle, then one more joins empty;
* ``steady`` — W workers settle, then rejoin holding what they got (nothing changes);
* ``bounce`` — W workers settle, the last one leaves (the leader starts the delay), and
  10 s later (virtual) it rejoins empty, within the delay.

The rounds are built once by groupsim (each worker applies its SyncGroup answer as
``WorkerCoordinator.onJoinComplete`` does and sends the result in its next metadata) and the
same metadata bytes go to both sides. The timed call is the **full path** on both sides:
groupsim's ``perform_assignment`` and Kafka's ``performAssignment`` (decode every member's
metadata, assign, encode every member's assignment). Eager (protocol ``default``) rows are
``initial`` and ``+1 worker`` only: v0 metadata carries no assignment and ``EagerAssignor`` keeps
no state, so ``steady`` and ``bounce`` would time the same call as ``initial``.

Timing. Every iteration starts from fresh assignors, replays the setup rounds untimed, then
times the last round:

* Kafka: inside the oracle JVM (the Connect driver's ``connect.time`` verb), thread CPU time
  (``ThreadMXBean``) and ``System.nanoTime`` around ``performAssignment`` alone — JSON, the
  pipe and building the inputs are not counted; untimed warm-up iterations run first (at least
  ``--warmup`` of them and for at least ``--warmup-ms``: JIT warm-up, as a JMH warm-up phase),
  and every earlier workload has warmed the JVM too.
  Thread CPU time leaves out the JVM's GC and JIT threads.
* groupsim: ``time.process_time`` and ``time.perf_counter`` around ``perform_assignment``,
  after a full collection; plus the young collection right after the call (the assignors pause
  the cyclic collector during a round, so that work is deferred to here) charged to groupsim.
  One warm-up iteration first (it fills the process-wide caches of names' bytes, as a
  long-lived leader has them).

Reported: medians of ``--reps`` timed iterations (≥ 5), the ratios groupsim / Kafka of CPU
(call + young collection) and wall time, and whether the timed round's output bytes were equal
(SHA-256 of both sides' assignments). The machine is shared: ratios, and CPU time, are what
count.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

#: what :func:`_median_times` prepares untimed, and what the timed call returns
P = TypeVar("P")
T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from members.assignors import ConfigSnapshot, ConnectAssignor, create_assignor  # noqa: E402
from protocol.connect import (  # noqa: E402
    ConnectAssignment,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment_v1, encode_subscription  # noqa: E402
from scenarios.assign.streams import (  # noqa: E402
    assign_output,
    assign_prepared,
    prepare_assign_streams,
)
from tests.kafka_oracle import oracle as kafka  # noqa: E402

TASKS_PER_CONNECTOR = 10
MAX_DELAY_MS = 300_000
CONFIG_OFFSET = 100
BOUNCE_AFTER_MS = 10_000
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- bench_vs_kafka: begin (written by `--write`) -->"
END = "<!-- bench_vs_kafka: end -->"
STREAMS_BEGIN = "<!-- bench_vs_kafka streams: begin (written by `--write`) -->"
STREAMS_END = "<!-- bench_vs_kafka streams: end -->"
CONSUMER_BEGIN = "<!-- bench_vs_kafka consumer: begin (written by `--write`) -->"
CONSUMER_END = "<!-- bench_vs_kafka consumer: end -->"


@dataclass(frozen=True)
class Workload:
    """One table row: ``assignor`` is ``eager`` or ``incremental`` (protocol ``sessioned``)."""

    assignor: str
    scenario: str  # "initial" | "+1 worker" | "steady" | "bounce"
    workers: int
    tasks: int


@dataclass
class Round:
    """One rebalance as both sides get it: members' metadata bytes in JoinGroup order."""

    leader: str
    generation: int
    last_completed_generation: int
    now_ms: int
    members: list[tuple[str, bytes]]


@dataclass
class Worker:
    """What a worker holds: its last assignment (None before its first) and the generation."""

    alloc: ConnectAssignment | None = None
    completed: int = -1


@dataclass
class Result:
    """Medians in milliseconds, and whether the timed round's bytes were equal."""

    ours_cpu: float
    ours_gc: float
    ours_wall: float
    kafka_cpu: float
    kafka_wall: float
    equal: bool
    notes: list[str] = field(default_factory=list)


def grid(
    quick: bool, workers_only: int | None = None, tasks_only: int | None = None
) -> list[Workload]:
    """The workloads, smallest first (``quick``: the 10,000-task ones only; ``*_only``: one
    size)."""
    rows = []
    for tasks in (10_000, 100_000):
        if (quick and tasks > 10_000) or tasks_only not in (None, tasks):
            continue
        for workers in (100, 1000):
            if workers_only not in (None, workers):
                continue
            for scenario in ("initial", "+1 worker", "steady", "bounce"):
                rows.append(Workload("incremental", scenario, workers, tasks))
            for scenario in ("initial", "+1 worker"):
                rows.append(Workload("eager", scenario, workers, tasks))
    return rows


# ------------------------------------------------------------------------------------ rounds


def protocol_of(w: Workload) -> ConnectProtocol:
    return ConnectProtocol.EAGER if w.assignor == "eager" else ConnectProtocol.SESSIONED


def snapshot_of(w: Workload) -> ConfigSnapshot:
    n = w.tasks // TASKS_PER_CONNECTOR
    return ConfigSnapshot(CONFIG_OFFSET, {f"conn-{i}": TASKS_PER_CONNECTOR for i in range(n)})


def _kind(w: Workload) -> str:
    return "eager" if w.assignor == "eager" else "incremental_cooperative"


def _perform(
    assignors: dict[str, ConnectAssignor], w: Workload, snap: ConfigSnapshot, rnd: Round
) -> dict[str, bytes]:
    assignor = assignors.get(rnd.leader)
    if assignor is None:
        assignor = assignors[rnd.leader] = create_assignor(_kind(w), max_delay_ms=MAX_DELAY_MS)
    result = assignor.perform_assignment(
        leader_id=rnd.leader,
        protocol=protocol_of(w),
        members=rnd.members,
        snapshot=snap,
        refresh_snapshot=lambda: snap,
        last_completed_generation=rnd.last_completed_generation,
        generation=rnd.generation,
        now_ms=rnd.now_ms,
    )
    return dict(result.assignments)


def _apply(
    proto: ConnectProtocol, workers: dict[str, Worker], out: dict[str, bytes], gen: int
) -> None:
    """Each worker applies its answer as ``WorkerCoordinator.onJoinComplete`` does: it keeps
    what it held minus what was revoked, plus what it was given."""
    for member, data in out.items():
        state = workers[member]
        if proto.is_eager:
            state.completed = gen
            continue
        new = decode_assignment_v1(data)
        conns, tasks = list(new.connectors), list(new.tasks)
        if state.alloc is not None:
            gone_c, gone_t = set(new.revoked_connectors), set(new.revoked_tasks)
            conns += [c for c in state.alloc.connectors if c not in gone_c]
            tasks += [t for t in state.alloc.tasks if t not in gone_t]
        state.alloc = ConnectAssignment(
            proto.version, new.error, new.leader, new.leader_url, new.config_offset,
            tuple(conns), tuple(tasks), new.revoked_connectors, new.revoked_tasks, new.delay_ms,
        )  # fmt: skip
        state.completed = gen


def build_rounds(w: Workload) -> list[Round]:
    """The workload's rounds (the last is the timed one), played once through groupsim."""
    proto = protocol_of(w)
    snap = snapshot_of(w)
    ids = [f"worker-{i}" for i in range(w.workers)]
    workers: dict[str, Worker] = {}
    assignors: dict[str, ConnectAssignor] = {}
    rounds: list[Round] = []

    def rnd(present: list[str], now_ms: int) -> Round:
        for m in present:
            workers.setdefault(m, Worker())
        gen = len(rounds) + 1
        md = [
            (m, encode_subscription(WorkerSubscription(
                proto.version, f"http://{m}:8083", CONFIG_OFFSET, workers[m].alloc)))
            for m in present
        ]  # fmt: skip
        r = Round(ids[0], gen, workers[ids[0]].completed, now_ms, md)
        rounds.append(r)
        return r

    def play(present: list[str], now_ms: int = 0) -> None:
        r = rnd(present, now_ms)
        _apply(proto, workers, _perform(assignors, w, snap, r), r.generation)

    if w.scenario == "initial":
        rnd(ids, 0)
    elif w.scenario == "+1 worker":
        play(ids[:-1])
        rnd(ids, 0)
    elif w.scenario == "steady":
        play(ids)
        rnd(ids, 0)
    elif w.scenario == "bounce":
        play(ids)
        play(ids[:-1])
        workers[ids[-1]] = Worker()  # restarted: rejoins holding nothing
        rnd(ids, BOUNCE_AFTER_MS)
    else:
        raise ValueError(f"unknown scenario {w.scenario!r}")
    return rounds


def digest(assignments: dict[str, bytes]) -> str:
    """SHA-256 as the Java driver computes it (see ``connect.time`` there)."""
    sha = hashlib.sha256()
    for member in sorted(assignments):
        data = assignments[member]
        sha.update(member.encode())
        sha.update(b"\0")
        sha.update(len(data).to_bytes(4, "big"))
        sha.update(data)
    return sha.hexdigest()


# ------------------------------------------------------------------------------------ timing


def _median_times(
    prepare: Callable[[], P], call: Callable[[P], T], reps: int
) -> tuple[float, float, float, T]:
    """Medians (ms) over ``reps`` timed calls of ``call(prepare())`` (one untimed warm-up call
    first; ``prepare`` runs untimed before each) of the call's CPU time, the young collection
    after it and its wall time; the last call's result."""
    cpu: list[float] = []
    young: list[float] = []
    wall: list[float] = []
    for i in range(reps + 1):
        given = prepare()
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        out = call(given)
        w1, c1 = time.perf_counter(), time.process_time()
        gc.collect(0)
        c2 = time.process_time()
        if i == 0:
            continue
        cpu.append((c1 - c0) * 1000)
        young.append((c2 - c1) * 1000)
        wall.append((w1 - w0) * 1000)
    return statistics.median(cpu), statistics.median(young), statistics.median(wall), out


def time_groupsim(w: Workload, rounds: list[Round], reps: int) -> tuple[float, float, float, str]:
    """Medians (ms) of call CPU, young collection after it, call wall; the last output digest."""
    snap = snapshot_of(w)

    def earlier_rounds() -> dict[str, ConnectAssignor]:
        assignors: dict[str, ConnectAssignor] = {}
        for r in rounds[:-1]:
            _perform(assignors, w, snap, r)
        return assignors

    cpu, young, wall, out = _median_times(
        earlier_rounds, lambda assignors: _perform(assignors, w, snap, rounds[-1]), reps
    )
    return cpu, young, wall, digest(out)


def time_kafka(
    oracle: kafka.KafkaOracle,
    w: Workload,
    rounds: list[Round],
    reps: int,
    warmup: int,
    warmup_ms: int,
) -> tuple[float, float, str]:
    """Medians (ms) of Kafka's call CPU and wall, timed in the JVM; its output digest."""
    n = w.tasks // TASKS_PER_CONNECTOR
    connectors = {f"conn-{i}": TASKS_PER_CONNECTOR for i in range(n)}
    snap = {"offset": CONFIG_OFFSET, "connectors": connectors}
    got = oracle.call(
        "connect.time",
        protocol=protocol_of(w).protocol_name,
        max_delay_ms=MAX_DELAY_MS,
        warmup=warmup,
        warmup_ms=warmup_ms,
        iterations=reps,
        rounds=[
            {
                "leader": r.leader,
                "generation": r.generation,
                "last_completed_generation": r.last_completed_generation,
                "now_ms": r.now_ms,
                "snapshot": snap,
                "members": [[m, kafka.b64(md)] for m, md in r.members],
            }
            for r in rounds
        ],
    )
    cpu = statistics.median(got["cpu_ns"]) / 1e6
    wall = statistics.median(got["wall_ns"]) / 1e6
    return cpu, wall, str(got["digest"])


# ------------------------------------------------------------------------------------ Streams


@dataclass(frozen=True)
class StreamsWorkload:
    """One Streams row: a ``groupsim assign`` document both sides assign (docs/cli-contracts.md).

    ``assignor``: ``high_availability`` (scale-out: C−1 clients hold a round-robin assignment
    caught up, lag 500,000 elsewhere; one client joins empty), ``client_tag_standby``
    (``standbys`` standbys over round-robin actives, clients tagged zone × cluster) or
    ``rack_aware`` (``optimize_active_tasks`` with ``strategy`` over round-robin actives,
    3 client racks, each task one source and one changelog partition on 1–2 racks, seeded).
    Tasks are ``s_p`` over 10 subtopologies, all stateful.
    """

    assignor: str
    clients: int
    tasks: int
    standbys: int = 0
    strategy: str = "none"


def streams_grid(quick: bool) -> list[StreamsWorkload]:
    """The Streams rows (``quick``: the 1,000-task and 20 × 100 ones)."""
    rows = []
    for tasks in (1_000, 10_000):
        if quick and tasks > 1_000:
            continue
        for standbys in (0, 1):
            rows.append(StreamsWorkload("high_availability", 100, tasks, standbys))
    rows.append(StreamsWorkload("client_tag_standby", 100, 1_000, 1))
    for clients, tasks in RACK_SIZES:
        if quick and tasks > 100:
            continue
        for strategy in ("min_traffic", "balance_subtopology"):
            rows.append(StreamsWorkload("rack_aware", clients, tasks, 0, strategy))
    return rows


#: Rack-aware sizes (clients, tasks), smallest first.
RACK_SIZES = ((20, 100), (40, 400), (200, 2_000))
#: Rack-aware rows from this many tasks: Kafka's side timed once, after no warm-up of its own
#: (one call takes ≈ 15 s / 40 s at 40 × 400 on a quiet machine; the JVM is warm from the
#: earlier rows and such a call is its own warm-up).
RACK_ONCE_FROM = 400
#: Rack-aware rows from this many tasks: Kafka's side not run. Its cycle cancelling grows
#: much faster than the tasks (0.24 s / 1.5 s at 20 × 100, ≈ 15 s / 40 s at 40 × 400 quiet), so
#: one call at 200 × 2,000 would outlast the whole benchmark; groupsim's figure is reported
#: alone.
RACK_SKIP_FROM = 2_000


def _stream_tasks(n: int, subtopologies: int = 10) -> list[str]:
    per = -(-n // subtopologies)
    return [f"{s}_{p}" for s in range(subtopologies) for p in range(per)][:n]


def streams_document(w: StreamsWorkload) -> dict:
    """The ``groupsim assign`` input of ``w`` (plain JSON, deterministic)."""
    import random

    rng = random.Random(7)
    tasks = _stream_tasks(w.tasks)
    ids = [f"PID_{i}" for i in range(w.clients)]
    config: dict = {
        "acceptable.recovery.lag": 10_000,
        "max.warmup.replicas": 2,
        "num.standby.replicas": w.standbys,
        "rack.aware.assignment.strategy": w.strategy,
    }
    task_doc: dict = {"stateful": tasks, "stateless": []}
    clients: list[dict] = []
    if w.assignor == "high_availability":
        holders = ids[:-1]
        owner = {t: holders[i % len(holders)] for i, t in enumerate(tasks)}
        for c in ids:
            held = [t for t in tasks if owner[t] == c]
            clients.append({
                "id": c, "capacity": 1, "prev_active": held, "prev_standby": [],
                "task_lags": {t: (0 if owner[t] == c else 500_000) for t in tasks},
            })  # fmt: skip
    else:
        for i, c in enumerate(ids):
            one: dict = {
                "id": c, "capacity": 1, "prev_active": [], "prev_standby": [],
                "task_lags": {t: 0 for t in tasks},
                "current_active": tasks[i :: len(ids)], "current_standby": [],
            }  # fmt: skip
            if w.assignor == "client_tag_standby":
                one["tags"] = {"zone": "abc"[i % 3], "cluster": "xy"[i % 2]}
            else:
                one["rack"] = rng.choice(["r0", "r1", "r2"])
            clients.append(one)
        if w.assignor == "client_tag_standby":
            config["rack.aware.assignment.tags"] = ["zone", "cluster"]
        else:
            racks = {t: [sorted(rng.sample(["r0", "r1", "r2"], rng.randint(1, 2)))] for t in tasks}
            task_doc["task_source_partition_racks"] = racks
            task_doc["task_changelog_partition_racks"] = racks
            config["rack.aware.assignment.traffic_cost"] = 10
            config["rack.aware.assignment.non_overlap_cost"] = 1
    doc = {"assignor": w.assignor, "config": config, "clients": clients, "tasks": task_doc}
    if w.assignor == "rack_aware":
        doc["optimize"] = "active_tasks"
    return doc


def time_groupsim_streams(doc: dict, reps: int) -> tuple[float, float, float, dict]:
    """Medians (ms) of the assignor call's CPU, the young collection after it, its wall time;
    ``groupsim assign``'s answer of the last iteration. Each iteration assigns fresh copies of
    the parsed clients; one untimed warm-up iteration first."""
    prepared = prepare_assign_streams(doc)

    def assign(clients: Any) -> tuple[Any, Any]:
        return clients, assign_prepared(prepared, clients)

    cpu, young, wall, (clients, (probing, cost)) = _median_times(
        prepared.fresh_clients, assign, reps
    )
    return cpu, young, wall, assign_output(clients, probing, cost)


def time_kafka_streams(
    oracle: kafka.KafkaOracle, doc: dict, reps: int, warmup: int, warmup_ms: int
) -> tuple[float, float, dict]:
    """Medians (ms) of Kafka's assignor call CPU and wall, timed in the JVM (the Streams
    driver's ``streams.time``); its answer of the last iteration."""
    got = oracle.call(
        "streams.time", input=doc, warmup=warmup, warmup_ms=warmup_ms, iterations=reps
    )
    cpu = statistics.median(got["cpu_ns"]) / 1e6
    wall = statistics.median(got["wall_ns"]) / 1e6
    return cpu, wall, got["output"]


def _ratio(x: float) -> str:
    """A ratio with two decimals, or three significant digits under 0.01 (rack-aware rows)."""
    return f"{x:.2f}×" if x >= 0.01 else f"{x:.2g}×"


def streams_table(rows: list[tuple[StreamsWorkload, Result]]) -> list[str]:
    lines = [
        "| assignor | clients | tasks | standbys | strategy | groupsim CPU ms (+gc) "
        "| Kafka CPU ms | CPU ratio | groupsim wall ms | Kafka wall ms | wall ratio "
        "| same output (rack-aware: same cost) |",
        "|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|:-:|",
    ]
    for w, r in rows:
        notes = "".join(f" ({n})" for n in r.notes)
        if math.isnan(r.kafka_cpu):
            lines.append(
                f"| {w.assignor} | {w.clients:,} | {w.tasks:,} | {w.standbys} | {w.strategy} "
                f"| {r.ours_cpu:.1f} (+{r.ours_gc:.1f}) | — | —{notes} "
                f"| {r.ours_wall:.1f} | — | — | — |"
            )
            continue
        ratio = (r.ours_cpu + r.ours_gc) / r.kafka_cpu
        wall = r.ours_wall / r.kafka_wall
        lines.append(
            f"| {w.assignor} | {w.clients:,} | {w.tasks:,} | {w.standbys} | {w.strategy} "
            f"| {r.ours_cpu:.1f} (+{r.ours_gc:.1f}) | {r.kafka_cpu:.1f} | **{_ratio(ratio)}** "
            f"| {r.ours_wall:.1f} | {r.kafka_wall:.1f} | {_ratio(wall)} "
            f"| {'yes' if r.equal else 'NO'}{notes} |"
        )
    return lines


# ------------------------------------------------------------------------------------ consumer


@dataclass(frozen=True)
class ConsumerWorkload:
    """One consumer row: ``members`` consumers all subscribing to ``TOPICS`` topics of
    ``partitions // TOPICS`` partitions each (no racks), assignor ``assignor``
    (``partition.assignment.strategy``).

    ``initial``: every member joins empty; ``+1 member`` (sticky assignors only: range and
    roundrobin read no previous assignment, so it would time the same call): M−1 members
    hold what the assignor gave them in generation 1 (owned partitions, ``generationId`` 1 and
    the assignor's user data, as ``ConsumerCoordinator`` sends after ``onAssignment``) and one
    more joins empty.
    """

    assignor: str
    scenario: str
    members: int
    partitions: int


#: Topics of a consumer workload (``topic-0`` …).
TOPICS = 10


def consumer_grid(quick: bool) -> list[ConsumerWorkload]:
    """The consumer rows (``quick``: the 1,000-partition ones)."""
    rows = []
    for partitions in (1_000, 10_000):
        if quick and partitions > 1_000:
            continue
        for members in (100, 1_000):
            for assignor in ("range", "roundrobin", "sticky", "cooperative-sticky"):
                rows.append(ConsumerWorkload(assignor, "initial", members, partitions))
                if "sticky" in assignor:
                    rows.append(ConsumerWorkload(assignor, "+1 member", members, partitions))
    return rows


def consumer_cluster(w: ConsumerWorkload) -> dict[str, tuple[tuple[str | None, ...], ...]]:
    """topic → partitions' replica racks (one replica without a rack each)."""
    per = w.partitions // TOPICS
    return {f"topic-{t}": ((None,),) * per for t in range(TOPICS)}


def consumer_members(w: ConsumerWorkload) -> list[tuple[str, bytes]]:
    """(member id, JoinGroup subscription bytes) in JoinGroup order, built by groupsim."""
    from members.assignors.consumer import ASSIGNORS, ConsumerMember
    from members.assignors.consumer.sticky_data import (
        encode_cooperative_user_data,
        encode_sticky_user_data,
    )
    from protocol.consumer_codec import Subscription, encode_subscription

    topics = tuple(f"topic-{t}" for t in range(TOPICS))
    ids = [f"consumer-{i}-{(i * 2654435761) % 2**32:08x}" for i in range(w.members)]
    empty = Subscription(topics, None, (), -1, None)
    if w.assignor == "cooperative-sticky":
        empty = Subscription(topics, encode_cooperative_user_data(-1), (), -1, None)
    if w.scenario == "initial":
        return [(m, encode_subscription(empty)) for m in ids]
    settled = ids[:-1]
    first = ASSIGNORS[w.assignor]([ConsumerMember(m, empty) for m in settled], consumer_cluster(w))
    out = []
    for m in settled:
        owned = tuple(first[m])
        if w.assignor == "sticky":
            user = encode_sticky_user_data(owned, 1)
        else:
            user = encode_cooperative_user_data(1)
        out.append((m, encode_subscription(Subscription(topics, user, owned, 1, None))))
    out.append((ids[-1], encode_subscription(empty)))
    return out


def _consumer_leader(
    name: str, members: list[tuple[str, bytes]], cluster: dict
) -> dict[str, bytes]:
    """groupsim's leader path (what ``ConsumerClient.perform_assignment`` of a fresh client
    does): decode every subscription (:func:`members.assignors.consumer.model.decode_members`),
    assign, encode every member's assignment
    (:func:`protocol.consumer_batch.encode_assignments`)."""
    from members.assignors.consumer import ASSIGNORS
    from members.assignors.consumer.model import decode_members
    from protocol.consumer_batch import encode_assignments

    decoded = decode_members([(m, None, md) for m, md in members])
    assignment = ASSIGNORS[name](decoded, cluster)
    encoded = encode_assignments([assignment.get(m.member_id, ()) for m in decoded])
    return dict(zip([m.member_id for m in decoded], encoded, strict=True))


def time_groupsim_consumer(
    w: ConsumerWorkload, members: list[tuple[str, bytes]], reps: int
) -> tuple[float, float, float, str]:
    """Medians (ms) of the leader path's CPU, the young collection after it, its wall time; the
    last output digest. One untimed warm-up iteration first."""
    cluster = consumer_cluster(w)
    cpu, young, wall, out = _median_times(
        lambda: None, lambda _: _consumer_leader(w.assignor, members, cluster), reps
    )
    return cpu, young, wall, digest(out)


def time_kafka_consumer(
    oracle: kafka.KafkaOracle,
    w: ConsumerWorkload,
    members: list[tuple[str, bytes]],
    reps: int,
    warmup: int,
    warmup_ms: int,
) -> tuple[float, float, str]:
    """Medians (ms) of Kafka's leader path CPU and wall, timed in the JVM (the consumer
    driver's ``consumer.time``); its output digest."""
    got = oracle.call(
        "consumer.time",
        assignor=w.assignor,
        members=[{"id": m, "instance": None, "metadata": kafka.b64(md)} for m, md in members],
        topics={t: [list(r) for r in racks] for t, racks in consumer_cluster(w).items()},
        warmup=warmup,
        warmup_ms=warmup_ms,
        iterations=reps,
    )
    cpu = statistics.median(got["cpu_ns"]) / 1e6
    wall = statistics.median(got["wall_ns"]) / 1e6
    return cpu, wall, str(got["digest"])


def consumer_table(rows: list[tuple[ConsumerWorkload, Result]]) -> list[str]:
    lines = [
        "| assignor | scenario | members | partitions | groupsim CPU ms (+gc) | Kafka CPU ms "
        "| CPU ratio | groupsim wall ms | Kafka wall ms | wall ratio | same bytes |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|",
    ]
    for w, r in rows:
        ratio = (r.ours_cpu + r.ours_gc) / r.kafka_cpu
        wall = r.ours_wall / r.kafka_wall
        lines.append(
            f"| {w.assignor} | {w.scenario} | {w.members:,} | {w.partitions:,} "
            f"| {r.ours_cpu:.1f} (+{r.ours_gc:.1f}) | {r.kafka_cpu:.1f} | **{ratio:.2f}×** "
            f"| {r.ours_wall:.1f} | {r.kafka_wall:.1f} | {wall:.2f}× "
            f"| {'yes' if r.equal else 'NO'} |"
        )
    return lines


# ------------------------------------------------------------------------------------ report


def machine() -> str:
    """One line: CPU model, cores, OS, Python, load average when the run started."""
    model = platform.processor() or "unknown CPU"
    try:
        text = Path("/proc/cpuinfo").read_text()
        found = re.search(r"model name\s*:\s*(.+)", text)
        if found:
            model = found.group(1).strip()
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"CPython {platform.python_version()}; load average at start {load}"
    )


def table(rows: list[tuple[Workload, Result]]) -> list[str]:
    lines = [
        "| assignor | scenario | workers | tasks | groupsim CPU ms (+gc) | Kafka CPU ms "
        "| CPU ratio | groupsim wall ms | Kafka wall ms | wall ratio | same bytes |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|",
    ]
    for w, r in rows:
        ratio = (r.ours_cpu + r.ours_gc) / r.kafka_cpu
        wall = r.ours_wall / r.kafka_wall
        lines.append(
            f"| {w.assignor} | {w.scenario} | {w.workers:,} | {w.tasks:,} "
            f"| {r.ours_cpu:.1f} (+{r.ours_gc:.1f}) | {r.kafka_cpu:.1f} | **{ratio:.2f}×** "
            f"| {r.ours_wall:.1f} | {r.kafka_wall:.1f} | {wall:.2f}× "
            f"| {'yes' if r.equal else 'NO'}{''.join(f' ({n})' for n in r.notes)} |"
        )
    return lines


def write_doc(body: list[str], begin: str = BEGIN, end_marker: str = END) -> None:
    """Replaces a generated block of ``docs/benchmarks.md`` (between the ``begin`` and
    ``end_marker`` lines of the side-by-side section) with ``body``; the prose around it stays.

    Raises:
        SystemExit: the page has no such block.
    """
    text = DOC.read_text()
    start, end = text.find(begin), text.find(end_marker)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC}: no '{begin}' ... '{end_marker}' block to replace")
    block = "\n".join([begin, *body, end_marker])
    DOC.write_text(text[:start] + block + text[end + len(end_marker) :])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="timed iterations per side (median)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed JVM iterations per row")
    parser.add_argument(
        "--warmup-ms", type=int, default=2000, help="and at least this long (JVM wall ms)"
    )
    parser.add_argument("--quick", action="store_true", help="only the 10,000-task rows")
    parser.add_argument("--workers", type=int, help="only rows of this many workers")
    parser.add_argument("--tasks", type=int, help="only rows of this many tasks")
    parser.add_argument("--write", action="store_true", help="write the table into docs/")
    parser.add_argument(
        "--only",
        choices=("connect", "streams", "consumer"),
        help="only the Connect, the Streams or the consumer rows",
    )
    parser.add_argument("--assignor", help="only consumer rows of this assignor")
    args = parser.parse_args(argv)
    if args.reps < 5:
        parser.error("--reps must be at least 5 (medians of >= 5)")
    reason = kafka.unavailable_reason()
    if reason:
        print(reason.replace("tests skipped", "benchmark cannot run"), file=sys.stderr)
        return 2
    where = machine()
    version = kafka.requested_version()
    command = kafka.build(version)
    log = Path(tempfile.mkdtemp(prefix="bench-vs-kafka-")) / "kafka-oracle.log"
    oracle = kafka.KafkaOracle(command, log)
    rows: list[tuple[Workload, Result]] = []
    srows: list[tuple[StreamsWorkload, Result]] = []
    crows: list[tuple[ConsumerWorkload, Result]] = []
    connect_grid = (
        grid(args.quick, args.workers, args.tasks) if args.only in (None, "connect") else []
    )
    stream_rows: list[StreamsWorkload] | None = (
        [] if args.only not in (None, "streams") or args.workers or args.tasks else None
    )
    consumer_rows = [
        c
        for c in (consumer_grid(args.quick) if args.only in (None, "consumer") else [])
        if args.workers in (None, c.members)
        and args.tasks in (None, c.partitions)
        and args.assignor in (None, c.assignor)
    ]
    started = time.perf_counter()
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
        java_line = java.strip().splitlines()[0] if java.strip() else "java"
        print(f"Kafka {oracle.version} ({oracle.commit}), {java_line}; {where}", flush=True)
        for w in connect_grid:
            rounds = build_rounds(w)
            k_cpu, k_wall, k_digest = time_kafka(
                oracle, w, rounds, args.reps, args.warmup, args.warmup_ms
            )
            o_cpu, o_gc, o_wall, o_digest = time_groupsim(w, rounds, args.reps)
            r = Result(o_cpu, o_gc, o_wall, k_cpu, k_wall, o_digest == k_digest)
            rows.append((w, r))
            print(table([(w, r)])[-1], flush=True)
        for sw in streams_grid(args.quick) if stream_rows is None else stream_rows:
            doc = streams_document(sw)
            if sw.assignor == "rack_aware" and sw.tasks >= RACK_SKIP_FROM:
                o_cpu, o_gc, o_wall, o_out = time_groupsim_streams(doc, args.reps)
                nan = float("nan")
                sr = Result(o_cpu, o_gc, o_wall, nan, nan, True, ["Kafka not run"])
                srows.append((sw, sr))
                print(streams_table([(sw, sr)])[-1], flush=True)
                continue
            once = sw.assignor == "rack_aware" and sw.tasks >= RACK_ONCE_FROM
            k_cpu, k_wall, k_out = time_kafka_streams(
                oracle,
                doc,
                1 if once else args.reps,
                0 if once else args.warmup,
                0 if once else args.warmup_ms,
            )
            o_cpu, o_gc, o_wall, o_out = time_groupsim_streams(doc, args.reps)
            if sw.assignor == "rack_aware":
                # OR-Tools may pick another optimum than Kafka's cycle cancelling: the same
                # minimum cost is what must agree (docs/fidelity.md; the differential tests
                # check Kafka's own pick with groupsim's cycle-cancelling solver)
                same = o_out.get("cost") == k_out.get("cost") and "cost" in o_out
                sr = Result(
                    o_cpu, o_gc, o_wall, k_cpu, k_wall, same, ["Kafka: 1 call"] if once else []
                )
            else:
                sr = Result(o_cpu, o_gc, o_wall, k_cpu, k_wall, o_out == k_out)
            srows.append((sw, sr))
            print(streams_table([(sw, sr)])[-1], flush=True)
        for cw in consumer_rows:
            members = consumer_members(cw)
            k_cpu, k_wall, k_digest = time_kafka_consumer(
                oracle, cw, members, args.reps, args.warmup, args.warmup_ms
            )
            o_cpu, o_gc, o_wall, o_digest = time_groupsim_consumer(cw, members, args.reps)
            cr = Result(o_cpu, o_gc, o_wall, k_cpu, k_wall, o_digest == k_digest)
            crows.append((cw, cr))
            print(consumer_table([(cw, cr)])[-1], flush=True)
    finally:
        oracle.close()
    elapsed = time.perf_counter() - started
    flags = " ".join(sys.argv[1:] if argv is None else argv)
    head = (
        f"Produced by `{f'.venv/bin/python benchmarks/bench_vs_kafka.py {flags}'.rstrip()}`"
        f" ({elapsed / 60:.0f} min; medians of {args.reps}; Kafka warm-up per row at least "
        f"{args.warmup} iterations and {args.warmup_ms / 1000:g} s). Kafka {oracle.version} "
        f"(commit {oracle.commit}), {java_line}; {where}:"
    )
    if rows:
        body = [head, "", *table(rows)]
        print("\n".join(body))
        if args.write:
            write_doc(body)
    if srows:
        sbody = [head, "", *streams_table(srows)]
        print("\n".join(sbody))
        if args.write:
            write_doc(sbody, STREAMS_BEGIN, STREAMS_END)
    if crows:
        cbody = [head, "", *consumer_table(crows)]
        print("\n".join(cbody))
        if args.write:
            write_doc(cbody, CONSUMER_BEGIN, CONSUMER_END)
    return 0 if all(r.equal for _, r in [*rows, *srows, *crows]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
