"""``groupsim replay --conform``, Kafka Streams leaders: groupsim's StreamsPartitionAssignor
given the inputs a real Streams leader had must hand every client the same active and standby
tasks.

Inputs, per completed round of a Streams group (protocol ``stream``):

* the members' subscriptions, from the leader's JoinGroup answer (process ids, previous tasks'
  offset sums, client tags, owned partitions), in that order;
* the application: ``DIR/streams-app.json`` (see :func:`read_app`) names each subtopology's
  source topic, partition count and changelog topic, and the assignment settings
  (``num.standby.replicas``, ``acceptable.recovery.lag``, ``max.warmup.replicas``,
  ``probing.rebalance.interval.ms``, ``rack.aware.assignment.tags``) — what the leader reads
  from its topology and ``StreamsConfig``;
* the changelogs' end offsets: the ListOffsets answers the leader's admin client
  (``<client.id>-admin``; Kafka's ``StreamsPartitionAssignor`` asks through its Admin) received
  before the leader's SyncGroup, as recorded in ``trace.jsonl``.

groupsim's Streams model names topics ``input-<subtopology>`` (members/streams_state.py), so the
real topic names in the subscriptions are mapped onto those before the assignor runs, and back
for the comparison. Compared per member: the active tasks, the standby tasks (warm-ups are
standbys on the wire), whether a probing rebalance is scheduled (``nextRebalanceMs`` set;
its exact value is the leader's wall clock and is not compared), and the assignment's
``version`` and ``commonly_supported_version`` (KIP-268 version probing: groupsim's assignor
plays the leader's release, the ``latest_supported_version`` its own subscription announces,
so an older leader reads a newer member's subscription as a future one). The first differing
field is reported with the round (generation) and the member, as for Connect.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from members.assignors.streams import AssignmentConfigs, TaskId
from members.assignors.streams.partition_assignor import StreamsPartitionAssignor
from members.streams_state import (
    CONSUMER_PROTOCOL_VERSION,
    StreamsTopology,
    Subtopology,
    read_assignment,
    split_threads,
)
from protocol import consumer_codec
from protocol.kafka_configs import STREAMS_DEFAULTS
from protocol.streams_subscription import decode_subscription
from protocol.streams_types import NO_NEXT_REBALANCE
from protocol.streams_versions import LATEST_SUPPORTED_VERSION
from protocol.topic_partitions import TopicPartition

from .exchanges import TraceError

__all__ = ["APP_FILE", "StreamsApp", "read_app", "read_end_offsets", "streams_round"]

#: The side file describing the Streams application of a recording.
APP_FILE = "streams-app.json"


@dataclass(frozen=True, slots=True)
class StreamsApp:
    """A Streams application as its leader's assignor sees it: per subtopology id, its
    ``(source topic, partitions, changelog topic or None)``, the assignment configs, and per
    subtopology id the racks of its source and changelog partitions' replicas (KIP-925; what
    the leader read from the topics' metadata; absent: unknown, rack-aware assignment off)."""

    subtopologies: dict[int, tuple[str, int, str | None]]
    configs: AssignmentConfigs
    racks: dict[int, tuple[tuple[frozenset[str], ...], tuple[frozenset[str], ...]]] = field(
        default_factory=dict
    )


