"""Streams library scenarios, real and simulated, side by side (the Streams rows of
docs/real-kafka.md; :mod:`tests.kafka_oracle.compare` calls this for ``streams/<name>``).

A **real** run: a fresh single-node KRaft broker and one instance of the harness's Kafka Streams
application ``groupsim.oracle.streams.StatefulApp`` per scenario client (``client.id`` = the
client's name, one stream thread, ``input`` with the scenario's partition count → groupByKey →
count, whose changelog is ``stateful-counts-changelog``), with the scenario's assignment
settings (``num.standby.replicas``, ``acceptable.recovery.lag``, ``max.warmup.replicas``,
``probing.rebalance.interval.ms``), recorded through ``groupsim record``:

1. the clients that start at once run until every task is active and balanced, and until the
   stream threads have committed every one of :data:`PRODUCE` input records (so the changelogs
   hold that many records, and both clients' state is caught up: with one standby each of two
   clients holds every task, as the scenario's ``state`` says);
2. once the group has also been quiet for :data:`~tests.kafka_oracle.compare.QUIET_S` with no
   probing rebalance pending (the placement is settled, every standby restored), the timeline's
   steps run in order: ``join`` starts its client (no state directory); ``leave`` stops its
   client (SIGTERM: ``KafkaStreams.close``), which sends LeaveGroup when the step says
   ``leave_group = true`` (the app's ``leave.on.close``); ``crash`` kills its client's
   process by its pid (SIGKILL: no LeaveGroup, nothing closed; the group notices when the
   coordinator expires its session); ``restart`` stops its client (SIGTERM, no LeaveGroup)
   and starts it again at once with the same state directory, on the release the step's
   ``latest_supported_version`` names (:func:`release_of`);
3. the run ends when every client is RUNNING, the actives are balanced, the group has been
   quiet for :data:`~tests.kafka_oracle.compare.QUIET_S` and no probing rebalance is pending
   (the last assignment scheduled none, or its time has passed and it came).

A client whose ``groupsim.latest.supported.version`` is below the harness's 11 runs an older
Kafka Streams release (:data:`OLD_RELEASES`: 8 is 2.7.2) from its own class path
(:mod:`tests.kafka_oracle.releases`' ``streams`` module, a copy of ``StatefulApp`` for that
release's API); ``version-probing-rolling-upgrade`` starts I1–I3 on 2.7.2 and restarts each on
the harness's release (4.0.2 or 4.4.0), 60 s apart as the file says (the group is stable
within seconds of each). Its rows name both releases (``from_kafka``) and carry each side's
sequence of the rounds' assignment versions (``versions``: ``used/commonly supported``,
:func:`version_sequence`). The scenario's ``session.timeout.ms`` and
``heartbeat.interval.ms`` (:data:`CLIENT_SETTINGS`) are given to the real clients too.

Two kinds of scenario run differently. One whose clients' ``state`` lags (in
:data:`SCALES`: ``kip-441-scale-in-lagging``) runs with its record counts scaled down
(:class:`Scale`): the input is written by partition, first each changelog's size less its lag,
then, once the start has settled, the lags with every client's standbys paused (``StatefulApp``'s
``restore.control``), and from the first step on each stream thread restores at the scaled
rate. One with no timeline step (``kip-708-nine-nodes``: the group's first assignment) starts
every client's JVM, then lets them all join at once (``StatefulApp``'s ``start.after``) under
Kafka's default initial rebalance delay (:func:`broker_settings`), and is measured from the
start. One whose partitions have racks (``rack-aware-min-traffic``, KIP-925) runs on a
cluster of one node per rack, its topics' replicas placed as the file says
(:func:`real_kafka`). One with a ``coordinator_failover`` (``kip-441-scale-out-with-faults``)
runs on a cluster of three nodes: the failover kills the coordinator's node (SIGKILL, found by
``FindCoordinator``), and a ``partition`` cuts every connection of the client off at the
recording proxy for ``duration_ms`` (``Proxy.cut``); each step comes as long after the first
as the file says.

The **groupsim** run is the scenario file with what the real run had and the file cannot say:
every changelog's records (``changelog_records``: the mean of the end offsets the real leader's
admin client read; ``changelog_rate = 0``: no new input), each client's process id (Kafka draws
it at random) and each client's ``state`` at the first step (:func:`real_states`: which stores
it holds, and how far behind, follows those random ids). A ``crash`` is moved (within the
heartbeat interval it falls in) so that it comes at the real kill's phase of the client's
heartbeats (:func:`place_crash`): the session, and so the rebalance, then expires as long
after the crash as the real one did.
With a ``restart`` step (a restarted leader's successor is the first of the coordinator's
members, in the order of Kafka's random member ids), groupsim is also given the real member
ids and the real order of first joins (:func:`real_order`, :func:`start_in_order`), so the same
clients lead, as :mod:`tests.kafka_oracle.compare` does for Connect.
Each step is played as long after the first as the real one was, and a failover's
coordinator is down as long as the real one was, from the kill to the new coordinator's first
answer (:func:`place_steps`, :func:`real_down_times`).

Both sides are measured by the same code (:func:`measure`) from the same kind of data: what
every member was given in each leader round (the leader's SyncGroup assignments decoded from
the trace; the ``assignment`` records of the event log).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coordinator.config import CoordinatorConfig
from members.streams_state import read_assignment, split_threads
from protocol import consumer_codec
from protocol.streams_subscription import decode_subscription
from protocol.streams_types import NO_NEXT_REBALANCE
from scenarios.check.log_check import check_log
from scenarios.input.library import loads_any
from scenarios.record.conform import conform_coordinator, read_exchanges
from scenarios.record.frames import decode_response
from scenarios.record.leaders import conform_leaders
from scenarios.record.moves import coordinator_moves
from scenarios.record.streams_leaders import read_app, read_end_offsets
from scenarios.serve import wire
from scenarios.sim.runner import simulate
from tests.kafka_oracle.cluster import (
    Cluster,
    RecorderThread,
    StreamsInstance,
    _stop,
    kafka_broker,
    kafka_cluster,
    streams_app,
)

#: Input records the first client writes before it starts (keys k0..k59: with 3 partitions,
#: 16,000 / 23,000 / 21,000 records, each above the library's acceptable.recovery.lag of
#: 10,000, so a client without state is not caught up on any task).
PRODUCE = 60_000
#: The broker's group settings (given to the replay too).
BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
#: The Streams application's stateless sub-topology's source topic (``StatefulApp``).
STATELESS_INPUT = "stateless-input"
#: The Streams application's changelog topic (``StatefulApp``: store ``counts``).
CHANGELOG = "stateful-counts-changelog"
#: Longest wait for one phase of a real run (s): a settled start can take two probing
#: rebalances (60 s apart) when a client joined after the input was written.
PHASE_TIMEOUT_S = 400
#: Timeline actions the real run plays.
REAL_STEPS = ("join", "leave", "crash", "restart", "coordinator_failover", "partition")
#: ``StatefulApp``'s ``application.id``: the group id.
GROUP = "stateful"
#: Kafka Streams' ``heartbeat.interval.ms`` (its consumer default, 3 s; the app keeps it).
HEARTBEAT_INTERVAL_MS = 3_000
#: The scenario settings given to the real application as they are.
SETTINGS = (
    "num.standby.replicas",
    "acceptable.recovery.lag",
    "max.warmup.replicas",
    "probing.rebalance.interval.ms",
    "rack.aware.assignment.strategy",
)
#: The scenario's consumer settings given to the real application too (not to the leader's
#: assignor: ``streams-app.json`` leaves them out).
CLIENT_SETTINGS = ("session.timeout.ms", "heartbeat.interval.ms")
#: The Kafka release a real client of ``groupsim.latest.supported.version`` N runs
#: (``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION``, read with ``javap
#: -constants`` from each release's jar: 2.5.x 6, 2.6.x and 2.7.x 8, 2.8.x 9, 3.9.1, 4.0.2 and
#: 4.4.0 11): the newest release with 8 (:mod:`tests.kafka_oracle.releases`' ``streams``
#: module). 11 (the default) is the harness's own release.
OLD_RELEASES = {8: "2.7.2"}
#: The harness's own releases' latest version (4.0.2 and 4.4.0 alike).
HARNESS_LATEST_VERSION = 11


def release_of(latest: int | None) -> str | None:
    """The older Kafka release a real client playing ``latest_supported_version`` runs, or
    None for the harness's own (``latest`` None or :data:`HARNESS_LATEST_VERSION`).

    Raises:
        ValueError: a version no release here plays (not in :data:`OLD_RELEASES`).
    """
    if latest is None or latest == HARNESS_LATEST_VERSION:
        return None
    if latest not in OLD_RELEASES:
        raise ValueError(f"no Kafka Streams release with latest supported version {latest} here")
    return OLD_RELEASES[latest]


def start_releases(raw: dict[str, Any]) -> dict[str, str | None]:
    """Each client's release at the start: its own ``groupsim.latest.supported.version``, else
    the scenario's (:func:`release_of`)."""
    default = raw["config"].get("groupsim.latest.supported.version")
    return {
        c["name"]: release_of(c.get("config", {}).get("groupsim.latest.supported.version", default))
        for c in raw["clients"]
    }


