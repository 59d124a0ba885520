"""The event-log record kinds only plain consumer groups write (docs/event-log.md, "Consumer
groups"; emitted by ``members/consumer.py``), and ``poll_timeout`` and ``join_timeout``, which
every member's group client writes (the KafkaConsumer inside a Streams client or a Connect
worker too; ``members/group_client.py``). Shared kinds are in :mod:`.kinds`. Partitions
are ``"<topic>-<partition>"`` labels (``TopicPartition.toString``)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from scenarios.eventlog.kinds import _Part, _Rec

__all__ = [
    "ConsumerAssignment",
    "ConsumerAssignor",
    "ConsumerAssignorInputs",
    "ConsumerAssignorMember",
    "PartitionsAdded",
    "PartitionsLost",
    "PartitionsRevoked",
    "PollStall",
    "PollTimeout",
    "JoinTimeout",
    "SubscriptionChanged",
]


class ConsumerAssignorMember(_Part, kw_only=True):
    """One JoinGroup member as the leader read it: ``id``, ``instance``
    (``group.instance.id``, KIP-345) and ``metadata``, the base64 bytes of its subscription
    for the chosen protocol (``ConsumerProtocolSubscription``: topics, assignor user data,
    owned partitions, generation, rack)."""

    id: str
    instance: str | None
    metadata: str


class ConsumerAssignorInputs(_Part, kw_only=True):
    """Everything a consumer leader's assignor read besides its own state (what
    ``groupsim check --referee kafka`` replays through Kafka's
    ``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)``): the ``members`` in
    JoinGroup order and, per subscribed topic of the leader's metadata, its partitions'
    replica racks (``topics``: topic → one list of racks, ``null`` for a broker without
    ``broker.rack``, per partition)."""

    members: list[ConsumerAssignorMember]
    topics: dict[str, list[list[str | None]]]


class ConsumerAssignor(_Rec, tag="consumer_assignor", kw_only=True):
    """The leader ran the chosen assignor (``ConsumerCoordinator.onLeaderElected``):
    ``assigned`` by member id; ``inputs`` what it read (for the Kafka referee,
    scenarios/referee/consumer.py)."""

    generation: int
    assignor: str
    assigned: dict[str, list[str]]
    # the leader's inputs, for the Kafka referee (scenarios/referee)
    inputs: ConsumerAssignorInputs | UnsetType = UNSET
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


class PollTimeout(_Rec, tag="poll_timeout", kw_only=True):
    """The member's poll timer expired (KIP-62: ``Heartbeat#pollTimeoutExpired`` in
    ``AbstractCoordinator.HeartbeatThread``): no ``poll()`` since ``last_poll_ms`` (virtual
    ms) for ``max_poll_interval_ms`` (the consumer's ``max.poll.interval.ms``, Connect's
    ``rebalance.timeout.ms``). ``in_group``: the member had a member id and was joining or
    joined (``maybeLeaveGroup``'s test); ``static``: it has a ``group.instance.id``. A dynamic
    member in the group then logs ``leave_group`` (``poll timeout expired``) in the same ms;
    a static one sends none (KIP-345)."""

    last_poll_ms: int
    max_poll_interval_ms: int
    in_group: bool
    static: bool
    member: str


class JoinTimeout(_Rec, tag="join_timeout", kw_only=True):
    """The member's JoinGroup sent at ``sent_ms`` went unanswered for its request timeout
    (``AbstractCoordinator#sendJoinGroupRequest``: ``max(request_timeout_ms,
    rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE)``, KIP-266; virtual ms); the member
    then treats the coordinator as lost (``coordinator_unknown`` ``request timed out``)."""

    sent_ms: int
    rebalance_timeout_ms: int
    request_timeout_ms: int
    member: str


class SubscriptionChanged(_Rec, tag="subscription_changed", kw_only=True):
    """The consumer's application called ``subscribe`` with ``topics`` (sorted): the consumer
    rejoins (``ConsumerCoordinator.rejoinNeededOrPending``, "subscription has changed")."""

    topics: list[str]
    member: str


class PartitionsAdded(_Rec, tag="partitions_added", kw_only=True):
    """An ``add_partitions`` step: ``topic`` has ``partitions`` partitions from now on
    (``Admin#createPartitions``); every running consumer's metadata sees it at once."""

    topic: str
    partitions: int
