"""The values of Kafka Streams' consumer-protocol user data, shared by both messages.

A Streams member puts a *SubscriptionInfo* in the ``userData`` of its consumer subscription
(:mod:`protocol.streams_subscription`) and the leader answers each member with an
*AssignmentInfo* (:mod:`protocol.streams_assignment`). This module holds what both speak of:
Kafka's ``TaskId`` (:class:`StreamsTaskId`), ``HostInfo``, ``AssignorError``, the decoded
messages (:class:`StreamsSubscription`, Kafka ``SubscriptionInfo``; :class:`StreamsAssignment`,
Kafka ``AssignmentInfo``), the offset-sum sentinels (``Task.LATEST_OFFSET``,
``SubscriptionInfo.UNKNOWN_OFFSET_SUM``) and the conversion between a v1-6 member's task sets
and a v7+ member's offset sums. Versions are in :mod:`protocol.streams_versions`.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import msgspec

from protocol.primitives import INT64_MAX, EncodeError
from protocol.streams_versions import (
    LATEST_SUPPORTED_VERSION,
    MIN_VERSION_OFFSET_SUM_SUBSCRIPTION,
)
from protocol.topic_partitions import TopicPartition

__all__ = [
    "LATEST_OFFSET",
    "UNKNOWN_OFFSET_SUM",
    "NO_NEXT_REBALANCE",
    "AssignorError",
    "StreamsTaskId",
    "HostInfo",
    "StreamsSubscription",
    "StreamsAssignment",
    "task_offset_sums_from_sets",
    "tasks_from_offset_sums",
    "to_uuid",
]

#: ``Task.LATEST_OFFSET``: offset sum of a task the client ran as active (= "prev task").
LATEST_OFFSET = -2
#: ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``: offset sum of a standby reported by a v1-6 client.
UNKNOWN_OFFSET_SUM = -3
#: ``AssignmentInfo``'s default ``nextRebalanceMs`` (``Long.MAX_VALUE``): no follow-up scheduled.
NO_NEXT_REBALANCE = INT64_MAX


class AssignorError(enum.IntEnum):
    """Kafka ``AssignorError``: the ``error_code`` of assignments (v4+) and subscriptions (v9+)."""

    NONE = 0
    INCOMPLETE_SOURCE_TOPIC_METADATA = 1
    VERSION_PROBING = 2  # no longer sent by Kafka; kept for rolling upgrades from old versions
    ASSIGNMENT_ERROR = 3
    SHUTDOWN_REQUESTED = 4


# ----------------------------------------------------------------------------------------------
# Value types


class StreamsTaskId(NamedTuple):
    """Kafka ``TaskId``: ``(subtopology, partition, topology)``; written ``"0_1"``.

    ``topology`` is the named topology (wire v10+ only) or ``None``; an empty name means none,
    as in Kafka's ``TaskId`` constructor. groupsim itself uses no named topologies.
    """

    subtopology: int
    partition: int
    topology: str | None = None

    def __str__(self) -> str:
        base = f"{self.subtopology}_{self.partition}"
        return f"{self.topology}_{base}" if self.topology else base

    @classmethod
    def parse(cls, text: str) -> StreamsTaskId:
        """``"<subtopology>_<partition>"`` or ``"<topology>_<subtopology>_<partition>"``.

        Raises:
            ValueError: any other shape (``TaskId.parse`` throws ``TaskIdFormatException``).
        """
        parts = text.split("_")
        try:
            if len(parts) == 2:
                return cls(int(parts[0]), int(parts[1]))
            if len(parts) == 3 and parts[0]:
                return cls(int(parts[1]), int(parts[2]), parts[0])
        except ValueError:
            pass
        raise ValueError(f"task id {text!r} is not '<subtopology>_<partition>'")


class HostInfo(NamedTuple):
    """Kafka ``HostInfo``: a member's ``application.server`` endpoint."""

    host: str
    port: int


def to_uuid(value: uuid.UUID | int) -> uuid.UUID:
    """A process id as a ``uuid.UUID`` (Kafka's ``processId`` is a ``java.util.UUID``).

    Raises:
        EncodeError: neither a ``uuid.UUID`` nor an ``int`` in ``[0, 2**128)``.
    """
    if isinstance(value, uuid.UUID):
        return value
    if type(value) is not int or not 0 <= value < 1 << 128:
        raise EncodeError(
            "process_id", f"expected a uuid.UUID or an int in [0, 2^128), got {value!r}"
        )
    return uuid.UUID(int=value)