def scenario_releases(raw: dict[str, Any]) -> list[str]:
    """The older releases a scenario's real run starts or restarts clients on, sorted."""
    steps = [
        release_of(s.get("latest_supported_version"))
        for s in raw.get("timeline", [])
        if s["action"] == "restart"
    ]
    return sorted({r for r in [*start_releases(raw).values(), *steps] if r})


def broker_settings(raw: dict[str, Any]) -> dict[str, int]:
    """The broker's group settings for a scenario: :data:`BROKER`, except for a scenario with
    no timeline step, which is about the group's first assignment: its clients join together
    (:func:`run_real` starts their applications at once, their JVMs started beforehand) and
    the broker waits Kafka's default ``group.initial.rebalance.delay.ms`` (3 s, extended by
    each join, ``InitialDelayedJoin``), as groupsim's run of the file does, so that the first
    generation has every client."""
    if any(s["action"] != "phase" for s in raw.get("timeline", [])):
        return BROKER
    return {**BROKER, "group.initial.rebalance.delay.ms": 3_000}


def scenario_racks(raw: dict[str, Any]) -> tuple[str, ...]:
    """The racks of a scenario whose partitions have racks (KIP-925: a subtopology's
    ``source_racks`` / ``changelog_racks``), with its clients' ``client.rack``, sorted: the
    real run has one broker per rack (:func:`placements`). Empty when no partition has one
    (the real run then has a single broker)."""
    placed = {
        rack
        for sub in raw["subtopologies"]
        for key in ("source_racks", "changelog_racks")
        for racks in sub.get(key, [])
        for rack in racks
    }
    if not placed:
        return ()
    clients = {
        str(c["config"]["client.rack"])
        for c in raw["clients"]
        if "client.rack" in c.get("config", {})
    }
    return tuple(sorted(placed | clients))


def placements(raw: dict[str, Any], racks: tuple[str, ...]) -> dict[str, dict[int, list[int]]]:
    """Per topic of ``StatefulApp`` (``input``, its changelog, ``stateless-input``) whose
    partitions the scenario places: partition → the node ids holding its replicas, node ``i``
    being the broker in ``racks[i - 1]`` (:func:`~tests.kafka_oracle.cluster.kafka_cluster`'s
    ``racks``). Partition ``p`` has the racks of entry ``p`` modulo the list's length, as
    groupsim reads the lists (``StreamsTopology.source_racks``)."""
    node = {rack: i + 1 for i, rack in enumerate(racks)}
    topics = {0: ("input", CHANGELOG), 1: (STATELESS_INPUT, "")}
    out: dict[str, dict[int, list[int]]] = {}
    for sub in raw["subtopologies"]:
        for topic, key in zip(
            topics[int(sub["id"])], ("source_racks", "changelog_racks"), strict=True
        ):
            given = sub.get(key, [])
            if topic and given:
                out[topic] = {
                    p: sorted(node[r] for r in given[p % len(given)])
                    for p in range(int(sub["partitions"]))
                }
    return out


def create_placed_topics(bootstrap: str, placed: dict[str, dict[int, list[int]]]) -> None:
    """Creates each topic of ``placed`` (:func:`placements`) with exactly those replicas,
    before any application starts (``StatefulApp`` then finds its input, and Kafka Streams
    its changelog, already there with the partition count it wants: ``InternalTopicManager``
    keeps an existing internal topic). ``min.insync.replicas`` is 1 (a partition may have one
    replica; the cluster's default is 2); the changelog is compacted, as Streams makes one."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
    try:
        admin.create_topics(
            [
                NewTopic(
                    topic,
                    replica_assignments=parts,
                    topic_configs={
                        "min.insync.replicas": "1",
                        **({"cleanup.policy": "compact"} if topic == CHANGELOG else {}),
                    },
                )
                for topic, parts in placed.items()
            ]
        )
    finally:
        admin.close()


@dataclass(frozen=True)
class RealKafka:
    """The brokers of a real run: clients bootstrap from ``bootstrap``; the recorder fronts
    ``127.0.0.1:port``; ``cluster`` is None for a single broker."""

    bootstrap: str
    port: int
    cluster: Cluster | None = None


def _fails_over(raw: dict[str, Any]) -> bool:
    return any(s["action"] == "coordinator_failover" for s in raw.get("timeline", []))


@contextmanager
def real_kafka(work: Path, raw: dict[str, Any], group: dict[str, int]) -> Iterator[RealKafka]:
    """The brokers of a real run, for the block. A single-node broker; or, for a scenario
    whose partitions have racks (:func:`scenario_racks`), a cluster of one node per rack with
    the scenario's topics placed on them (:func:`create_placed_topics`); or, for one with a
    ``coordinator_failover``, a cluster of three nodes (:func:`kafka_cluster`: the group's
    coordinator moves to another replica of ``__consumer_offsets`` when its node stops) with
    the input and the changelog replicated to every node, so that no partition goes offline
    with it (``StatefulApp`` runs ``replication.factor=1``, so Kafka Streams would make its
    changelog with one replica: a leader that then finds a changelog partition without a
    leader retries its metadata until the rebalance times out).
    ``group``: the group settings under Kafka's names (:func:`broker_settings`)."""
    given: dict[str, str | int] = {k.replace(".", "_"): v for k, v in group.items()}
    racks = scenario_racks(raw)
    if not racks and not _fails_over(raw):
        with kafka_broker(work, **given) as broker:
            yield RealKafka(broker.bootstrap, broker.port)
        return
    with kafka_cluster(work, size=len(racks) or 3, racks=racks, **given) as cluster:
        if racks:
            create_placed_topics(cluster.bootstrap, placements(raw, racks))
        else:
            stateful, stateless = topology(raw)
            everywhere = [1, 2, 3]
            placed = {
                "input": dict.fromkeys(range(stateful), everywhere),
                CHANGELOG: dict.fromkeys(range(stateful), everywhere),
            }
            if stateless:
                placed[STATELESS_INPUT] = dict.fromkeys(range(stateless), everywhere)
            create_placed_topics(cluster.bootstrap, placed)
        yield RealKafka(cluster.bootstrap, cluster.nodes[1].port, cluster)


#: Kafka Streams' ``acceptable.recovery.lag`` default (``StreamsConfig``), the library's too.
ACCEPTABLE_RECOVERY_LAG = 10_000
#: The restore consumer's ``max.poll.records`` of a throttled real client: batches of at most
#: this many records, so :class:`Scale`'s rate is kept to a fraction of a second.
RESTORE_BATCH = 20


@dataclass(frozen=True)
class Scale:
    """A scenario made smaller for a real run, in both runs alike.

    Every record count (changelog sizes, the standbys' lags, ``acceptable.recovery.lag``) is
    divided by ``records``; ``groupsim.restore.records.per.sec`` is divided by ``records`` and
    multiplied by ``speedup``, so a restore takes ``1 / speedup`` of the library's (virtual)
    time, and the real clients restore at that rate too (``StatefulApp``'s
    ``restore.control``: each batch of a stream thread's changelog reader waits until the
    thread has spent batch / rate seconds on it). Times that Kafka bounds from below are not
    scaled (``probing.rebalance.interval.ms`` ≥ 60 s)."""

    records: int
    speedup: int

    def settings(self, config: dict[str, Any]) -> dict[str, int]:
        """The scaled ``acceptable.recovery.lag`` and restore rate of a scenario's config."""
        lag = int(config.get("acceptable.recovery.lag", ACCEPTABLE_RECOVERY_LAG))
        rate = int(config["groupsim.restore.records.per.sec"])
        return {
            "acceptable.recovery.lag": lag // self.records,
            "groupsim.restore.records.per.sec": rate * self.speedup // self.records,
        }


