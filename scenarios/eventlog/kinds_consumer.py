"""The event-log record kinds only plain consumer groups write (docs/event-log.md, "Consumer
groups"; emitted by ``members/consumer.py``). Shared kinds are in :mod:`.kinds`. Partitions
are ``"<topic>-<partition>"`` labels (``TopicPartition.toString``)."""

from __future__ import annotations

from scenarios.eventlog.kinds import _Rec

__all__ = [
    "ConsumerAssignment",
    "ConsumerAssignor",
    "PartitionsLost",
    "PartitionsRevoked",
    "PollStall",
    "SubscriptionChanged",
]


class ConsumerAssignor(_Rec, tag="consumer_assignor", kw_only=True):
    """The leader ran the chosen assignor (``ConsumerCoordinator.onLeaderElected``):
    ``assigned`` by member id."""

    generation: int
    assignor: str
    assigned: dict[str, list[str]]
    member: str


class ConsumerAssignment(_Rec, tag="consumer_assignment", kw_only=True):
    """A consumer applied its SyncGroup assignment (``onJoinComplete``): ``assigned`` is what
    the leader gave, ``added``/``revoked`` the difference to what it owned, ``owned`` what it
    owns afterwards; ``rebalance_protocol`` is ``EAGER`` or ``COOPERATIVE``."""

    member_id: str
    generation: int
    protocol: str
    rebalance_protocol: str
    leader_id: str | None
    assigned: list[str]
    added: list[str]
    revoked: list[str]
    owned: list[str]
    member: str


class PartitionsRevoked(_Rec, tag="partitions_revoked", kw_only=True):
    """``onPartitionsRevoked``: the consumer stopped consuming ``partitions``."""

    generation: int
    partitions: list[str]
    reason: str
    member: str


class PartitionsLost(_Rec, tag="partitions_lost", kw_only=True):
    """``onPartitionsLost``: fenced; ``partitions`` are gone without a commit."""

    partitions: list[str]
    reason: str
    member: str


class PollStall(_Rec, tag="poll_stall", kw_only=True):
    """A ``slow`` fault: the consumer's poll loop does not call ``poll()`` for ``stall_ms``
    (virtual ms); past ``max.poll.interval.ms`` its heartbeat thread leaves the group (KIP-62)."""

    stall_ms: int
    member: str


class SubscriptionChanged(_Rec, tag="subscription_changed", kw_only=True):
    """The consumer's application called ``subscribe`` with ``topics`` (sorted): the consumer
    rejoins (``ConsumerCoordinator.rejoinNeededOrPending``, "subscription has changed")."""

    topics: list[str]
    member: str
