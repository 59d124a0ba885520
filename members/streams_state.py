"""A Kafka Streams application as groupsim models it: topology, local state, and the Streams
user data inside the consumer-protocol envelope.

Everything here is pure (no clock, no I/O, no global randomness); all times are virtual ms.

* :class:`StreamsTopology` — the application's subtopologies: task ids ``<subtopology>_<p>``,
  one source partition per task (topic ``input-<subtopology>``), and for stateful
  subtopologies one changelog partition per task (``store-<subtopology>-changelog``) whose end
  offset is ``changelog_records + changelog_rate × t / 1000`` at virtual time ``t`` (the
  records/s of virtual time the application appends). It plays the topology *and* what the
  leader's admin client reads from the brokers (end offsets, partition racks).
* :class:`StoreState` — one task's state directory on one client (Kafka ``StateDirectory`` +
  the task's checkpoint): its offset is *frozen* (closed task, state kept on disk),
  *restoring* (restoration or a standby: it advances at the client's restore rate, capped at
  the changelog end) or *current* (a running active task: at the end).
* The Streams user data inside the consumer-protocol envelope (Kafka
  ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``, encoded and decoded by
  :mod:`protocol.consumer_codec` at :data:`CONSUMER_PROTOCOL_VERSION`): the SubscriptionInfo /
  AssignmentInfo bytes of :mod:`protocol.streams_subscription` /
  :mod:`protocol.streams_assignment`, with groupsim's thread-count trailer (:func:`with_threads`).

The leader's assignor (Kafka ``StreamsPartitionAssignor.assign``) that reads these is
:class:`members.assignors.streams.partition_assignor.StreamsPartitionAssignor`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from members.assignors.streams import TaskId
from protocol import consumer_codec
from protocol.primitives import Reader, Writer
from protocol.streams_assignment import decode_assignment
from protocol.streams_subscription import encode_subscription
from protocol.streams_types import StreamsAssignment, StreamsSubscription, StreamsTaskId
from protocol.streams_versions import LATEST_SUPPORTED_VERSION
from protocol.topic_partitions import TopicPartition

__all__ = [
    "PROTOCOL_TYPE",
    "PROTOCOL_NAME",
    "THREADS_TRAILER",
    "Subtopology",
    "StreamsTopology",
    "StoreState",
    "CONSUMER_PROTOCOL_VERSION",
    "with_threads",
    "split_threads",
    "process_uuid",
    "process_label",
]

#: Kafka Streams joins as a consumer group member (``ConsumerProtocol.PROTOCOL_TYPE``).
PROTOCOL_TYPE = "consumer"
#: ``StreamsPartitionAssignor.name()``: the one protocol a Streams member lists.
PROTOCOL_NAME = "stream"
#: groupsim's trailer after the SubscriptionInfo bytes: ``INT32 threads`` + these 4 bytes.
#: Kafka readers ignore trailing bytes; see :func:`with_threads`.
THREADS_TRAILER = b"GSTH"
#: ConsumerProtocol version groupsim writes (v3: owned partitions, generation, rack id).
CONSUMER_PROTOCOL_VERSION = 3


# ---------------------------------------------------------------------------------------------
# Topology and changelogs


@dataclass(frozen=True)
class Subtopology:
    """One subtopology: ``partitions`` tasks ``<id>_0`` … ``<id>_<partitions-1>``.

    Attributes:
        id: subtopology number (Kafka's topic group id), >= 0.
        partitions: number of input partitions = tasks.
        stateful: has a changelogged store (its tasks are stateful).
        changelog_records: end offset of every task's changelog at virtual time 0.
        changelog_rate: records appended to every task's changelog per virtual second.
        source_racks / changelog_racks: per partition, the racks of its replicas (KIP-925);
            empty = unknown (rack-aware optimisation then stays off, as in Kafka).
        changelog_topic: its changelog topic's name (Kafka:
            ``<application.id>-<store>-changelog``), or ``None``: groupsim's
            ``store-<id>-changelog``, and its standbys resumed together on a restore consumer
            stay in task order (members/restore.py).
    """

    id: int
    partitions: int
    stateful: bool = True
    changelog_records: int = 0
    changelog_rate: int = 0
    source_racks: tuple[frozenset[str], ...] = ()
    changelog_racks: tuple[frozenset[str], ...] = ()
    changelog_topic: str | None = None


class StreamsTopology:
    """The application's tasks and their changelogs (see module doc).

    Args:
        subtopologies: the subtopologies (distinct ids).
        changelog_overrides: per stateful task, ``(records at t=0, records/s)`` replacing its
            subtopology's values.

    Raises:
        ValueError: duplicate subtopology ids, negative counts.
    """

    def __init__(
        self,
        subtopologies: Sequence[Subtopology],
        changelog_overrides: Mapping[TaskId, tuple[int, int]] | None = None,
    ) -> None:
        ids = [s.id for s in subtopologies]
        if len(set(ids)) != len(ids):
            raise ValueError("subtopology ids must be distinct")
        self.subtopologies = tuple(sorted(subtopologies, key=lambda s: s.id))
        self._by_id = {s.id: s for s in self.subtopologies}
        self.tasks: list[TaskId] = [
            TaskId(s.id, p) for s in self.subtopologies for p in range(s.partitions)
        ]
        self.stateful: list[TaskId] = [t for t in self.tasks if self._by_id[t.subtopology].stateful]
        self.stateless: list[TaskId] = [
            t for t in self.tasks if not self._by_id[t.subtopology].stateful
        ]
        self._stateful_set = frozenset(self.stateful)
        self._changelog: dict[TaskId, tuple[int, int]] = {
            t: (
                self._by_id[t.subtopology].changelog_records,
                self._by_id[t.subtopology].changelog_rate,
            )
            for t in self.stateful
        }
        for task, value in (changelog_overrides or {}).items():
            if task not in self._stateful_set:
                raise ValueError(f"changelog override for {task}, which is not a stateful task")
            self._changelog[task] = value
        self.source_topics = [self.source_topic(s.id) for s in self.subtopologies]

    # --- names ------------------------------------------------------------------------------
    @staticmethod
    def source_topic(subtopology: int) -> str:
        return f"input-{subtopology}"

    def changelog_topic(self, subtopology: int) -> str:
        """The subtopology's changelog topic: the scenario's name, else
        ``store-<subtopology>-changelog``."""
        return self.named_changelog_topic(subtopology) or f"store-{subtopology}-changelog"

    def named_changelog_topic(self, subtopology: int) -> str | None:
        """The changelog topic name the scenario gives the subtopology, or ``None``."""
        return self._by_id[subtopology].changelog_topic

    def is_stateful(self, task: TaskId) -> bool:
        return task in self._stateful_set

    def source_partition(self, task: TaskId) -> TopicPartition:
        return TopicPartition(self.source_topic(task.subtopology), task.partition)

    def changelog_partitions(self, task: TaskId) -> tuple[TopicPartition, ...]:
        if task not in self._stateful_set:
            return ()
        return (TopicPartition(self.changelog_topic(task.subtopology), task.partition),)

    def task_of_partition(self, tp: TopicPartition) -> TaskId | None:
        topic, _, sub = tp.topic.rpartition("-")
        if topic != "input" or not sub.isdigit():
            return None
        task = TaskId(int(sub), tp.partition)
        return task if task in self._task_set else None

    @property
    def _task_set(self) -> frozenset[TaskId]:
        cached = self.__dict__.get("_tasks_frozen")
        if cached is None:
            cached = self.__dict__["_tasks_frozen"] = frozenset(self.tasks)
        return cached

    def subtopology_tasks(self) -> dict[int, list[TaskId]]:
        """Kafka ``tasksForTopicGroup``: subtopology → its tasks (sorted)."""
        out: dict[int, list[TaskId]] = {}
        for t in self.tasks:
            out.setdefault(t.subtopology, []).append(t)
        return out

    # --- what the brokers know --------------------------------------------------------------
    def end_offset(self, task: TaskId, now_ms: int) -> int:
        """End offset (sum over the task's changelog partitions) at ``now_ms``."""
        records, rate = self._changelog[task]
        return records + (rate * now_ms) // 1000

    def changelog_rate(self, task: TaskId) -> int:
        return self._changelog[task][1]

    def source_racks(self) -> dict[TaskId, tuple[frozenset[str], ...]]:
        """Task → racks of each source partition (only tasks whose racks are known)."""
        out: dict[TaskId, tuple[frozenset[str], ...]] = {}
        for t in self.tasks:
            racks = self._by_id[t.subtopology].source_racks
            if racks:
                out[t] = (racks[t.partition % len(racks)],)
        return out

    def changelog_racks(self) -> dict[TaskId, tuple[frozenset[str], ...]]:
        """Stateful task → racks of each changelog partition (only where known)."""
        out: dict[TaskId, tuple[frozenset[str], ...]] = {}
        for t in self.stateful:
            racks = self._by_id[t.subtopology].changelog_racks
            if racks:
                out[t] = (racks[t.partition % len(racks)],)
        return out


# ---------------------------------------------------------------------------------------------
# Local state


class StoreState:
    """One task's local state on one client (see module doc). Offsets are record counts.

    ``mode`` is ``"frozen"``, ``"restoring"`` or ``"current"``; ``offset0`` is the offset at
    ``t0``. A restoring store reaches ``min(end(t), offset0 + rate × (t − t0) / 1000)``.
    """

    __slots__ = ("mode", "offset0", "t0")

    def __init__(self, offset0: int, t0: int, mode: str = "frozen") -> None:
        self.mode = mode
        self.offset0 = offset0
        self.t0 = t0

    def offset(self, now_ms: int, end: int, rate: int) -> int:
        """The offset at ``now_ms`` given the changelog ``end`` then and the restore ``rate``."""
        if self.mode == "current":
            return end
        if self.mode == "restoring":
            return min(end, self.offset0 + (rate * (now_ms - self.t0)) // 1000)
        return min(self.offset0, end)

    def rebase(self, now_ms: int, end: int, rate: int, mode: str) -> None:
        """Switch to ``mode`` from the offset reached at ``now_ms``."""
        self.offset0 = self.offset(now_ms, end, rate)
        self.t0 = now_ms
        self.mode = mode

    def copy(self) -> StoreState:
        return StoreState(self.offset0, self.t0, self.mode)


def catch_up_ms(
    topology: StreamsTopology, task: TaskId, store: StoreState, now_ms: int, rate: int, lag: int
) -> int | None:
    """Earliest virtual time ≥ ``now_ms`` at which a restoring ``store`` is at most ``lag``
    records behind the end (``None`` if it never gets there: restore rate ≤ append rate).

    The continuous solution is rounded up with a margin of two records, so the integer
    offsets of :meth:`StoreState.offset` are within ``lag`` at the returned time.
    """
    end_now = topology.end_offset(task, now_ms)
    here = store.offset(now_ms, end_now, rate)
    if end_now - here <= lag:
        return now_ms
    growth = topology.changelog_rate(task)
    if rate <= growth:
        return None
    # lag(t) ≈ (end_now - here) - (rate - growth) * (t - now) / 1000
    need = end_now - here - lag + 2
    dt = -(-need * 1000 // (rate - growth))
    return now_ms + dt


# ---------------------------------------------------------------------------------------------
# Consumer protocol envelope


def with_threads(user_data: bytes, threads: int | None) -> bytes:
    """The Subscription user data a Streams member sends: its SubscriptionInfo bytes followed,
    when ``threads`` is given, by groupsim's trailer ``INT32 num.stream.threads`` + ``b"GSTH"``.

    groupsim runs one group member per Streams client (not one per stream thread), so the
    leader cannot count a client's consumers to learn its capacity as Kafka does; the trailer
    carries it instead. Kafka's ``SubscriptionInfo.decode`` ignores trailing bytes. The envelope
    around it is :class:`protocol.consumer_codec.Subscription`, written at
    :data:`CONSUMER_PROTOCOL_VERSION`.
    """
    if threads is None:
        return user_data
    tw = Writer()
    tw.int32(threads, "threads")
    return user_data + tw.getvalue() + THREADS_TRAILER


def split_threads(user_data: bytes | None) -> tuple[bytes, int | None]:
    """Inverse of :func:`with_threads`: ``(SubscriptionInfo bytes, threads)``, ``threads``
    ``None`` when the user data has no trailer (a real Kafka client's); null user data reads
    as empty."""
    user = user_data or b""
    if len(user) >= 8 and user[-4:] == THREADS_TRAILER:
        return user[:-8], Reader(user, len(user) - 8).int32("threads")
    return user, None


# ---------------------------------------------------------------------------------------------
# Process ids


def process_uuid(label: str) -> uuid.UUID:
    """``PID_<n>`` → ``UUID(0, n)``; a UUID string → that UUID.

    Raises:
        ValueError: any other label.
    """
    if label.startswith("PID_") and label[4:].isdigit():
        return uuid.UUID(int=int(label[4:]))
    return uuid.UUID(label)


def process_label(pid: uuid.UUID) -> str:
    """Inverse of :func:`process_uuid`: ``UUID(0, n)`` → ``PID_<n>``, else the UUID string."""
    if pid.int >> 64 == 0:
        return f"PID_{pid.int}"
    return str(pid)


def _to_task(t: StreamsTaskId) -> TaskId:
    return TaskId(t.subtopology, t.partition)


def _to_wire(t: TaskId) -> StreamsTaskId:
    return StreamsTaskId(t.subtopology, t.partition)


def subscription_user_data(
    process_id: uuid.UUID,
    offset_sums: Mapping[TaskId, int],
    client_tags: Mapping[str, str],
    unique_field: int,
    version: int = LATEST_SUPPORTED_VERSION,
    latest_supported_version: int = LATEST_SUPPORTED_VERSION,
) -> bytes:
    """A member's SubscriptionInfo bytes (version ``version``, offset sums from v7; client tags
    only from v11), announcing ``latest_supported_version``."""
    info = StreamsSubscription(
        version=LATEST_SUPPORTED_VERSION,
        latest_supported_version=latest_supported_version,
        process_id=process_id,
        task_offset_sums={_to_wire(t): s for t, s in offset_sums.items()},
        unique_field=unique_field,
        client_tags=dict(client_tags),
    )
    return encode_subscription(info, version)


def read_assignment(data: bytes) -> tuple[consumer_codec.Assignment, StreamsAssignment]:
    """Decode a member's SyncGroup assignment: the envelope
    (:func:`protocol.consumer_codec.decode_assignment`) and its AssignmentInfo (null user data
    reads as empty).

    Raises:
        DecodeError: unreadable bytes.
    """
    consumer = consumer_codec.decode_assignment(data)
    return consumer, decode_assignment(consumer.user_data or b"")


def wire_task(t: StreamsTaskId) -> TaskId:
    """A decoded task id as the assignors' :class:`TaskId`."""
    return _to_task(t)