#: Scenarios run smaller (:class:`Scale`). ``kip-441-scale-in-lagging``: changelogs of a
#: million records and standbys 200,000 behind would take a loaded 2-core machine many
#: minutes to write, and the library's 2,000 records/s a dozen probing rebalances (11 minutes)
#: to restore; a hundredth of the records restored five times faster settles in about three.
#: ``kip-441-scale-out-with-faults``: a fiftieth of the records (20,000 per changelog, the
#: size of the other rows') restored a fiftieth as fast, so I3's warm-ups restore for the
#: library's 100 s and the partition still comes during a probing rebalance (unthrottled, a
#: real client restores them in a second: no probing rebalance, and the faults hit a quiet
#: group).
SCALES = {
    "streams/kip-441-scale-in-lagging": Scale(records=100, speedup=5),
    "streams/kip-441-scale-out-with-faults": Scale(records=50, speedup=1),
}


def lagging_inputs(raw: dict[str, Any], scale: Scale) -> tuple[dict[int, int], dict[int, int]]:
    """Input records per partition of a scenario whose standbys lag (its clients' ``state``
    has lags above 0), scaled: those written before the standbys are paused (each changelog's
    size less its lag) and those written while they are (the lag: every standby of a task is
    that far behind when the timeline starts; a task's lag is the largest its clients have).

    Raises:
        ValueError: the scenario has more than one subtopology.
    """
    (sub,) = raw["subtopologies"]
    overrides = raw.get("changelog_overrides", {})
    lag: dict[int, int] = {}
    for client in raw["clients"]:
        for task, behind in client.get("state", {}).items():
            p = int(task.split("_")[1])
            lag[p] = max(lag.get(p, 0), int(behind))
    before, during = {}, {}
    for p in range(int(sub["partitions"])):
        size = int(overrides.get(f"0_{p}", {}).get("records", sub["changelog_records"]))
        before[p] = (size - lag.get(p, 0)) // scale.records
        during[p] = lag.get(p, 0) // scale.records
    return before, during


def produce(bootstrap: str, per_partition: dict[int, int]) -> None:
    """Writes ``per_partition[p]`` records to ``input``'s partition p (keys k0..k59 as
    ``StatefulApp`` writes; the partition given explicitly, so each changelog gets exactly
    that many)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    try:
        for p, n in sorted(per_partition.items()):
            for i in range(n):
                producer.send(
                    "input", key=f"k{i % 60}".encode(), value=str(i).encode(), partition=p
                )
        producer.flush(60)
    finally:
        producer.close(10)


@dataclass(frozen=True)
class Given:
    """What one member was given in a round: its active and standby task ids, and its
    ``nextRebalanceMs`` (None: no rebalance scheduled; on the real side wall-clock ms, on
    groupsim's virtual ms)."""

    active: tuple[str, ...]
    standby: tuple[str, ...]
    next_ms: int | None


@dataclass(frozen=True)
class StreamsRound:
    """One leader round: when (ms), its generation, per client name what it was given, and
    the assignment's ``(version, commonly_supported_version)``: the lowest subscription
    version the leader received and the lowest latest supported version (KIP-268;
    ``StreamsPartitionAssignor`` encodes every member's ``AssignmentInfo`` with both)."""

    t_ms: int
    generation: int
    given: dict[str, Given]
    versions: tuple[int, int] = (0, 0)

    @property
    def followup(self) -> bool:
        """A member must rejoin at once (``nextRebalanceMs`` at or before the round: KIP-429's
        follow-up after a revocation)."""
        return any(g.next_ms is not None and g.next_ms <= self.t_ms for g in self.given.values())

    @property
    def probing(self) -> bool:
        """A probing rebalance is scheduled (KIP-441: a ``nextRebalanceMs`` after the round)
        and no follow-up is."""
        return not self.followup and any(
            g.next_ms is not None and g.next_ms > self.t_ms for g in self.given.values()
        )


@dataclass(frozen=True)
class StreamsMeasures:
    """What happened from the first timeline action on.

    ``rebalances``: leader rounds; ``probing_rebalances``: rounds that follow a round which
    scheduled a probing rebalance; ``followups``: rounds that follow one asking for an
    immediate rejoin; ``tasks_moved``: active tasks whose client at the end differs from the
    one just before the first action; ``downtime_ms``: task-ms during which no member's last
    assignment makes the task active (from ``start_ms`` when a client crashed there, else from
    the first round at or after it); ``actives_at_end``: active tasks per client at the end.
    """

    rebalances: int
    probing_rebalances: int
    followups: int
    tasks_moved: int
    downtime_ms: int
    actives_at_end: dict[str, int]


def client_name(member_id: str) -> str:
    """``I1`` for ``I1-StreamThread-1-consumer-<uuid>`` (real), ``I1-StreamThread-1-consumer``
    (a real client id) or ``I1-<uuid>`` (groupsim); a client's name may hold ``-``
    (``Node-1``)."""
    if "-StreamThread-" in member_id:
        return member_id.split("-StreamThread-", 1)[0]
    return re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "", member_id)


def measure(
    rounds: list[StreamsRound], start_ms: int, end_ms: int, crashed: frozenset[str] = frozenset()
) -> StreamsMeasures:
    """:class:`StreamsMeasures` of the rounds between ``start_ms`` and ``end_ms``.

    A client runs the active tasks of its last round from that round's time; a task with no
    client running it is down (cooperative rebalancing: a revoked task is in no assignment
    until the follow-up round gives it to its new client). A client missing from a round is
    gone and runs nothing; a client in ``crashed`` runs nothing from ``start_ms`` (its kill)
    on, while the group still counts it until its session expires.
    """
    ordered = sorted((r for r in rounds if r.t_ms <= end_ms), key=lambda r: r.t_ms)
    tasks = {t for r in ordered for g in r.given.values() for t in g.active}
    owner: dict[str, str] = {}
    before: dict[str, str] | None = None
    counted = probing = followups = 0
    downtime = 0
    last_t = start_ms
    previous: StreamsRound | None = None
    for r in [*ordered, None]:
        t = end_ms if r is None else r.t_ms
        if crashed and before is None and t >= start_ms:
            before = dict(owner)
            owner = {task: name for task, name in owner.items() if name not in crashed}
        if t > last_t and before is not None:
            downtime += (t - last_t) * len(tasks - set(owner))
            last_t = t
        if r is None:
            break
        if r.t_ms >= start_ms:
            if before is None:
                before = dict(owner)
                last_t = r.t_ms
            counted += 1
            if previous is not None and previous.probing:
                probing += 1
            if previous is not None and previous.followup:
                followups += 1
        owner = {t: name for name, g in sorted(r.given.items()) for t in g.active}
        previous = r
    before = dict(owner) if before is None else before
    moved = sum(1 for task, name in before.items() if owner.get(task, name) != name)
    at_end: dict[str, int] = {}
    for name in owner.values():
        at_end[name] = at_end.get(name, 0) + 1
    return StreamsMeasures(
        counted, probing, followups, moved, downtime, dict(sorted(at_end.items()))
    )


def _shape(r: StreamsRound) -> tuple[Any, ...]:
    """A round's shape: the sorted (actives, standbys) counts of its clients, and whether it
    asks for a follow-up or schedules a probing rebalance (which client is which is left out:
    Kafka's first leader, and so the first placement, follows random member ids)."""
    counts = sorted((len(g.active), len(g.standby)) for g in r.given.values())
    return (tuple(counts), r.followup, r.probing)


def equal_rounds(
    real: list[StreamsRound], sim: list[StreamsRound], start: tuple[int, int], real_end_ms: int
) -> int:
    """How many of the rounds from the first step on have the same :func:`_shape`, the k-th
    real round against the k-th simulated one."""
    ours = [r for r in sorted(real, key=lambda r: r.t_ms) if start[0] <= r.t_ms <= real_end_ms]
    theirs = [r for r in sorted(sim, key=lambda r: r.t_ms) if r.t_ms >= start[1]]
    return sum(1 for a, b in zip(ours, theirs, strict=False) if _shape(a) == _shape(b))


def real_rounds(trace: Path) -> tuple[list[StreamsRound], int]:
    """The leaders' rounds of a recorded Streams trace (SyncGroups carrying assignments; times
    relative to the trace's first line, ``nextRebalanceMs`` made relative too) and the first
    line's wall-clock ms."""
    first = int(json.loads(trace.open().readline())["t_ms"])
    rounds = []
    for ex in read_exchanges(trace):
        if ex.api_key != 14:
            continue
        request = wire.decode_request(ex.request_raw)
        if not request.body.assignments or ex.response_raw is None:
            continue
        _, answer = decode_response(ex.response_raw, 14, ex.version)
        if answer is None or int(answer.error_code) != 0:
            continue
        given = {}
        versions = (0, 0)
        for a in request.body.assignments:
            _, info = read_assignment(a.assignment)
            versions = (info.version, info.commonly_supported_version)
            nxt = None if info.next_rebalance_ms == NO_NEXT_REBALANCE else info.next_rebalance_ms
            given[client_name(a.member_id)] = Given(
                tuple(sorted(f"{t.subtopology}_{t.partition}" for t in info.active_tasks)),
                tuple(sorted(f"{t.subtopology}_{t.partition}" for t in info.standby_tasks)),
                None if nxt is None else (0 if nxt == 0 else nxt - first),
            )
        rounds.append(StreamsRound(ex.t_ms, int(request.body.generation_id), given, versions))
    return rounds, first