def read_app(path: Path) -> StreamsApp:
    """Reads ``streams-app.json``::

        {"subtopologies": [{"id": 0, "source_topic": "input", "partitions": 6,
                            "changelog_topic": "stateful-counts-changelog"}],
         "num.standby.replicas": 1, "acceptable.recovery.lag": 10, "max.warmup.replicas": 2,
         "probing.rebalance.interval.ms": 60000, "rack.aware.assignment.tags": "zone"}

    A subtopology may add ``"source_racks"`` / ``"changelog_racks"`` (per partition, the racks
    of its replicas: ``[["r1"], ["r2"]]``), the file ``"rack.aware.assignment.strategy"``
    (``none``, ``min_traffic``, ``balance_subtopology``).

    Raises:
        TraceError: the file cannot be read or does not have this shape.
    """
    try:
        data = json.loads(path.read_text())
        subs = {
            int(s["id"]): (str(s["source_topic"]), int(s["partitions"]), s.get("changelog_topic"))
            for s in data["subtopologies"]
        }
        tags = str(data.get("rack.aware.assignment.tags", ""))
        racks = {
            int(s["id"]): (_racks(s.get("source_racks", [])), _racks(s.get("changelog_racks", [])))
            for s in data["subtopologies"]
        }
        d = STREAMS_DEFAULTS
        configs = AssignmentConfigs(
            acceptable_recovery_lag=int(
                data.get("acceptable.recovery.lag", d.acceptable_recovery_lag)
            ),
            max_warmup_replicas=int(data.get("max.warmup.replicas", d.max_warmup_replicas)),
            num_standby_replicas=int(data.get("num.standby.replicas", d.num_standby_replicas)),
            probing_rebalance_interval_ms=int(
                data.get("probing.rebalance.interval.ms", d.probing_rebalance_interval_ms)
            ),
            rack_aware_assignment_tags=tuple(t for t in tags.split(",") if t),
            rack_aware_assignment_strategy=str(
                data.get("rack.aware.assignment.strategy", d.rack_aware_assignment_strategy)
            ),
        )
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TraceError(f"{path}: not a streams-app file ({exc!r})") from None
    return StreamsApp(subs, configs, racks)


def _racks(per_partition: list[list[str]]) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(str(r) for r in racks) for racks in per_partition)


def read_end_offsets(trace: Path) -> list[tuple[int, str, dict[tuple[str, int], int]]]:
    """Every ListOffsets answer of the trace: ``(t_ms since the trace began, client id,
    {(topic, partition): offset})`` in trace order."""
    out: list[tuple[int, str, dict[tuple[str, int], int]]] = []
    start: int | None = None
    with trace.open() as handle:
        for line in handle:
            entry = json.loads(line)
            start = entry["t_ms"] if start is None else start
            if entry.get("api") != "ListOffsets" or entry.get("dir") != "response":
                continue
            offsets = {
                (t["name"], int(p["partition_index"])): int(p["offset"])
                for t in entry.get("fields", {}).get("topics", [])
                for p in t["partitions"]
                if p.get("error_code") in (0, None, "none")
            }
            out.append((entry["t_ms"] - start, str(entry.get("client_id", "")), offsets))
    return out


def _admin_of(client_id: str) -> str:
    """``s1-admin`` for a stream thread's consumer ``s1-StreamThread-1-consumer``."""
    return client_id.split("-StreamThread-", 1)[0] + "-admin"


