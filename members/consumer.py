"""A plain Kafka consumer (``KafkaConsumer`` with a ``group.id``) as a pure group member.

What one :class:`ConsumerClient` plays, and the Kafka classes followed (Kafka 4.0, the classic
group protocol):

* the group client (``AbstractCoordinator``: :class:`members.group_client.GroupClient`);
* ``ConsumerCoordinator``:

  - **rebalance protocol** — the highest protocol every configured assignor supports
    (``partition.assignment.strategy``; ``range``, ``roundrobin`` and ``sticky`` are EAGER
    only, ``cooperative-sticky`` is COOPERATIVE and EAGER), fixed for the consumer's life;
  - **JoinGroup metadata** — one protocol per configured assignor, in preference order, each
    a ``ConsumerProtocolSubscription`` v3 (topics, the assignor's user data, owned partitions,
    generation, ``client.rack``); the coordinator picks the protocol by vote;
  - **onJoinPrepare** — EAGER revokes every owned partition (``onPartitionsRevoked``) before
    the JoinGroup; COOPERATIVE keeps them;
  - **onLeaderElected** — the leader decodes every subscription and runs the chosen
    assignor (:mod:`members.assignors.consumer`; a sticky assignor instance keeps its
    ``maxGeneration`` across rebalances, as the leader's Java instance does);
  - **onJoinComplete** — EAGER: take the assignment (``onPartitionsAssigned``). COOPERATIVE
    (KIP-429): revoke only what the assignment took away, add what is new, and rejoin at once
    when something was revoked: the follow-up rebalance hands the revoked partitions over;
  - **onPartitionsLost** — fenced (unknown member id, illegal generation): every owned
    partition is lost, not revoked;
  - **close** — revoke everything (``onLeavePrepare``) and send LeaveGroup, unless the member
    is static (KIP-345 ``group.instance.id``): static members leave by session timeout;
  - **a subscription change** (``subscribe(topics)`` during the run: :class:`Subscribe`) — the
    next ``poll()`` finds the joined subscription differs (``rejoinNeededOrPending``:
    "subscription has changed") and rejoins; COOPERATIVE first revokes the partitions of
    topics no longer subscribed (``onJoinPrepare``); an assignment that does not match the
    current subscription (it changed while the rebalance ran) is not taken: the consumer
    rejoins (``onJoinComplete``, ``checkAssignmentMatchedSubscription``);
  - **new topic metadata** (partitions added to a subscribed topic during the run:
    :class:`MetadataUpdate`) — only the leader watches it (``onJoinComplete`` clears a
    follower's ``assignmentSnapshot``): a leader whose metadata no longer matches the
    snapshot taken when it assigned (``rejoinNeededOrPending``: "cached metadata has changed",
    ``MetadataSnapshot#matches``) rejoins, so the group is assigned the new partitions;
  - **fenced** (KIP-345: FENCED_INSTANCE_ID on JoinGroup, SyncGroup or Heartbeat, another
    process took over the ``group.instance.id``) — ``FencedInstanceIdException`` is fatal:
    the application closes the consumer, every owned partition is lost
    (:meth:`ConsumerClient.on_fenced`);
  - **a stalled poll loop** (KIP-62, a ``slow`` fault: :class:`members.group_client.PollStall`)
    — the application does not call ``poll()`` for ``stall_ms``: no JoinGroup goes out; the
    heartbeat thread goes on until ``max.poll.interval.ms`` passes, then it leaves the group
    (``AbstractCoordinator``'s ``HeartbeatThread``: ``maybeLeaveGroup("consumer poll timeout
    has expired")``, LeaveGroup for a dynamic member only) and the next ``poll()`` finds the
    generation gone: ``onPartitionsLost``, then a new JoinGroup;

* the assignors' member side: ``StickyAssignor.onAssignment`` (its user data carries the last
  assignment and generation) and ``CooperativeStickyAssignor.onAssignment`` (generation).

Sans-IO: every entry point takes ``now_ms`` (virtual ms) and returns effects
(:mod:`protocol.effects`). Records it logs: ``member_start``, ``consumer_assignor`` (leader),
``consumer_assignment``, ``partitions_revoked``, ``partitions_lost``, ``poll_stall``,
``subscription_changed``, ``member_stop``
(docs/event-log.md), besides the group client's.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from members.assignors.consumer import (
    ClusterTopics,
    ConsumerMember,
    StickyAssignmentError,
    assign_range,
    assign_roundrobin,
)
from members.assignors.consumer.model import decode_members
from members.assignors.consumer.sticky import (
    COOPERATIVE_STICKY,
    STICKY,
    cooperative_adjust,
    sticky_assignment,
)
from members.assignors.consumer.sticky_data import (
    DEFAULT_GENERATION,
    cooperative_member_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    sticky_member_data,
)
from members.group_client import GroupClient
from members.member_state import GroupTimeouts, MemberState, PollStall
from protocol.consumer_batch import encode_assignments
from protocol.consumer_codec import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    encode_subscription,
    partition_labels,
)
from protocol.effects import Effect
from protocol.group import JoinGroupResponse
from protocol.kafka_configs import CONSUMER_DEFAULTS
from protocol.primitives import DecodeError

__all__ = [
    "ConsumerClient",
    "Subscribe",
    "MetadataUpdate",
    "ConsumerClientConfig",
    "RebalanceProtocol",
    "rebalance_protocol",
    "UnknownAssignorError",
    "SUPPORTED_PROTOCOLS",
]

#: The consumer's ``request.timeout.ms`` default.
REQUEST_TIMEOUT_MS = 30_000


class RebalanceProtocol(enum.IntEnum):
    """``ConsumerPartitionAssignor.RebalanceProtocol`` (ordered: COOPERATIVE is the higher)."""

    EAGER = 0
    COOPERATIVE = 1


#: ``ConsumerPartitionAssignor.supportedProtocols()`` per assignor name.
SUPPORTED_PROTOCOLS: Mapping[str, frozenset[RebalanceProtocol]] = {
    "range": frozenset({RebalanceProtocol.EAGER}),
    "roundrobin": frozenset({RebalanceProtocol.EAGER}),
    STICKY: frozenset({RebalanceProtocol.EAGER}),
    COOPERATIVE_STICKY: frozenset({RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE}),
}


class UnknownAssignorError(ValueError):
    """A ``partition.assignment.strategy`` name groupsim has no assignor for (Kafka: a
    ``KafkaException`` from the consumer's constructor)."""


def rebalance_protocol(strategies: Sequence[str]) -> RebalanceProtocol:
    """``ConsumerCoordinator``'s constructor: the highest protocol every assignor supports.

    Raises:
        UnknownAssignorError: an unknown name, or an empty list.
        ValueError: the assignors share no protocol (Kafka: ``IllegalArgumentException``).
    """
    if not strategies:
        raise UnknownAssignorError("partition.assignment.strategy is empty")
    common: set[RebalanceProtocol] | None = None
    for name in strategies:
        if name not in SUPPORTED_PROTOCOLS:
            raise UnknownAssignorError(f"unknown partition.assignment.strategy {name!r}")
        supported = SUPPORTED_PROTOCOLS[name]
        common = set(supported) if common is None else common & supported
    if not common:
        raise ValueError(f"the assignors {list(strategies)} support no common protocol")
    return max(common)


class Subscribe(msgspec.Struct, frozen=True):
    """The application calls ``subscribe(topics)`` again with another topic list."""

    topics: tuple[str, ...]


class MetadataUpdate(msgspec.Struct, frozen=True):
    """The consumer's metadata refresh finds the cluster's topics changed (``Metadata.update``;
    ``metadataSnapshot`` is rebuilt at the next ``poll()``, ``maybeUpdateSubscriptionMetadata``):
    ``cluster`` is the whole new topic metadata (topic → partitions' replica racks)."""

    cluster: ClusterTopics


@dataclass(frozen=True)
class ConsumerClientConfig:
    """One consumer's settings (Kafka names in scenario files; defaults are Kafka's).

    Attributes:
        topics: the subscription (``subscribe(topics)``).
        strategies: ``partition.assignment.strategy`` names in preference order (Kafka 4.0's
            default is ``[range, cooperative-sticky]``).
        group_instance_id: ``group.instance.id`` (KIP-345), or ``None`` for a dynamic member.
        client_rack: ``client.rack`` (KIP-881), or ``None``.
        session_timeout_ms / heartbeat_interval_ms / max_poll_interval_ms: virtual ms
            (defaults: :class:`protocol.kafka_configs.ConsumerGroupSettings`); the rebalance
            timeout is ``max.poll.interval.ms``.
    """

    topics: tuple[str, ...]
    strategies: tuple[str, ...] = ("range", COOPERATIVE_STICKY)
    group_instance_id: str | None = None
    client_rack: str | None = None
    session_timeout_ms: int = CONSUMER_DEFAULTS.session_timeout_ms
    heartbeat_interval_ms: int = CONSUMER_DEFAULTS.heartbeat_interval_ms
    max_poll_interval_ms: int = CONSUMER_DEFAULTS.max_poll_interval_ms


class ConsumerClient(GroupClient):
    """A ``KafkaConsumer`` in a consumer group.

    Args:
        name: its ``client.id`` and network address (with ``address``).
        config: its settings.
        cluster: the topic metadata the leader assigns from (topic → partitions' replica
            racks) as this consumer last saw it; a :class:`MetadataUpdate` replaces it.
        group_id: ``group.id``.
        address: where responses reach this incarnation (default ``name``).
        log_heartbeats: log heartbeat RPCs.

    Attributes:
        protocol: the rebalance protocol, from :func:`rebalance_protocol`.
        owned: the partitions it owns now (``SubscriptionState.assignedPartitions``), in
            assignment order.

    Raises:
        UnknownAssignorError, ValueError: see :func:`rebalance_protocol`.
    """

    ASSIGNOR_ERRORS = (DecodeError, StickyAssignmentError)
    #: the timer that ends a poll-loop stall (silent: not logged as ``timer_fired``)
    SILENT_TIMER_PREFIXES = ("poll-loop",)

    def __init__(
        self,
        name: str,
        config: ConsumerClientConfig,
        cluster: ClusterTopics,
        *,
        group_id: str,
        address: str | None = None,
        log_heartbeats: bool = False,
    ) -> None:
        timeouts = GroupTimeouts(
            config.session_timeout_ms,
            config.heartbeat_interval_ms,
            config.max_poll_interval_ms,
            REQUEST_TIMEOUT_MS,
        )
        super().__init__(
            name, group_id, PROTOCOL_TYPE, timeouts, address=address, log_heartbeats=log_heartbeats
        )
        self.config = config
        self.cluster = cluster
        self.group_instance_id = config.group_instance_id
        self.protocol = rebalance_protocol(config.strategies)
        self.owned: list[TopicPartition] = []
        #: the latest SyncGroup assignment (``owned`` can differ while revocations run)
        self._last_assigned: list[TopicPartition] = []
        # StickyAssignor's member state (onAssignment): last assignment and generation
        self._sticky_partitions: list[TopicPartition] | None = None
        self._sticky_generation = DEFAULT_GENERATION
        # CooperativeStickyAssignor's member state (onAssignment)
        self._cooperative_generation = DEFAULT_GENERATION
        # the leader's sticky assignor instances: maxGeneration by assignor name
        self._max_generation: dict[str, int] = {}
        self._stalled = False
        self._lost_pending: str | None = None
        #: FENCED_INSTANCE_ID heard while the poll loop was stalled: thrown when it ends
        self._fenced_pending = False
        #: ``assignmentSnapshot``: the subscribed topics' metadata when this consumer last
        #: assigned as the leader (``None``: not the leader)
        self._assignment_snapshot: dict[str, object] | None = None

    # ------------------------------------------------------------------ entry points

    def start(self, now_ms: int) -> list[Effect]:
        """``KafkaConsumer.subscribe`` + first ``poll``: log the settings, join."""
        c = self.config
        # keys in the order of the log's MemberConfig record, so a log re-encodes byte for byte
        summary: dict[str, object] = {}
        if c.client_rack is not None:
            summary["client.rack"] = c.client_rack
        if c.group_instance_id is not None:
            summary["group.instance.id"] = c.group_instance_id
        summary["partition.assignment.strategy"] = list(c.strategies)
        self._log("member_start", config=summary)
        return super().start(now_ms)

    def shutdown(self, now_ms: int) -> list[Effect]:
        """``KafkaConsumer.close``: ``onLeavePrepare`` revokes every owned partition (lost
        instead when the generation is gone), then a dynamic member sends LeaveGroup."""
        if self.state is MemberState.STOPPED:
            return []
        if self.generation < 0 or not self.member_id:
            self._lose("the consumer is being closed without a generation")
        else:
            self._revoke(list(self.owned), "the consumer is being closed")
        if self.group_instance_id is None and self.member_id and self.joined_for_leave():
            self.leave_group("shutdown", "the consumer is being closed")
        self._log("member_stop")
        self._stop_everything()
        return self._take()

    def on_crash(self, now_ms: int) -> None:
        self.owned = []

    def on_message(self, message: object, now_ms: int) -> None:
        if isinstance(message, PollStall):
            self._stall(message.stall_ms, now_ms)
        elif isinstance(message, Subscribe):
            self._subscribe(message.topics, now_ms)
        elif isinstance(message, MetadataUpdate):
            self.cluster = message.cluster
            self._check_metadata(now_ms)

    def _check_metadata(self, now_ms: int) -> None:
        """``rejoinNeededOrPending``'s first test: the leader rejoins when the metadata of the
        topics it assigned differs from what it assigned from (``MetadataSnapshot#matches``:
        the partitions and their racks per topic)."""
        snapshot = self._assignment_snapshot
        if snapshot is None:
            return
        if any(self.cluster.get(topic) != seen for topic, seen in snapshot.items()):
            self.request_rejoin("cached metadata has changed", now_ms)

    def _metadata_snapshot(self, topics: Iterable[str]) -> dict[str, object]:
        """``MetadataSnapshot`` of ``topics``: each topic's partitions' replica racks as this
        consumer's metadata has them now (``None`` for a topic it does not know)."""
        return {t: self.cluster.get(t) for t in sorted(topics)}

    def _subscribe(self, topics: tuple[str, ...], now_ms: int) -> None:
        """``KafkaConsumer.subscribe``: a new topic list; the next poll rejoins (the joined
        subscription differs, ``ConsumerCoordinator.rejoinNeededOrPending``)."""
        topics = tuple(sorted(set(topics)))
        if topics == tuple(sorted(self.config.topics)):
            return
        self.config = dataclasses.replace(self.config, topics=topics)
        self._log("subscription_changed", topics=list(topics))
        self.request_rejoin("subscription has changed", now_ms)

    def _unsubscribed(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        subscribed = set(self.config.topics)
        return [tp for tp in partitions if tp.topic not in subscribed]

    def on_silent_timer(self, key: str, now_ms: int) -> None:
        if key == "poll-loop":
            self._end_stall(now_ms)

    def poll_blocked(self) -> bool:
        return self._stalled

    def extra_timer_keys(self) -> tuple[str, ...]:
        return ("poll-loop",)

    def _stall(self, stall_ms: int, now_ms: int) -> None:
        """A fault: the application's poll loop blocks for ``stall_ms``; past
        ``max.poll.interval.ms`` the poll timer expires and the heartbeat thread, if it runs,
        leaves (:meth:`GroupClient._poll_timer_due`)."""
        self._log("poll_stall", stall_ms=stall_ms)
        self._stalled = True
        self._set("poll-loop", now_ms + stall_ms)
        self.start_poll_timer(now_ms)

    def _end_stall(self, now_ms: int) -> None:
        """``poll()`` runs again: what the generation reset lost goes (``onPartitionsLost``),
        then the answers held during the stall are handled and the member rejoins if the
        group needs it (:meth:`GroupClient.poll_resumed`)."""
        self._stalled = False
        self.stop_poll_timer()
        if self._fenced_pending:
            self.on_fenced(now_ms)
            return
        if self._lost_pending is not None:
            self._lose(self._lost_pending)
            self._lost_pending = None
        self.poll_resumed(now_ms)

    def on_fatal(self, now_ms: int) -> None:
        self.owned = []

    def on_fenced(self, now_ms: int) -> None:
        """``FencedInstanceIdException`` (KIP-345: another process took over this consumer's
        ``group.instance.id``) is fatal: ``poll()`` throws it and the application closes the
        consumer. ``close`` runs ``onLeavePrepare``, which finds the generation reset (a
        Heartbeat's handler did that) or a rebalance in progress (JoinGroup, SyncGroup), so
        every owned partition is lost, not revoked (``partitions_lost``); a static member
        sends no LeaveGroup. A fencing heard by the heartbeat thread while the poll loop is
        stalled is thrown by the next ``poll()``, when the stall ends: until then the
        consumer still holds its partitions (the zombie window)."""
        if self._stalled:
            self._fenced_pending = True
            self._cancel("poll")  # the heartbeat thread has stopped: no poll-timeout leave
            return
        self._lose("FencedInstanceIdException: the consumer is closed")
        super().on_fenced(now_ms)

    def on_partitions_lost(self, reason: str, now_ms: int) -> None:
        if self._stalled:
            # the heartbeat thread only reset the generation; onPartitionsLost runs in the
            # poll thread, in onJoinPrepare of the next poll() (ConsumerCoordinator)
            self._lost_pending = reason
            return
        self._lose(reason)

    # ------------------------------------------------------------------ ConsumerCoordinator

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        """One ``(assignor name, subscription v3)`` per configured assignor."""
        return tuple(
            (name, encode_subscription(self._subscription(name))) for name in self.config.strategies
        )

    def _subscription(self, assignor: str) -> Subscription:
        user: bytes | None = None
        if assignor == STICKY and self._sticky_partitions is not None:
            user = encode_sticky_user_data(self._sticky_partitions, self._sticky_generation)
        elif assignor == COOPERATIVE_STICKY:
            user = encode_cooperative_user_data(self._cooperative_generation)
        return Subscription(
            topics=tuple(sorted(self.config.topics)),
            user_data=user,
            owned_partitions=tuple(self.owned),
            generation_id=self.generation,
            rack_id=self.config.client_rack,
        )

    def on_join_prepare(self, now_ms: int) -> bool:
        """EAGER revokes everything before joining; COOPERATIVE keeps what it owns, but the
        partitions of topics it no longer subscribes to."""
        if self.protocol is RebalanceProtocol.EAGER and self.owned:
            self._revoke(list(self.owned), "eager rebalance: revoke all before JoinGroup")
        elif self.protocol is RebalanceProtocol.COOPERATIVE:
            self._revoke(self._unsubscribed(self.owned), "no longer subscribed")
        return True

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        """``onLeaderElected``: the chosen protocol's assignor over every subscription.

        Raises:
            DecodeError: a member's subscription cannot be read.
            StickyAssignmentError: the sticky assignor fails as Kafka's does.
        """
        name = response.protocol_name or ""
        members = decode_members(
            [(m.member_id, m.group_instance_id, m.metadata) for m in response.members]
        )
        assignment = self._assign(name, members)
        # assignmentSnapshot: what the group subscribes to, as the assignor saw it
        subscribed = {t for m in members for t in m.subscription.topics}
        self._assignment_snapshot = self._metadata_snapshot(subscribed)
        self._log(
            "consumer_assignor",
            generation=self.generation,
            assignor=name,
            assigned={m: partition_labels(p) for m, p in assignment.items()},
            inputs=self._inputs(response, members),
        )
        encoded = encode_assignments([assignment.get(m.member_id, ()) for m in members])
        return tuple(zip([m.member_id for m in members], encoded, strict=True))

    def _inputs(
        self, response: JoinGroupResponse, members: list[ConsumerMember]
    ) -> dict[str, object]:
        """What the assignor read, for the Kafka referee (``ConsumerAssignorInputs``): the
        JoinGroup members with their metadata bytes, and the subscribed topics' racks."""
        subscribed = {t for m in members for t in m.subscription.topics}
        return {
            "members": [
                {
                    "id": m.member_id,
                    "instance": m.group_instance_id,
                    "metadata": base64.b64encode(m.metadata).decode("ascii"),
                }
                for m in response.members
            ],
            "topics": {
                t: [list(replicas) for replicas in self.cluster[t]]
                for t in sorted(subscribed)
                if t in self.cluster
            },
        }

    def _assign(self, name: str, members: list[ConsumerMember]) -> dict[str, list[TopicPartition]]:
        if name == "range":
            return assign_range(members, self.cluster)
        if name == "roundrobin":
            return assign_roundrobin(members, self.cluster)
        if name in (STICKY, COOPERATIVE_STICKY):
            reader = sticky_member_data if name == STICKY else cooperative_member_data
            result = sticky_assignment(
                members, self.cluster, reader, self._max_generation.get(name, DEFAULT_GENERATION)
            )
            self._max_generation[name] = result.max_generation
            if name == STICKY:
                return result.assignment
            return cooperative_adjust(members, result)
        raise StickyAssignmentError(f"the group chose {name!r}, which this member lacks")

    def decode_assignment(self, data: bytes) -> object:
        return decode_assignment(data)

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        """``onJoinComplete``: the assignor's ``onAssignment``, then revoke (COOPERATIVE: what
        was taken away), take the new partitions, and rejoin after a cooperative revocation."""
        assert isinstance(assignment, Assignment)
        if self.leader_id != self.member_id:
            self._assignment_snapshot = None  # only the leader watches the metadata
        elif self._assignment_snapshot is None:
            # KIP-814: a static leader told to skip the assignment takes its snapshot from
            # the metadata it has now (onLeaderElected), of the topics it subscribes to
            self._assignment_snapshot = self._metadata_snapshot(self.config.topics)
        assigned = list(assignment.partitions)
        if self._unsubscribed(assigned):
            # checkAssignmentMatchedSubscription: the subscription changed since the JoinGroup
            self.complete_join()
            self.request_rejoin(
                "received assignment does not match the current subscription", now_ms
            )
            return
        self._last_assigned = assigned
        if protocol_name == STICKY:
            self._sticky_partitions = assigned
            self._sticky_generation = self.generation
        elif protocol_name == COOPERATIVE_STICKY:
            self._cooperative_generation = self.generation
        now = set(assigned)
        before = set(self.owned)
        revoked = [tp for tp in self.owned if tp not in now]
        added = [tp for tp in assigned if tp not in before]
        self.complete_join()
        if revoked:
            self._revoke(revoked, "no longer assigned")
        # what onPartitionsRevoked let go of is gone; the assignment is what it owns now
        self.owned = assigned + [tp for tp in self.owned if tp not in now]
        self._log(
            "consumer_assignment",
            member_id=self.member_id,
            generation=self.generation,
            protocol=protocol_name,
            rebalance_protocol=self.protocol.name,
            leader_id=self.leader_id,
            assigned=partition_labels(assigned),
            added=partition_labels(added),
            revoked=partition_labels(revoked),
            owned=partition_labels(self.owned),
        )
        if revoked and self.protocol is RebalanceProtocol.COOPERATIVE:
            self.request_rejoin("need to revoke partitions and re-join", now_ms)
        self._check_metadata(now_ms)

    # ------------------------------------------------------------------ partitions

    def _revoke(self, partitions: list[TopicPartition], reason: str) -> None:
        """``onPartitionsRevoked``: stop consuming ``partitions`` (commit, close)."""
        if not partitions:
            return
        gone = set(partitions)
        self.owned = [tp for tp in self.owned if tp not in gone]
        self._log(
            "partitions_revoked",
            generation=self.generation,
            partitions=partition_labels(partitions),
            reason=reason,
        )

    def _lose(self, reason: str) -> None:
        """``onPartitionsLost``: every owned partition is gone without a commit."""
        if not self.owned:
            return
        self._log("partitions_lost", partitions=partition_labels(self.owned), reason=reason)
        self.owned = []