def sim_rounds(records: list[dict[str, Any]]) -> list[StreamsRound]:
    """The rounds of a groupsim Streams event log: per generation, the time of its
    ``streams_assignment`` and every member's ``assignment`` record."""
    times: dict[int, int] = {}
    versions: dict[int, tuple[int, int]] = {}
    given: dict[int, dict[str, Given]] = {}
    for rec in records:
        if rec.get("kind") == "streams_assignment":
            times[int(rec["generation"])] = int(rec["t_ms"])
            versions[int(rec["generation"])] = (
                int(rec.get("version", 0)),
                int(rec.get("commonly_supported_version", 0)),
            )
        elif rec.get("kind") == "assignment" and int(rec.get("error", 0)) == 0:
            nxt = rec.get("next_rebalance_ms")
            given.setdefault(int(rec["generation"]), {})[client_name(rec["member_id"])] = Given(
                tuple(sorted(rec.get("active", []))),
                tuple(sorted(rec.get("standby", []))),
                None if nxt is None else int(nxt),
            )
    return [
        StreamsRound(t, g, given.get(g, {}), versions.get(g, (0, 0)))
        for g, t in sorted(times.items())
    ]


def version_sequence(rounds: list[StreamsRound], start_ms: int, end_ms: int) -> list[str]:
    """The rounds' assignment versions from ``start_ms`` to ``end_ms``, in order, each
    ``"<used>/<commonly supported>"`` (:attr:`StreamsRound.versions`)."""
    return [
        f"{r.versions[0]}/{r.versions[1]}"
        for r in sorted(rounds, key=lambda r: r.t_ms)
        if start_ms <= r.t_ms <= end_ms
    ]


#: Settings both runs of a scenario take instead of the file's (``[config]``): the
#: version-probing upgrade is the one Streams library file that keeps Kafka's default
#: ``probing.rebalance.interval.ms`` (10 minutes); a real start whose leader finds a client
#: not caught up schedules a probe that far off, so both runs take Kafka's minimum, 60 s, as
#: every other Streams library file does.
RUN_CONFIG: dict[str, dict[str, int]] = {
    "streams/version-probing-rolling-upgrade": {"probing.rebalance.interval.ms": 60_000},
}


def run_raw(name: str) -> dict[str, Any]:
    """:func:`scenario_raw` with :data:`RUN_CONFIG`'s settings in its ``[config]``."""
    raw = scenario_raw(name)
    raw["config"] = {**raw.get("config", {}), **RUN_CONFIG.get(name, {})}
    return raw


def scenario_raw(name: str) -> dict[str, Any]:
    import tomllib

    from tests.kafka_oracle.compare import LIBRARY

    return tomllib.loads((LIBRARY / f"{name}.toml").read_text())


def simulated_text(
    name: str,
    changelog_records: int | None,
    process_ids: dict[str, str] | None = None,
    states: dict[str, dict[str, int]] | None = None,
    sizes: dict[str, int] | None = None,
) -> str:
    """The scenario file groupsim runs: the library's, with every subtopology's
    ``changelog_records`` set to the real run's and ``changelog_rate`` to 0, each task's
    changelog in ``sizes`` (task → records: the real partitions' end offsets, which differ
    with how the input's keys hash) written as a ``[changelog_overrides]`` entry, each client's
    ``process_id`` the real one's (a UUID: the HighAvailabilityTaskAssignor places tasks in
    process-id order, and a real Streams client draws its id at random, ``UUID.randomUUID``
    in ``KafkaStreams``) and, where ``states`` names the client, its ``state`` (task → lag in
    records) replaced by that one (:func:`real_states`); a scenario of :data:`SCALES` with its
    ``acceptable.recovery.lag`` and restore rate scaled (:meth:`Scale.settings`); one of
    :data:`RUN_CONFIG` with those settings; its stateful sub-topology 0 named with
    ``StatefulApp``'s changelog topic (:data:`CHANGELOG`), so that standbys a stream thread
    resumes together come back in the real restore consumer's order (members/restore.py)."""
    from tests.kafka_oracle.compare import LIBRARY

    text = (LIBRARY / f"{name}.toml").read_text()
    text = name_changelog(text)
    for client, pid in (process_ids or {}).items():
        # a client the file gives no process id gets the real one's line after its name
        text = re.sub(
            rf'(?m)^(name = "{re.escape(client)}"\n)(?!process_id = )',
            r'\1process_id = ""\n',
            text,
        )
        text = re.sub(
            rf'(?m)^(name = "{re.escape(client)}"\nprocess_id = )"[^"]*"$', rf'\1"{pid}"', text
        )
    for client, state in (states or {}).items():
        joiner = rf'(?m)^name = "{re.escape(client)}"\nprocess_id = "[^"]*"\nautostart = false$'
        if not state and re.search(joiner, text):
            continue  # a joining client with no state directory: as the file says
        inline = ", ".join(f'"{task}" = {lag}' for task, lag in sorted(state.items()))
        text, n = re.subn(
            rf'(?m)^(name = "{re.escape(client)}"\nprocess_id = "[^"]*"\n)state = \{{[^}}]*\}}$',
            rf"\g<1>state = {{ {inline} }}",
            text,
        )
        if n != 1:
            raise ValueError(f"{name}: no state line of client {client} to replace")
    for key, value in RUN_CONFIG.get(name, {}).items():
        text, n = re.subn(rf'(?m)^"{re.escape(key)}" = \d+$', f'"{key}" = {value}', text)
        if n == 0:
            text = text.replace("[config]\n", f'[config]\n"{key}" = {value}\n', 1)
    scale = SCALES.get(name)
    if scale is not None:
        config = scenario_raw(name)["config"]
        for key, value in scale.settings(config).items():
            text, n = re.subn(rf'(?m)^"{re.escape(key)}" = \d+$', f'"{key}" = {value}', text)
            if n == 0:
                text = text.replace("[config]\n", f'[config]\n"{key}" = {value}\n', 1)
    if sizes:
        # the real run's sizes replace the file's own (a scaled scenario's are the real ones)
        text = re.sub(r"(?m)^\[changelog_overrides\]\n(?:.+\n)*\n", "", text)
        entries = "".join(
            f'"{task}" = {{ records = {n}, rate = 0 }}\n' for task, n in sorted(sizes.items())
        )
        cut = text.index("[[clients]]")
        text = text[:cut] + "[changelog_overrides]\n" + entries + "\n" + text[cut:]
    if changelog_records is None:
        return text
    text = re.sub(
        r"(?m)^changelog_records = \d+$", f"changelog_records = {changelog_records}", text
    )
    return re.sub(r"(?m)^changelog_rate = \d+$", "changelog_rate = 0", text)


def name_changelog(text: str) -> str:
    """A library Streams scenario's text with its sub-topology 0, when stateful and unnamed,
    given ``changelog_topic = CHANGELOG`` (``StatefulApp``: application ``stateful``, store
    ``counts``); other text as it is."""
    import tomllib

    subs = {int(s["id"]): s for s in tomllib.loads(text).get("subtopologies", [])}
    if 0 not in subs or not subs[0].get("stateful", True) or "changelog_topic" in subs[0]:
        return text
    return re.sub(
        r"(?m)^(\[\[subtopologies\]\]\nid = 0\n)",
        rf'\1changelog_topic = "{CHANGELOG}"\n',
        text,
        count=1,
    )


def real_changelog_sizes(trace: Path) -> dict[str, int]:
    """Each task's changelog end offset (``0_<partition>`` → records): the latest the admin
    clients' ListOffsets answers gave for its partition (no input is written after the start,
    so they stop changing once it is counted)."""
    ends: dict[int, int] = {}
    for _, client, offsets in read_end_offsets(trace):
        if client.endswith("-admin"):
            ends.update({p: o for (topic, p), o in offsets.items() if topic == CHANGELOG})
    return {f"0_{p}": n for p, n in sorted(ends.items())}