def streams_round(
    app: StreamsApp,
    members: list[tuple[str, bytes]],
    leader: str,
    leader_client: str,
    sync_t_ms: int,
    end_offsets: list[tuple[int, str, dict[tuple[str, int], int]]],
    recorded: dict[str, bytes],
) -> tuple[str, str, Any, Any] | None:
    """Runs groupsim's Streams assignor on one round; the first difference as
    ``(member, field, recorded, groupsim)``, or None when every member gets the same tasks."""
    to_model = {src: f"input-{sid}" for sid, (src, _, _) in app.subtopologies.items()}
    changelog_task = {
        (log, p): TaskId(sid, p)
        for sid, (_, n, log) in app.subtopologies.items()
        if log
        for p in range(n)
    }
    ends: dict[TaskId, int] = {}
    admin = _admin_of(leader_client)
    for t_ms, client, offsets in end_offsets:
        if t_ms > sync_t_ms:
            break
        if client == admin:
            for tp, offset in offsets.items():
                if tp in changelog_task:
                    ends[changelog_task[tp]] = offset
    topology = StreamsTopology(
        [
            Subtopology(
                sid,
                n,
                stateful=log is not None,
                source_racks=app.racks.get(sid, ((), ()))[0],
                changelog_racks=app.racks.get(sid, ((), ()))[1],
            )
            for sid, (_, n, log) in app.subtopologies.items()
        ],
        {task: (offset, 0) for task, offset in ends.items()},
    )
    rewritten = []
    leader_process = uuid.UUID(int=0)
    leader_latest = LATEST_SUPPORTED_VERSION
    processes: list[tuple[int, uuid.UUID]] = []
    for member_id, metadata in members:
        sub = consumer_codec.decode_subscription(metadata)
        user, _ = split_threads(sub.user_data)
        info = decode_subscription(user)
        processes.append((info.version, uuid.UUID(str(info.process_id))))
        if member_id == leader:
            leader_process = uuid.UUID(str(info.process_id))
            # the leader's release: the latest version its own subscription announces
            # (SubscriptionInfo's latestSupportedVersion, v3+), so an older leader reads a
            # newer member's subscription as a future one (version probing, KIP-268)
            if info.latest_supported_version > 0:
                leader_latest = info.latest_supported_version
        sub = consumer_codec.Subscription(
            tuple(to_model.get(t, t) for t in sub.topics),
            user,
            tuple(
                TopicPartition(to_model.get(tp.topic, tp.topic), tp.partition)
                for tp in sub.owned_partitions
            ),
            sub.generation_id,
            sub.rack_id,
        )
        rewritten.append(
            (member_id, consumer_codec.encode_subscription(sub, CONSUMER_PROTOCOL_VERSION))
        )
    first: tuple[str, str, Any, Any] | None = None
    for future in future_places(processes, leader_latest):
        ours = dict(
            StreamsPartitionAssignor(topology, app.configs, leader_process, leader_latest, future)
            .assign(rewritten, sync_t_ms)
            .assignments
        )
        found = _first_difference(recorded, ours)
        if found is None:
            return None
        first = first or found
    return first


def _first_difference(
    recorded: dict[str, bytes], ours: dict[str, bytes]
) -> tuple[str, str, Any, Any] | None:
    if set(ours) != set(recorded):
        return ("", "members", sorted(recorded), sorted(ours))
    for member, data in recorded.items():
        theirs, mine = _view(data), _view(ours[member])
        for key in theirs:
            if theirs[key] != mine[key]:
                return (member, key, theirs[key], mine[key])
    return None


def future_places(
    processes: list[tuple[int, uuid.UUID]], leader_latest: int
) -> list[uuid.UUID | None]:
    """Where a version-probing round's future client may stand in the process-id order
    (``processes``: each member's subscription version and process id): Kafka's
    ``FUTURE_ID`` is a random UUID drawn once per leader JVM, and the task assignor follows
    that order (``UUID.compareTo``: each half a signed long). One id per place: before every
    other client, and just after each (the next UUID in that order), after groupsim's own
    place (None: the label ``FUTURE``, after every UUID), whose difference is the one reported
    when no place gives the recorded answer. ``[None]`` when no subscription is a future
    one."""
    if all(version <= leader_latest for version, _ in processes):
        return [None]
    known = {pid for version, pid in processes if version <= leader_latest}

    def signed(half: int) -> int:
        return half - (1 << 64) if half >> 63 else half

    def java_order(pid: uuid.UUID) -> tuple[int, int]:
        return (signed(pid.int >> 64), signed(pid.int & ((1 << 64) - 1)))

    places: list[uuid.UUID | None] = [None, uuid.UUID(int=(1 << 127) | (1 << 63))]  # minimum
    for pid in sorted(known, key=java_order):
        high, low = java_order(pid)
        if low == (1 << 63) - 1:  # the next UUID carries into the upper half
            high, low = high + 1, -(1 << 63)
        else:
            low += 1
        places.append(uuid.UUID(int=((high % (1 << 64)) << 64) | (low % (1 << 64))))
    return places


def _view(data: bytes) -> dict[str, Any]:
    _, info = read_assignment(data)
    return {
        "active_tasks": sorted(f"{t.subtopology}_{t.partition}" for t in info.active_tasks),
        "standby_tasks": sorted(f"{t.subtopology}_{t.partition}" for t in info.standby_tasks),
        "probing_rebalance": info.next_rebalance_ms != NO_NEXT_REBALANCE,
        "version": info.version,
        "commonly_supported_version": info.commonly_supported_version,
    }