class StreamsSubscription(msgspec.Struct, frozen=True):
    """A Streams member's subscription user data (Kafka ``SubscriptionInfo``).

    Attributes:
        version: the header, the version this message is encoded with (1-11; above 11 only
            from :func:`decode_subscription`, a future subscription).
        latest_supported_version: the newest version the member understands; -1 (UNKNOWN) for
            v1/v2, which do not carry it.
        process_id: the ``KafkaStreams`` instance id; an ``int`` is turned into the
            ``uuid.UUID`` with that 128-bit value.
        prev_tasks / standby_tasks: v1-6 only: tasks the client ran as active / kept state
            for (Kafka sets; here tuples in wire order).
        user_endpoint: ``application.server`` (``host:port``), v2+, or ``None``.
        task_offset_sums: v7+ only: task → sum of its changelog offsets the client holds
            (-2 = ran it as active); v7-9 carry no named topologies. Do not mutate.
        unique_field: v8+, an int8 the member bumps on every subscription.
        error_code: v9+, an :class:`AssignorError` code (4 = shutdown requested).
        client_tags: v11+, ``client.tag.*`` key → value (KIP-708). Do not mutate.

    :meth:`offset_sums`, :meth:`prev_active_tasks` and :meth:`prev_standby_tasks` give the
    version-independent view Kafka's ``taskOffsetSums()`` / ``prevTasks()`` /
    ``standbyTasks()`` give.

    Raises:
        EncodeError: (on construction) an ``int`` process id outside ``[0, 2**128)``.
    """

    version: int
    latest_supported_version: int
    process_id: uuid.UUID | int
    prev_tasks: tuple[StreamsTaskId, ...] = ()
    standby_tasks: tuple[StreamsTaskId, ...] = ()
    user_endpoint: str | None = None
    task_offset_sums: dict[StreamsTaskId, int] = {}
    unique_field: int = 0
    error_code: int = 0
    client_tags: dict[str, str] = {}

    def __post_init__(self) -> None:
        if not isinstance(self.process_id, uuid.UUID):
            msgspec.structs.force_setattr(self, "process_id", to_uuid(self.process_id))

    @property
    def is_future(self) -> bool:
        """True for a version this codec cannot read beyond its first 8 bytes (> 11)."""
        return self.version > LATEST_SUPPORTED_VERSION

    def offset_sums(self) -> dict[StreamsTaskId, int]:
        """Kafka ``SubscriptionInfo.taskOffsetSums()``: task → offset sum for any version.

        v7+: :attr:`task_offset_sums`. v1-6: every prev task -2 (``LATEST_OFFSET``), then every
        standby task -3 (``UNKNOWN_OFFSET_SUM``) — a task in both reads -3, as in Kafka.
        """
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return dict(self.task_offset_sums)
        return task_offset_sums_from_sets(self.prev_tasks, self.standby_tasks)

    def prev_active_tasks(self) -> frozenset[StreamsTaskId]:
        """Kafka ``prevTasks()``: tasks whose offset sum is -2 (v1-6: :attr:`prev_tasks`)."""
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return tasks_from_offset_sums(self.task_offset_sums)[0]
        return frozenset(self.prev_tasks)

    def prev_standby_tasks(self) -> frozenset[StreamsTaskId]:
        """Kafka ``standbyTasks()``: tasks with any other sum (v1-6: :attr:`standby_tasks`)."""
        if self.version >= MIN_VERSION_OFFSET_SUM_SUBSCRIPTION:
            return tasks_from_offset_sums(self.task_offset_sums)[1]
        return frozenset(self.standby_tasks)


class StreamsAssignment(msgspec.Struct, frozen=True):
    """The leader's answer to one Streams consumer (Kafka ``AssignmentInfo``).

    Attributes:
        version: the header (1-11): the lowest version any member subscribed with.
        commonly_supported_version: v3+: the lowest ``latest_supported_version`` of the group;
            -1 (UNKNOWN) when decoded from v1/v2.
        active_tasks: one entry per assigned partition, in the order of the sorted partition
            list of the consumer assignment (a task with two partitions appears twice).
        standby_tasks: standby task → its partitions (wire order, duplicates kept).
        partitions_by_host: v2+: every member's endpoint → its active partitions (empty when
            members set no ``application.server``, as in groupsim).
        standby_partitions_by_host: v6+: the same for standby partitions.
        error_code: v4+: :class:`AssignorError` code; non-zero means "no assignment, act on
            the error".
        next_rebalance_ms: v7+: wall-clock ms of the requested follow-up (probing) rebalance,
            0 = rejoin at once, ``NO_NEXT_REBALANCE`` (Long.MAX_VALUE) = none.
    """

    version: int
    commonly_supported_version: int
    active_tasks: tuple[StreamsTaskId, ...] = ()
    standby_tasks: dict[StreamsTaskId, tuple[TopicPartition, ...]] = {}
    partitions_by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    standby_partitions_by_host: dict[HostInfo, tuple[TopicPartition, ...]] = {}
    error_code: int = 0
    next_rebalance_ms: int = NO_NEXT_REBALANCE


def task_offset_sums_from_sets(
    prev_tasks: Iterable[StreamsTaskId], standby_tasks: Iterable[StreamsTaskId]
) -> dict[StreamsTaskId, int]:
    """Kafka's view of a v1-6 subscription: prev tasks → -2, then standby tasks → -3."""
    out = dict.fromkeys(prev_tasks, LATEST_OFFSET)
    out.update(dict.fromkeys(standby_tasks, UNKNOWN_OFFSET_SUM))
    return out


def tasks_from_offset_sums(
    offset_sums: Mapping[StreamsTaskId, int],
) -> tuple[frozenset[StreamsTaskId], frozenset[StreamsTaskId]]:
    """``(active, standby)``: tasks whose sum is -2, and all others
    (``SubscriptionInfo.getActiveTasksFromTaskOffsetSumMap`` / ``getStandby...``)."""
    active = frozenset(t for t, s in offset_sums.items() if s == LATEST_OFFSET)
    return active, frozenset(t for t in offset_sums if t not in active)
