"""``groupsim replay --conform``, plain consumer leaders: groupsim's consumer assignor given the
inputs a real ``KafkaConsumer`` leader had must hand every member the same partitions.

Inputs, per completed round of a consumer group (protocol type ``consumer``, protocol
``range``, ``roundrobin``, ``sticky`` or ``cooperative-sticky``: Kafka's built-in
``ConsumerPartitionAssignor`` s):

* the members of the leader's JoinGroup answer, in order (member id, ``group.instance.id``,
  decoded ``ConsumerProtocolSubscription``: topics, owned partitions, generation, rack, user
  data), as ``ConsumerCoordinator#onLeaderElected`` reads them;
* the cluster metadata the leader's consumer had: the Metadata answers its client id received
  before its SyncGroup, in ``trace.jsonl`` (each topic's latest answer wins; the replicas'
  racks from the answer's brokers, KIP-881).

Compared per member: the assigned partitions (``ConsumerProtocolAssignment``) per topic, each
topic's partitions in the order the assignor listed them (the order of the topics themselves
is that of the ``HashMap`` Kafka's ``ConsumerProtocol`` groups them in, and is not compared). A
custom assignor (any other protocol name) is skipped, counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from members.assignors.consumer import ASSIGNORS, ClusterTopics, ConsumerMember
from protocol.consumer_codec import decode_assignment, decode_subscription

__all__ = ["ASSIGNORS", "MetadataAnswer", "NoMetadata", "consumer_round", "read_metadata"]

#: One Metadata answer: (ms since the trace began, client id, topic → per partition racks).
MetadataAnswer = tuple[int, str, dict[str, tuple[tuple[str | None, ...], ...]]]


def read_metadata(trace: Path) -> list[MetadataAnswer]:
    """Every Metadata answer of the trace with at least one topic, in trace order: its time
    (ms since the trace's first line), client id, and per topic without error the racks of
    each partition's replicas (``None`` for a broker without ``broker.rack``)."""
    out: list[MetadataAnswer] = []
    start: int | None = None
    with trace.open() as handle:
        for line in handle:
            entry: dict[str, Any] = json.loads(line)
            start = entry["t_ms"] if start is None else start
            if entry.get("api") != "Metadata" or entry.get("dir") != "response":
                continue
            fields = entry.get("fields", {})
            racks = {int(b["node_id"]): b.get("rack") for b in fields.get("brokers", [])}
            topics: dict[str, tuple[tuple[str | None, ...], ...]] = {}
            for topic in fields.get("topics", []):
                if topic.get("error_code") not in (0, None, "none") or not topic.get("name"):
                    continue
                parts = sorted(topic.get("partitions", []), key=lambda p: int(p["partition_index"]))
                topics[str(topic["name"])] = tuple(
                    tuple(racks.get(int(n)) for n in p.get("replica_nodes", [])) for p in parts
                )
            if topics:
                out.append((int(entry["t_ms"]) - start, str(entry.get("client_id", "")), topics))
    return out


class NoMetadata(LookupError):
    """The trace has no Metadata answer to the leader's client naming a topic its group
    subscribes to before the leader's SyncGroup (a trimmed trace, or a leader that learnt of
    it before the recording began): the round cannot be replayed (counted as skipped)."""


def _cluster(metadata: list[MetadataAnswer], client: str, before_ms: int) -> ClusterTopics:
    """What the leader's consumer knew of the topics by ``before_ms``."""
    known: dict[str, tuple[tuple[str | None, ...], ...]] = {}
    for t_ms, who, topics in metadata:
        if t_ms > before_ms:
            break
        if who == client:
            known.update(topics)
    return known


def consumer_round(
    protocol: str,
    members: list[tuple[str, str | None, bytes]],
    leader_client: str,
    sync_t_ms: int,
    metadata: list[MetadataAnswer],
    recorded: dict[str, bytes],
) -> tuple[str, str, Any, Any] | None:
    """Runs groupsim's ``protocol`` assignor on one round: the first difference as
    ``(member, field, recorded, groupsim)``, or None when every member gets the same
    partitions.

    Args:
        protocol: the round's protocol name (a key of :data:`ASSIGNORS`).
        members: ``(member id, group.instance.id, subscription bytes)`` of the leader's
            JoinGroup answer, in order.
        leader_client: the leader's client id (whose Metadata answers are its cluster view).
        sync_t_ms: the time of the leader's SyncGroup (ms since the trace began).
        metadata: :func:`read_metadata`' output.
        recorded: member id → the assignment bytes the leader sent.

    Raises:
        NoMetadata: a subscribed topic is in none of the leader's Metadata answers so far.
        members.assignors.consumer.StickyAssignmentError: the sticky assignors refuse the
            inputs (Kafka's ``IllegalStateException``).
        protocol.errors.DecodeError: unreadable subscription or assignment bytes.
    """
    group = [
        ConsumerMember(m, decode_subscription(data), instance) for m, instance, data in members
    ]
    cluster = _cluster(metadata, leader_client, sync_t_ms)
    missing = sorted({t for m in group for t in m.subscription.topics} - set(cluster))
    if missing:
        raise NoMetadata(", ".join(missing))
    ours = ASSIGNORS[protocol](group, cluster)
    if set(ours) - set(recorded) or set(recorded) - set(ours):
        return ("", "members", sorted(recorded), sorted(ours))
    for member, data in recorded.items():
        theirs = _by_topic(decode_assignment(data).partitions)
        mine = _by_topic(ours.get(member, []))
        for topic in sorted({*theirs, *mine}):
            if theirs.get(topic, []) != mine.get(topic, []):
                return (member, f"partitions[{topic}]", theirs.get(topic, []), mine.get(topic, []))
    return None


def _by_topic(parts: Any) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in parts:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out