def real_process_ids(trace: Path) -> dict[str, str]:
    """Each client's process id (a UUID string), from its first JoinGroup subscription."""
    out: dict[str, str] = {}
    for ex in read_exchanges(trace):
        if ex.api_key != 11:
            continue
        request = wire.decode_request(ex.request_raw)
        client = client_name(request.client_id)
        if client in out or not request.body.protocols:
            continue
        sub = consumer_codec.decode_subscription(request.body.protocols[0].metadata)
        out[client] = str(decode_subscription(split_threads(sub.user_data)[0]).process_id)
    return out


def real_states(trace: Path, step_ms: int, leaving: set[str]) -> dict[str, dict[str, int]]:
    """Each client's state directory at the first step (``step_ms``, ms since the trace's first
    line), as task → lag in records, for the scenario file's ``state``.

    A client that joins again after the step: the task offset sums of its first JoinGroup
    subscription after it (what the leader of the step's round read: every store it holds,
    ``Task.LATEST_OFFSET`` for a running active, lag 0) against the changelog's end offsets
    (the last ListOffsets answer of the admin clients; no input is written after the start).
    A client in ``leaving`` (it sends no JoinGroup after the step): the active and standby
    tasks of the last round before the step, lag 0 (the run waited until the group was quiet
    and every input record counted, so its standbys had restored)."""
    ends = {int(task.split("_")[1]): n for task, n in real_changelog_sizes(trace).items()}
    out: dict[str, dict[str, int]] = {}
    for ex in read_exchanges(trace):
        if ex.api_key != 11 or ex.t_ms < step_ms:
            continue
        request = wire.decode_request(ex.request_raw)
        client = client_name(request.client_id)
        if client in out or client in leaving or not request.body.protocols:
            continue
        sub = consumer_codec.decode_subscription(request.body.protocols[0].metadata)
        info = decode_subscription(split_threads(sub.user_data)[0])
        out[client] = {
            f"{t.subtopology}_{t.partition}": (0 if s < 0 else max(0, ends.get(t.partition, s) - s))
            for t, s in info.offset_sums().items()
        }
    rounds, _ = real_rounds(trace)
    before = [r for r in rounds if r.t_ms < step_ms]
    if before:
        last = max(before, key=lambda r: r.t_ms)
        for client in leaving:
            g = last.given.get(client)
            if g is not None:
                out[client] = dict.fromkeys([*g.active, *g.standby], 0)
    return dict(sorted(out.items()))


def crashed_clients(name: str) -> frozenset[str]:
    """The clients the scenario's timeline crashes."""
    return frozenset(
        s["client"] for s in scenario_raw(name).get("timeline", []) if s["action"] == "crash"
    )


def place_crash(text: str, name: str, client: str, phase_ms: int) -> str:
    """``text`` with ``client``'s crash (and every timeline entry at the same time, its phase
    label) moved so that it comes ``phase_ms`` after the simulated client's last request to
    the coordinator, as the real kill came after the real one's (:func:`real_phases`).

    The simulated heartbeats are not in the event log, but the coordinator's
    ``member_removed`` (reason ``session_timeout``) is ``session_timeout_ms`` after the
    client's last JoinGroup, SyncGroup or Heartbeat (``ClassicGroup``'s heartbeat expiration),
    which gives the simulated phase at the crash; the crash moves by the difference, either
    way, which keeps it within the heartbeat interval it falls in while ``phase_ms`` is below
    :data:`HEARTBEAT_INTERVAL_MS` (else ``text`` is returned as it is)."""
    if not 0 <= phase_ms < HEARTBEAT_INTERVAL_MS:
        return text
    loaded = loads_any(text, f"{name}.toml")
    records = simulate(loaded, loaded.scenario.seed).records
    crash = next(
        (r["t_ms"] for r in records if r.get("kind") == "member_crash" and r["member"] == client),
        None,
    )
    removed = next(
        (
            r
            for r in records
            if r.get("kind") == "member_removed"
            and r.get("member") == client
            and r.get("reason") == "session_timeout"
            and crash is not None
            and r["t_ms"] >= crash
        ),
        None,
    )
    step = re.search(
        rf'(?m)^at_ms = (\d+)\naction = "crash"\nclient = "{re.escape(client)}"$', text
    )
    if crash is None or removed is None or step is None:
        return text
    sim_phase = crash - (int(removed["t_ms"]) - int(removed["session_timeout_ms"]))
    at = int(step.group(1))
    return re.sub(rf"(?m)^at_ms = {at}$", f"at_ms = {at + phase_ms - sim_phase}", text)


def run_simulation(
    name: str,
    changelog_records: int | None,
    process_ids: dict[str, str] | None = None,
    states: dict[str, dict[str, int]] | None = None,
    sizes: dict[str, int] | None = None,
    phases: dict[str, int] | None = None,
    offsets: list[int] | None = None,
    downs: dict[int, int] | None = None,
    order: tuple[dict[str, list[str]], list[str]] | None = None,
    gaps: list[int] | None = None,
) -> tuple[StreamsMeasures, list[StreamsRound], int]:
    """groupsim's run of :func:`simulated_text`, its steps at the real run's times and its
    coordinator down as long as the real one (``offsets``, ``downs``: :func:`place_steps`),
    each crash placed at the real kill's heartbeat phase given in ``phases`` (client → ms,
    :func:`place_crash`), and, given the real ``order`` (:func:`real_order`), its clients
    started in the real order with the real member ids (:func:`start_in_order`), so the same
    clients lead, and each restarted client back as long after its old member's last request
    as the real one (``gaps``, :func:`place_restarts`): measures, rounds, time of the first
    step (virtual ms)."""
    text = simulated_text(name, changelog_records, process_ids, states, sizes)
    text = place_steps(text, offsets or [], downs or {})
    if order:
        text = start_in_order(text, order[1])
    for client, phase in sorted((phases or {}).items()):
        text = place_crash(text, name, client, phase)
    if gaps:
        text = place_restarts(text, name, gaps)
    loaded = loads_any(text, f"{name}.toml")
    result = simulate(loaded, loaded.scenario.seed, member_ids=order[0] if order else None)
    start = next(
        (
            r["t_ms"]
            for r in result.records
            if r.get("kind") == "step" and r.get("action") != "phase"
        ),
        0,  # no step: from the start (the group's first assignment)
    )
    end = max(r["t_ms"] for r in result.records)
    rounds = sim_rounds(result.records)
    return measure(rounds, start, end, crashed_clients(name)), rounds, start


def real_order(trace: Path) -> tuple[dict[str, list[str]], list[str]]:
    """What decides the real leaders and groupsim would otherwise draw (as
    :class:`tests.kafka_oracle.compare.RealOrder` for Connect): per client name, the member
    ids the broker handed its stream thread's consumers, in order (a departed leader's
    successor is the first of the coordinator's ``HashMap`` of members, ``ClassicGroup#remove``,
    an order of those random ids), and the clients in the order of their first JoinGroup
    carrying a member id (the first one the broker adds leads, ``ClassicGroup#add``)."""
    ids: dict[str, list[str]] = {}
    seen: set[str] = set()
    joins: list[str] = []
    exchanges = [ex for ex in read_exchanges(trace) if ex.api_key == 11]
    for ex in exchanges:
        member_id = str(wire.decode_request(ex.request_raw).body.member_id)
        if member_id and client_name(member_id) not in joins:
            joins.append(client_name(member_id))
    for ex in sorted(exchanges, key=lambda ex: ex.response_t_ms or 0):
        if ex.response_raw is None:
            continue
        _, answer = decode_response(ex.response_raw, 11, ex.version)
        member_id = str(getattr(answer, "member_id", "") or "")
        if "-StreamThread-" in member_id and member_id not in seen:
            seen.add(member_id)
            ids.setdefault(client_name(member_id), []).append(member_id)
    return ids, joins


def real_restart_gaps(trace: Path, restarts: list[tuple[str, int]]) -> list[int]:
    """Per restart step ``(client, ms of the trace's clock when it was played)``: the ms from
    the old process's last request that restarted its session at the coordinator (JoinGroup,
    SyncGroup, Heartbeat; it heartbeats while it closes) to the new process's first JoinGroup
    (the one without a member id, KIP-394). Whether the new member joins before the old one's
    session expires (its join starts a rebalance the old member holds up until it expires)
    or after (two rebalances) follows from it; :func:`place_restarts` gives groupsim the same
    gap. -1 for a step whose new process never joined."""
    requests = []
    for ex in read_exchanges(trace):
        if ex.api_key in (11, 12, 14):
            req = wire.decode_request(ex.request_raw)
            requests.append((ex.t_ms, ex.api_key, client_name(req.client_id), req.body.member_id))
    out = []
    for client, at in restarts:
        join = next(
            (t for t, key, c, mid in requests if key == 11 and c == client and t >= at and not mid),
            None,
        )
        last = max((t for t, _, c, _ in requests if c == client and t < (join or at)), default=None)
        out.append(-1 if join is None or last is None else join - last)
    return out


def place_restarts(text: str, name: str, gaps: list[int]) -> str:
    """``text`` with each ``restart`` step's ``down_ms`` (none: 0) set so that its new member
    starts as long after the old member's last request to the coordinator as the real one
    joined (``gaps``, :func:`real_restart_gaps`; -1: left as it is). groupsim's clean
    shutdown stops the old member at the step, a heartbeat phase after its last request
    (read from a run of ``text``: its ``member_removed``, reason ``session_timeout``, is
    ``session_timeout_ms`` after it), so ``down_ms`` is the real gap less that phase (at
    least 0). The steps are placed one after the other, each from a run with the earlier
    ones placed."""
    pattern = re.compile(r'(?m)^at_ms = (\d+)\naction = "restart"\nclient = "([^"]+)"\n')
    for k, gap in enumerate(gaps):
        steps = list(pattern.finditer(text))
        if gap < 0 or k >= len(steps):
            continue
        step = steps[k]
        at, client = int(step.group(1)), step.group(2)
        loaded = loads_any(text, f"{name}.toml")
        records = simulate(loaded, loaded.scenario.seed).records
        removed = next(
            (
                r
                for r in records
                if r.get("kind") == "member_removed"
                and r.get("member") == client
                and r.get("reason") == "session_timeout"
                and r["t_ms"] >= at
            ),
            None,
        )
        if removed is None:
            continue
        phase = at - (int(removed["t_ms"]) - int(removed["session_timeout_ms"]))
        block = re.sub(r"(?m)^down_ms = \d+\n", "", text[step.end() :].split("[[", 1)[0])
        rest = text[step.end() :].split("[[", 1)
        tail = "[[" + rest[1] if len(rest) > 1 else ""
        text = text[: step.end()] + f"down_ms = {max(0, gap - phase)}\n" + block + tail
    return text


def start_in_order(text: str, first_joins: list[str]) -> str:
    """``text`` with its clients that start at once (no ``start_ms``, not ``autostart =
    false``) started :data:`~tests.kafka_oracle.compare.JOIN_SPACING_MS` apart in the real
    order of first joins (:func:`real_order`), so that the same client leads first."""
    from tests.kafka_oracle.compare import JOIN_SPACING_MS

    k = 0
    for client in first_joins:
        block = re.search(rf'(?ms)^name = "{re.escape(client)}"\n.*?(?=^\[|\Z)', text)
        if block is None or re.search(r"(?m)^(start_ms|autostart) = ", block.group(0)):
            continue
        head = re.escape(f'name = "{client}"\n')
        text = re.sub(
            rf"(?m)^{head}", f'name = "{client}"\nstart_ms = {k * JOIN_SPACING_MS}\n', text
        )
        k += 1
    return text


def real_phases(trace: Path, kills: dict[str, int]) -> dict[str, int]:
    """Each killed client's heartbeat phase at its kill: ``kills`` (client → ms of the trace's
    clock) minus the client's last JoinGroup, SyncGroup or Heartbeat request before it (each
    restarts its session at the coordinator). A client with none is left out."""
    last: dict[str, int] = {}
    for ex in read_exchanges(trace):
        if ex.api_key not in (11, 12, 14):
            continue
        client = client_name(wire.decode_request(ex.request_raw).client_id)
        if client in kills and ex.t_ms <= kills[client]:
            last[client] = max(last.get(client, ex.t_ms), ex.t_ms)
    return {c: kills[c] - last[c] for c in sorted(kills) if c in last}


def app_file(raw: dict[str, Any], scale: Scale | None = None) -> dict[str, Any]:
    """``streams-app.json`` for the real run (what its leaders' assignor reads), with the
    ``acceptable.recovery.lag`` the real clients ran when the scenario was scaled."""
    stateful, stateless = topology(raw)
    subs: list[dict[str, Any]] = [
        {"id": 0, "source_topic": "input", "partitions": stateful, "changelog_topic": CHANGELOG}
    ]
    if stateless:
        subs.append({"id": 1, "source_topic": STATELESS_INPUT, "partitions": stateless})
    for sub, given in zip(
        subs, sorted(raw["subtopologies"], key=lambda g: int(g["id"])), strict=False
    ):
        for key in ("source_racks", "changelog_racks"):
            racks = given.get(key, [])
            if racks and (key == "source_racks" or "changelog_topic" in sub):
                # per partition, as the real leader read them from the topics' metadata
                sub[key] = [racks[p % len(racks)] for p in range(int(sub["partitions"]))]
    return {
        "subtopologies": subs,
        **{k: raw["config"][k] for k in SETTINGS if k in raw["config"]},
        **{k: ",".join(v) for k, v in raw["config"].items() if k == "rack.aware.assignment.tags"},
        **(
            {"acceptable.recovery.lag": scale.settings(raw["config"])["acceptable.recovery.lag"]}
            if scale
            else {}
        ),
    }


def topology(raw: dict[str, Any]) -> tuple[int, int]:
    """The partitions of the scenario's stateful sub-topology 0 and of its stateless
    sub-topology 1 (0 when it has none): ``StatefulApp``'s ``input`` → count and
    ``stateless-input`` → foreach.

    Raises:
        ValueError: another shape of topology, which the app does not have.
    """
    subs = {int(s["id"]): s for s in raw["subtopologies"]}
    if set(subs) - {0, 1} or not subs[0].get("stateful", True):
        raise ValueError("the real app runs a stateful sub-topology 0 and a stateless 1 only")
    if 1 in subs and subs[1].get("stateful", True):
        raise ValueError("the real app's sub-topology 1 is stateless")
    return int(subs[0]["partitions"]), int(subs[1]["partitions"]) if 1 in subs else 0


def _committed(trace: Path) -> int:
    """The sum over ``input`` partitions of the highest offset committed so far."""
    best: dict[int, int] = {}
    with trace.open() as handle:
        for line in handle:
            if '"OffsetCommit"' not in line:
                continue
            rec = json.loads(line)
            if rec.get("dir") != "request":
                continue
            for topic in rec.get("fields", {}).get("topics", []):
                if topic.get("name") != "input":
                    continue
                for p in topic.get("partitions", []):
                    i = int(p["partition_index"])
                    best[i] = max(best.get(i, 0), int(p["committed_offset"]))
    return sum(best.values())


def _pending_probe(trace: Path) -> bool:
    """Whether the last leader round scheduled a rebalance that has not come yet."""
    rounds, first = real_rounds(trace)
    if not rounds:
        return False
    last = max(rounds, key=lambda r: r.t_ms)
    now = time.time() * 1000 - first
    return any(g.next_ms is not None and g.next_ms > now - 1000 for g in last.given.values())


def _wait(predicate: Any, what: str, apps: list[StreamsInstance]) -> None:
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            seen = {a.name: (a.state(), a.tasks()) for a in apps}
            raise RuntimeError(f"timed out waiting for {what}: {seen}")
        time.sleep(0.5)


def _waiting(app: StreamsInstance) -> bool:
    """Whether the app waits for its start file (``StatefulApp``'s ``start.after``)."""
    return any(line.startswith("WAITING ") for line in app.lines())


def _balanced(apps: list[StreamsInstance], tasks: int) -> bool:
    actives = [a.tasks()[0] for a in apps]
    counts = [len(t) for t in actives]
    return (
        all(a.state() == "RUNNING" for a in apps)
        and sum(counts) == tasks
        and len(set().union(*actives)) == tasks
        and max(counts) - min(counts) <= 1
    )


@dataclass(frozen=True)
class StreamsRealRun:
    """A real run: measures, rounds, the window (ms of the trace's clock), the mean changelog
    end offset, each client's process id and state at the first step (:func:`real_states`),
    the conformance of the trace, each task's changelog end offset
    (:func:`real_changelog_sizes`) and each killed client's heartbeat phase at its kill
    (:func:`real_phases`)."""

    measures: StreamsMeasures
    rounds: list[StreamsRound]
    start_ms: int
    end_ms: int
    changelog_records: int
    process_ids: dict[str, str]
    conformance: dict[str, Any]
    states: dict[str, dict[str, int]]
    sizes: dict[str, int]
    phases: dict[str, int] = field(default_factory=dict)
    offsets: list[int] = field(default_factory=list)
    downs: dict[int, int] = field(default_factory=dict)
    order: tuple[dict[str, list[str]], list[str]] | None = None
    gaps: list[int] = field(default_factory=list)


def run_real(name: str, work: Path) -> StreamsRealRun:
    """The scenario on real Kafka Streams (see the module docstring).

    Raises:
        RuntimeError: a phase did not end within :data:`PHASE_TIMEOUT_S`.
        ValueError: a timeline action not in :data:`REAL_STEPS` (not run here yet).
    """
    from contextlib import ExitStack

    from tests.kafka_oracle.compare import QUIET_S, _GroupTraffic

    raw = run_raw(name)
    partitions, stateless = topology(raw)
    tasks = partitions + stateless
    settings: dict[str, Any] = {
        k.replace(".", "_"): v for k, v in raw["config"].items() if k in SETTINGS
    }
    if "rack.aware.assignment.tags" in raw["config"]:
        settings["rack_aware_assignment_tags"] = ",".join(
            raw["config"]["rack.aware.assignment.tags"]
        )
    if stateless:
        settings["stateless_partitions"] = stateless
    settings.update(
        {k.replace(".", "_"): v for k, v in raw["config"].items() if k in CLIENT_SETTINGS}
    )
    tags = {c["name"]: c.get("config", {}) for c in raw["clients"]}
    releases = start_releases(raw)
    steps = [s for s in raw.get("timeline", []) if s["action"] != "phase"]
    if any(s["action"] not in REAL_STEPS for s in steps):
        raise ValueError(f"{name}: only {', '.join(REAL_STEPS)} steps are run on real Streams apps")
    leaving = {s["client"] for s in steps if s["action"] in ("leave", "crash")}
    # a restarted leader's successor follows Kafka's random member ids: given to groupsim
    restarts = any(s["action"] == "restart" for s in steps)
    restarted: list[tuple[str, int]] = []  # (client, wall ms of its restart step)
    kills: dict[str, int] = {}
    played: list[int] = []  # wall ms at which each step was played
    healed = 0  # wall ms at which the last partition heals
    failovers: dict[int, int] = {}  # step index -> wall ms of its broker's kill
    leave_group = {s["client"] for s in steps if s["action"] == "leave" and s.get("leave_group")}
    scale = SCALES.get(name)
    control = work / "restore-control"
    inputs: tuple[dict[int, int], dict[int, int]] | None = None
    if scale is not None:
        inputs = lagging_inputs(raw, scale)
        settings["acceptable_recovery_lag"] = scale.settings(raw["config"])[
            "acceptable.recovery.lag"
        ]
        settings["restore_control"] = str(control)
        settings["restore_consumer_max_poll_records"] = RESTORE_BATCH
    produced = PRODUCE if inputs is None else sum(inputs[0].values()) + sum(inputs[1].values())
    together = not steps
    gate = work / "start"
    out = work / "recorded"
    trace = out / "trace.jsonl"
    broker_config = broker_settings(raw)
    with real_kafka(work, raw, broker_config) as kafka:
        bootstrap = kafka.bootstrap
        recorder = RecorderThread(("127.0.0.1", kafka.port), out)
        traffic = _GroupTraffic(trace)
        try:
            with ExitStack() as stack:
                live: list[StreamsInstance] = []

                def start(
                    client: str, first: bool, release: str | None, after: Path | None = None
                ) -> StreamsInstance:
                    extra: dict[str, Any] = {"produce": PRODUCE} if first and not inputs else {}
                    if client in leave_group:
                        extra["leave_on_close"] = "true"
                    if together:
                        extra["start_after"] = str(gate)
                    if after:
                        extra["open_after"] = str(after)
                    # the client's own settings (client.tag.*), "." written as "_"
                    extra.update(
                        {
                            k.replace(".", "_"): v
                            for k, v in tags[client].items()
                            if not k.startswith("groupsim.")
                        }
                    )
                    live.append(
                        stack.enter_context(
                            streams_app(
                                work,
                                recorder.bootstrap,
                                client,
                                release,
                                partitions=partitions,
                                **settings,
                                **extra,
                            )
                        )
                    )
                    return live[-1]

                def settled() -> bool:
                    return (
                        time.time() * 1000 > healed
                        and _balanced(live, tasks)
                        and time.time() * 1000 - traffic.latest() > QUIET_S * 1000
                        and not _pending_probe(trace)
                    )

                initial = [c["name"] for c in raw["clients"] if c.get("autostart", True)]
                for k, client in enumerate(initial):
                    start(client, k == 0, releases[client])
                if together:
                    # every JVM up (and the input written) before any application joins
                    _wait(lambda: all(_waiting(a) for a in live), "the applications up", live)
                    gate.touch()
                _wait(lambda: _balanced(live, tasks), "a balanced start", live)
                if inputs is not None:
                    produce(bootstrap, inputs[0])
                    need = sum(inputs[0].values())
                    _wait(lambda: _committed(trace) >= need, "the first input counted", live)
                else:
                    _wait(lambda: _committed(trace) >= PRODUCE, "every input record counted", live)
                _wait(settled, "a settled start", live)
                if inputs is not None and scale is not None:
                    # the standbys stop following their changelogs while the lags are written
                    control.write_text("pause\n")
                    produce(bootstrap, inputs[1])
                    _wait(lambda: _committed(trace) >= produced, "the lags counted", live)
                    rate = scale.settings(raw["config"])["groupsim.restore.records.per.sec"]
                    control.write_text(f"{rate}\n")
                step_at = int(time.time() * 1000)
                for step in steps:
                    # each step as long after the first as the file says (wall ms)
                    due = step_at + int(step["at_ms"]) - int(steps[0]["at_ms"])
                    while time.time() * 1000 < due:
                        time.sleep(min(0.2, max(0.0, due / 1000 - time.time())))
                    played.append(int(time.time() * 1000))
                    if step["action"] == "join":
                        start(step["client"], False, releases[step["client"]])
                    elif step["action"] == "coordinator_failover":
                        assert kafka.cluster is not None
                        node = kafka.cluster.coordinator(GROUP)
                        failovers[len(played) - 1] = int(time.time() * 1000)
                        kafka.cluster.stop(node.node_id)  # SIGKILL: no controlled shutdown
                    elif step["action"] == "partition":
                        recorder.cut(step["client"], int(step["duration_ms"]))
                        healed = max(healed, played[-1] + int(step["duration_ms"]))
                    else:
                        (gone,) = [a for a in live if a.name == step["client"]]
                        new = None
                        release = release_of(step.get("latest_supported_version"))
                        if step["action"] == "restart" and release is None:
                            # the new process's JVM up first (StatefulApp's open.after: the
                            # old one holds the state directory), so it joins within a second
                            # or two of the old one's close, as groupsim's restart (down_ms 0):
                            # a JVM start on a loaded machine can outlast the old member's
                            # session, a race
                            opened = work / f"restart-{len(played)}"
                            new = start(gone.name, False, None, opened)
                            _wait(lambda app=new: _waiting(app), "the new process up", live)
                            played[-1] = int(time.time() * 1000)
                        live.remove(gone)
                        if step["action"] == "crash":
                            kills[gone.name] = int(time.time() * 1000)
                            gone.crash()
                        else:
                            _stop(gone.proc)
                        if step["action"] == "restart":
                            restarted.append((step["client"], played[-1]))
                            # the same state directory, on the step's release (an upgrade)
                            releases[step["client"]] = release
                            if new is None:
                                start(step["client"], False, release)
                            else:
                                opened.touch()
                _wait(settled, "balanced actives with no probing rebalance pending", live)
                end = int(time.time() * 1000)
        finally:
            recorder.stop()
    (out / "streams-app.json").write_text(json.dumps(app_file(raw, scale)) + "\n")
    rounds, first = real_rounds(trace)
    start_ms = min((r.t_ms for r in rounds if r.t_ms >= step_at - first), default=end - first)
    if kills:
        start_ms = min(kills.values()) - first
    if together:
        start_ms = 0  # the group's first assignment is what the scenario is about
    conformance = judge(out, broker_config)
    states = {} if together else real_states(trace, step_at - first, leaving)
    if inputs is not None:
        # a leaving client sends no subscription after the step: its standbys lag as written
        last = max((r for r in rounds if r.t_ms < step_at - first), key=lambda r: r.t_ms)
        for client in leaving:
            if client in last.given:
                states[client].update(
                    {t: inputs[1][int(t[2:])] for t in last.given[client].standby}
                )
    sizes = real_changelog_sizes(trace)
    records = round(statistics.mean(sizes.values())) if sizes else 0
    return StreamsRealRun(
        measure(rounds, start_ms, end - first, frozenset(kills)),
        rounds,
        start_ms,
        end - first,
        records,
        real_process_ids(trace),
        conformance,
        states,
        sizes,
        real_phases(trace, {c: k - first for c, k in kills.items()}),
        [t - played[0] for t in played],
        real_down_times(trace, {k: t - first for k, t in failovers.items()}),
        real_order(trace) if restarts else None,
        real_restart_gaps(trace, [(c, t - first) for c, t in restarted]),
    )


def real_down_times(trace: Path, kills: dict[int, int]) -> dict[int, int]:
    """Per ``coordinator_failover`` step (its index among the steps → its broker's kill, ms of
    the trace's clock): how long the group had no coordinator, from the kill to the first
    request the new coordinator answered as the group's (:func:`coordinator_moves`: what
    ``replay --conform`` loads the group at). A step with no move after it is left out."""
    moves = sorted(
        (m for m in coordinator_moves(read_exchanges(trace)) if m.group == GROUP),
        key=lambda m: m.loaded_ms,
    )
    out: dict[int, int] = {}
    for k, kill in sorted(kills.items()):
        move = next((m for m in moves if m.loaded_ms >= kill), None)
        if move is not None:
            out[k] = move.loaded_ms - kill
    return out


def place_steps(text: str, offsets: list[int], downs: dict[int, int]) -> str:
    """``text`` with its timeline played at the real run's times: the k-th step that is not a
    ``phase`` label at the first step's ``at_ms`` plus ``offsets[k]`` (ms; a phase label at a
    step's time moves with it), and a ``coordinator_failover`` step k down for ``downs[k]`` ms
    (the real down time, :func:`real_down_times`)."""
    head, *blocks = text.split("[[timeline]]\n")
    if not blocks or not offsets:
        return text

    def at(block: str) -> int:
        found = re.search(r"(?m)^at_ms = (\d+)$", block)
        if found is None:
            raise ValueError(f"a timeline entry without at_ms: {block!r}")
        return int(found.group(1))

    phase = re.compile(r'(?m)^action = "phase"$')
    steps = [b for b in blocks if not phase.search(b)]
    moved: dict[int, int] = {}
    for k, block in enumerate(steps[: len(offsets)]):
        moved.setdefault(at(block), at(steps[0]) + offsets[k])
    out, k = [], 0
    for block in blocks:
        when = moved.get(at(block), at(block))
        new = re.sub(r"(?m)^at_ms = \d+$", f"at_ms = {when}", block, count=1)
        if not phase.search(block):
            if k in downs:
                new = re.sub(r"(?m)^down_ms = \d+$", f"down_ms = {downs[k]}", new, count=1)
            k += 1
        out.append(new)
    return "[[timeline]]\n".join([head, *out])


def judge(out: Path, broker: dict[str, int] = BROKER) -> dict[str, Any]:
    """``replay --conform`` (coordinator, with the broker's group settings ``broker``, and
    Streams leaders) and ``groupsim check`` of a recorded Streams run, as counts (the keys of
    :func:`tests.kafka_oracle.compare.judge`)."""
    trace = out / "trace.jsonl"
    exchanges = read_exchanges(trace)
    coordinator = conform_coordinator(exchanges, CoordinatorConfig.from_mapping(broker))
    leaders = conform_leaders(
        exchanges,
        None,
        app=read_app(out / "streams-app.json"),
        end_offsets=read_end_offsets(trace),
    )
    return {
        "answers": sum(coordinator.compared.values()),
        "answer_divergences": len(coordinator.divergences),
        "answer_timing": len(coordinator.timing),
        "rounds": leaders.compared,
        "round_divergences": len(leaders.divergences),
        "round_timing": len(leaders.timing),
        "violations": len(check_log(out / "events.jsonl")),
    }


def row(name: str, real: StreamsRealRun) -> dict[str, Any]:
    """One Streams scenario's results as JSON (kept in ``--results``; :func:`table`)."""
    from tests.kafka_oracle.oracle import _pinned_version, requested_version

    sim, rounds, start = run_simulation(
        name,
        real.changelog_records,
        real.process_ids,
        real.states,
        real.sizes,
        real.phases,
        real.offsets,
        real.downs,
        real.order,
        real.gaps,
    )
    older = scenario_releases(scenario_raw(name))
    return {
        "scenario": name,
        "kind": "streams",
        "kafka": requested_version() or _pinned_version(),
        **({"from_kafka": ", ".join(older)} if older else {}),
        "real": asdict(real.measures),
        "groupsim": asdict(sim),
        "rounds_compared": min(real.measures.rebalances, sim.rebalances),
        "rounds_equal": equal_rounds(real.rounds, rounds, (real.start_ms, start), real.end_ms),
        "versions": {
            "real": version_sequence(real.rounds, real.start_ms, real.end_ms),
            "groupsim": version_sequence(rounds, start, max(r.t_ms for r in rounds)),
        },
        "window_ms": [real.start_ms, real.end_ms],
        "changelog_records": real.changelog_records,
        "process_ids": real.process_ids,
        "states": real.states,
        "changelog_sizes": real.sizes,
        "phases": real.phases,
        "step_offsets_ms": real.offsets,
        "down_ms": {str(k): v for k, v in real.downs.items()},
        **({"member_ids": real.order[0], "first_joins": real.order[1]} if real.order else {}),
        **({"restart_gaps_ms": real.gaps} if real.gaps else {}),
        "conformance": real.conformance,
    }


def rescore(old: dict[str, Any], trace: Path) -> dict[str, Any]:
    """A Streams row again from its trace, without Kafka (see ``compare.rescore``)."""
    ids = old.get("process_ids") or real_process_ids(trace)
    sizes = old.get("changelog_sizes") or real_changelog_sizes(trace)
    records = round(statistics.mean(sizes.values())) if sizes else old["changelog_records"]
    sim, rounds, start = run_simulation(
        old["scenario"],
        records,
        ids,
        old.get("states"),
        sizes,
        old.get("phases"),
        old.get("step_offsets_ms"),
        {int(k): v for k, v in old.get("down_ms", {}).items()},
        (old["member_ids"], old["first_joins"]) if "member_ids" in old else None,
        old.get("restart_gaps_ms"),
    )
    real, _ = real_rounds(trace)
    window = old["window_ms"]
    versions = (
        {
            "versions": {
                "real": version_sequence(real, window[0], window[1]),
                "groupsim": version_sequence(rounds, start, max(r.t_ms for r in rounds)),
            }
        }
        if "versions" in old
        else {}
    )
    raw = run_raw(old["scenario"])
    app = json.dumps(app_file(raw, SCALES.get(old["scenario"]))) + "\n"
    (trace.parent / "streams-app.json").write_text(app)
    return {
        **old,
        "process_ids": ids,
        "changelog_records": records,
        "changelog_sizes": sizes,
        "conformance": judge(trace.parent, broker_settings(scenario_raw(old["scenario"]))),
        "groupsim": asdict(sim),
        "rounds_compared": min(old["real"]["rebalances"], sim.rebalances),
        "rounds_equal": equal_rounds(real, rounds, (window[0], start), window[1]),
        **versions,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of Streams rows."""
    lines = [
        "Streams (Kafka Streams `StatefulApp` instances, one stream thread each; counted from "
        "the first timeline action on; real / groupsim):",
        "",
        "| scenario | Kafka | rebalances | same rounds | probing rebalances | follow-ups "
        "| active tasks moved | task downtime (task·s) | active tasks per client at the end "
        "| the real trace: conformance and check |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        real, sim, conf = r["real"], r["groupsim"], r["conformance"]
        ends = " / ".join(
            " ".join(f"{c}:{n}" for c, n in m["actives_at_end"].items()) for m in (real, sim)
        )
        verdict = (
            f"{conf['answers']} answers: {conf['answer_divergences']} divergences "
            f"({conf['answer_timing']} timing-only); {conf['rounds']} leader rounds: "
            f"{conf['round_divergences']} divergences ({conf['round_timing']} timing-only); "
            f"`groupsim check`: {conf['violations']} violations"
        )
        kafka = f"{r['from_kafka']} → {r['kafka']}" if "from_kafka" in r else r["kafka"]
        lines.append(
            f"| {r['scenario']} | {kafka} | {real['rebalances']} / {sim['rebalances']} "
            f"| {r['rounds_equal']} of {r['rounds_compared']} "
            f"| {real['probing_rebalances']} / {sim['probing_rebalances']} "
            f"| {real['followups']} / {sim['followups']} "
            f"| {real['tasks_moved']} / {sim['tasks_moved']} "
            f"| {real['downtime_ms'] / 1000:.1f} / {sim['downtime_ms'] / 1000:.1f} | {ends} "
            f"| {verdict} |"
        )
    return "\n".join(lines)
