"""A port of Kafka's ``GroupMetadataManagerTestContext`` (classic-group part) onto groupsim.

Kafka: ``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/
GroupMetadataManagerTestContext.java`` at 1eb7644349cb07139d6a3c1ad1986979647cac99. The
builder defaults are Kafka's: group ``"group-id"``, client id ``"client"``, protocol type
``"consumer"``, no protocols, session and rebalance timeouts of 500 ms, initial rebalance
delay 3000 ms, min/max session timeout 10 ms / 10 min, JoinGroup version 3 unless the test
asks for a known member id (v4) or skipping the assignment (v9).

Mapping of Kafka's test machinery:

* ``CompletableFuture`` → :class:`~tests.coordinator.harness.Reply` (``done``,
  ``response``). Every request is sent from its own network address, so each parked request
  keeps its own reply slot.
* Errors Kafka's manager throws (``UnknownMemberIdException``...) are the response's error
  code here (the runtime turns them into responses the same way).
* ``MockCoordinatorTimer`` → the harness's timer table. :meth:`KafkaContext.sleep` follows
  ``MockTime.sleep`` + ``MockCoordinatorTimer.poll``: the clock moves to the end first, then
  every due timer fires, by (deadline, arming order), **at the end time** (so a timer re-armed
  while firing counts from the end of the sleep, as in Kafka's tests; the groupsim runtime
  fires each timer at its own deadline).
* Records and append futures: groupsim writes never fail, so an append completes at once.
  Kafka's ``CoordinatorResult.records()`` of a request is :attr:`Reply.records` here (the
  :class:`~coordinator.record.GroupRecord` s written while it was handled), and a fired
  timer's result is an :class:`Expired` with its records; :meth:`KafkaContext.group_record`
  / :meth:`KafkaContext.empty_group_record` build the expected record as Kafka's
  ``GroupCoordinatorRecordHelpers.newGroupMetadataRecord`` / ``newEmptyGroupMetadataRecord``
  do. A write is seen as a new :meth:`~coordinator.group.GroupCoordinator.stored_record`
  object (each classic-group operation writes at most one record, in Kafka too).
* Transcript: every context records what it was asked and what it saw
  (:attr:`KafkaContext.transcript`, JSON-able dicts), so a translated test's request
  sequence can be replayed through Kafka's real coordinator (tests/kafka_oracle/
  test_translated_coordinator.py); :func:`recording` collects the contexts a test made.
* ``group.transitionTo(...)`` / ``prepareRebalance(group)`` / ``createClassicGroup`` are
  test back doors into the coordinator (:meth:`force_state`, :meth:`prepare_rebalance`,
  :meth:`create_group`), as Kafka's tests reach into ``ClassicGroup``.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from coordinator import (
    CoordinatorConfig,
    DescribedGroup,
    GroupRecord,
    GroupRecordMember,
    GroupState,
    rebalance,
)
from coordinator.group import GroupCoordinator, IllegalGroupState
from protocol.effects import CancelTimer, Effect, Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
)
from tests.coordinator.harness import CoordinatorContext, Reply

GROUP_ID = "group-id"
UNKNOWN_MEMBER_ID = ""
E = ErrorCode
S = GroupState

_TOPICS = ("foo", "bar", "baz")


def consumer_subscription(topic: str) -> bytes:
    """``ConsumerProtocol.serializeSubscription(new Subscription(List.of(topic)))``: a
    ``ConsumerProtocolSubscription`` at its highest version, 3 (version INT16, topics
    ARRAY(STRING), user_data NULLABLE_BYTES null, owned_partitions empty, generation_id -1,
    rack_id null). Kafka parses it at join completion of a "consumer" group
    (``ClassicGroup#computeSubscribedTopics``), so the bytes must be real."""
    name = topic.encode()
    return struct.pack(">hih", 3, 1, len(name)) + name + struct.pack(">iiih", -1, 0, -1, -1)


def to_protocols(*names: str) -> tuple[tuple[str, bytes], ...]:
    """``toProtocols``: each protocol's metadata is a subscription to foo, bar, baz in turn."""
    return tuple((name, consumer_subscription(_TOPICS[i % 3])) for i, name in enumerate(names))


def join_request(
    member_id: str = UNKNOWN_MEMBER_ID,
    group_instance_id: str | None = None,
    protocol_type: str = "consumer",
    protocols: tuple[tuple[str, bytes], ...] = (),
    session_timeout_ms: int = 500,
    rebalance_timeout_ms: int = 500,
    group_id: str = GROUP_ID,
) -> JoinGroupRequest:
    """``JoinGroupRequestBuilder`` with Kafka's defaults (``withDefaultProtocolTypeAndProtocols``
    is ``protocols=to_protocols("range")``)."""
    return JoinGroupRequest(
        group_id=group_id,
        member_id=member_id,
        protocol_type=protocol_type,
        protocols=protocols,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        client_id="client",
        group_instance_id=group_instance_id,
    )


def with_(request: Any, **changes: Any) -> Any:
    """Kafka's ``request.setX(...)``: a copy with fields changed."""
    return msgspec.structs.replace(request, **changes)


@dataclass
class Expired:
    """``MockCoordinatorTimer.ExpiredTimeout``: a timer that fired during a sleep and the
    group records its handler wrote (Kafka's ``timeout.result.records()``)."""

    key: str
    records: list[GroupRecord] = field(default_factory=list)


def assert_no_or_empty_result(expired: list[Expired]) -> None:
    """``assertNoOrEmptyResult``: at most one timer fired, and it wrote no record."""
    assert len(expired) <= 1, expired
    assert all(not e.records for e in expired), expired


_recording: list[list[KafkaContext]] = []


@contextlib.contextmanager
def recording() -> Iterator[list[KafkaContext]]:
    """Collect every :class:`KafkaContext` created inside the block (in creation order), to
    read their :attr:`~KafkaContext.transcript` afterwards."""
    made: list[KafkaContext] = []
    _recording.append(made)
    try:
        yield made
    finally:
        _recording.remove(made)


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=lambda v: v.name if hasattr(v, "name") else v)


@dataclass
class RebalanceResult:
    """``RebalanceResult`` of ``staticMembersJoinAndRebalance``."""

    generation_id: int
    leader_id: str
    leader_assignment: bytes
    follower_id: str
    follower_assignment: bytes


@dataclass
class PendingMemberGroupResult:
    """``PendingMemberGroupResult`` of ``setupGroupWithPendingMember``."""

    leader_id: str
    follower_id: str
    pending_member_response: JoinGroupResponse


class KafkaContext(CoordinatorContext):
    """``GroupMetadataManagerTestContext`` for one classic group ``"group-id"``."""

    def __init__(
        self,
        max_size: int | None = None,
        initial_rebalance_delay_ms: int = 3000,
    ) -> None:
        config = CoordinatorConfig(
            initial_rebalance_delay_ms=initial_rebalance_delay_ms,
            min_session_timeout_ms=10,
            max_session_timeout_ms=10 * 60 * 1000,
            **({} if max_size is None else {"max_size": max_size}),
        )
        super().__init__(config, group_id=GROUP_ID)
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.new_member_join_timeout_ms = config.new_member_join_timeout_ms
        self._next_source = 0
        self.written: list[tuple[int, GroupRecord]] = []
        """Every group record written, with the virtual time of the write."""
        self.transcript: list[dict[str, Any]] = []
        """What the test did and saw, in order, as JSON-able dicts with ``op`` and the virtual
        time ``t``. Ops and their fields: ``create_group``; ``force_state`` (``state``);
        ``prepare_rebalance``; ``load`` (``record``); ``unload``; ``describe``
        (``described``); ``request`` (``source``, ``api``, ``request``, and the ``records``
        written or the ``exception`` raised); ``response`` (``dest``, ``api``,
        ``response``); ``timer_set`` (``key``, ``at``); ``timer_cancel`` (``key``);
        ``sleep`` (``ms``; ``t`` is the end time); ``expired`` (``key``, ``records``; one
        per timer fired in that sleep)."""
        for made in _recording:
            made.append(self)

    # ----------------------------------------------------------------- records, transcript

    def _note(self, op: str, **fields: Any) -> None:
        self.transcript.append({"op": op, "t": self.now_ms, **fields})

    def _written_since(self, before: GroupRecord | None) -> list[GroupRecord]:
        after = self.coordinator.stored_record()
        if after is None or after is before:
            return []
        self.written.append((self.now_ms, after))
        return [after]

    def group_record(
        self, assignments: dict[str, bytes] | None = None, state_since_ms: int | None = None
    ) -> GroupRecord:
        """``GroupCoordinatorRecordHelpers.newGroupMetadataRecord(group, assignments)``: the
        group as it is now, each member with its metadata for the group protocol and its
        assignment from ``assignments`` (default: the member's current assignment), stamped
        with when the group entered its state (``currentStateTimestamp``; pass
        ``state_since_ms`` for a write that came before a transition Kafka makes only once
        the write completes, e.g. the leader's SyncGroup)."""
        protocol = self.coordinator.protocol_name
        members = tuple(
            GroupRecordMember(
                member_id=v.member_id,
                client_id=v.client_id,
                source=v.source,
                rebalance_timeout_ms=v.rebalance_timeout_ms,
                session_timeout_ms=v.session_timeout_ms,
                subscription=dict(v.protocols)[protocol] if protocol is not None else b"",
                assignment=(
                    v.assignment if assignments is None else assignments.get(v.member_id, b"")
                ),
                group_instance_id=v.group_instance_id,
            )
            for v in self.coordinator.members()
        )
        return GroupRecord(
            group_id=GROUP_ID,
            generation=self.generation,
            protocol_type=self.coordinator.protocol_type,
            protocol=protocol,
            leader=self.coordinator.leader_id if members else None,
            members=members,
            written_ms=(
                self.coordinator.state_since_ms if state_since_ms is None else state_since_ms
            ),
        )

    def empty_group_record(self) -> GroupRecord:
        """``GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord(group)``, the record of
        a group's creation: generation 0 and no protocol type, whatever the group's state."""
        return GroupRecord(
            group_id=GROUP_ID,
            generation=0,
            protocol_type=None,
            protocol=None,
            leader=None,
            members=(),
            written_ms=self.coordinator.state_since_ms,
        )

    def mark(self) -> int:
        """A point in :attr:`written` to compare against (:meth:`written_since`)."""
        return len(self.written)

    def written_since(self, mark: int = 0) -> list[GroupRecord]:
        """The group records written since :meth:`mark` returned ``mark``. ``== []`` after
        several requests is Kafka's ``assertTrue(result.records.isEmpty())`` on each."""
        return [record for _, record in self.written[mark:]]

    def send(self, source: str, request: Any) -> Reply:
        """Send one request (see :meth:`CoordinatorContext.send`); the reply's ``records``
        are the group records written while handling it."""
        before = self.coordinator.stored_record()
        self._note(
            "request",
            source=source,
            api=type(request).__name__.removesuffix("Request"),
            request=_builtins(request),
        )
        entry = self.transcript[-1]
        try:
            reply = super().send(source, request)
        except IllegalGroupState:
            entry["exception"] = "IllegalGroupState"
            raise
        reply.records = self._written_since(before)
        entry["records"] = _builtins(reply.records)
        return reply

    def apply(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self._note(
                    "response",
                    dest=effect.dest,
                    api=type(effect.message).__name__.removesuffix("Response"),
                    response=_builtins(effect.message),
                )
            elif isinstance(effect, SetTimer):
                self._note("timer_set", key=effect.key, at=effect.at_ms)
            elif isinstance(effect, CancelTimer) and effect.key in self.timers:
                self._note("timer_cancel", key=effect.key)
        super().apply(effects)

    def describe(self) -> DescribedGroup:
        """``context.describeGroups(["group-id"])`` for this group (DescribeGroups)."""
        described = self.coordinator.describe()
        self._note("describe", group_id=self.group_id, described=_builtins(described))
        return described

    def load(self, record: GroupRecord | None) -> None:
        """``context.replay(record)`` + ``onLoaded()``: a coordinator built from ``record``
        (:meth:`GroupCoordinator.load`) at the current time replaces this one."""
        self._note("load", record=_builtins(record))
        self.timers.clear()
        self.coordinator, effects = GroupCoordinator.load(
            GROUP_ID, self.config, self.member_ids, record, self.now_ms
        )
        self.apply(effects)

    def unload(self) -> None:
        """``onUnloaded()``."""
        self._note("unload")
        super().unload()

    # ----------------------------------------------------------------- back doors

    def create_group(self) -> None:
        """``createClassicGroup``: the group exists (Empty) before any join."""
        self._note("create_group")
        self.coordinator.group.exists = True

    def force_state(self, state: GroupState) -> None:
        """``group.transitionTo(state)`` (asserted against Kafka's transition table)."""
        self._note("force_state", state=state.value)
        effects: list[Effect] = []
        self.coordinator.group.transition(state, self.now_ms, effects)
        self.apply(effects)

    def prepare_rebalance(self) -> None:
        """``groupMetadataManager.prepareRebalance(group, reason)``."""
        self._note("prepare_rebalance")
        effects: list[Effect] = []
        rebalance.prepare_rebalance(self.coordinator.group, self.now_ms, effects)
        self.apply(effects)

    # ----------------------------------------------------------------- views

    def num_members(self) -> int:
        return len(self.coordinator.members())

    def num_awaiting_join(self) -> int:
        return sum(v.awaiting_join for v in self.coordinator.members())

    def num_pending(self) -> int:
        return len(self.coordinator.pending_member_ids())

    def has_member(self, member_id: str) -> bool:
        return self.coordinator.member(member_id) is not None

    def all_member_ids(self) -> set[str]:
        return {v.member_id for v in self.coordinator.members()}

    def static_member_ids(self) -> set[str]:
        return {v.member_id for v in self.coordinator.members() if v.group_instance_id}

    def dynamic_member_ids(self) -> set[str]:
        return {v.member_id for v in self.coordinator.members() if not v.group_instance_id}

    def is_leader(self, member_id: str) -> bool:
        return self.coordinator.leader_id == member_id

    def join_response_members(self) -> tuple[JoinGroupResponseMember, ...]:
        """``toJoinResponseMembers``: every member with its metadata for the group protocol."""
        protocol = self.coordinator.protocol_name
        assert protocol is not None
        return tuple(
            JoinGroupResponseMember(v.member_id, v.group_instance_id, dict(v.protocols)[protocol])
            for v in self.coordinator.members()
        )

    def check_join_group_response(
        self,
        expected: JoinGroupResponse,
        actual: JoinGroupResponse,
        state: GroupState,
        instance_ids: set[str],
    ) -> None:
        """``checkJoinGroupResponse``: equal responses, the group's state, the instance ids
        in the response's member list."""
        assert actual == expected
        assert self.state is state
        assert {m.group_instance_id for m in actual.members} == instance_ids

    # ----------------------------------------------------------------- requests

    def _source(self) -> str:
        self._next_source += 1
        return f"client-{self._next_source}"

    def send_join(
        self,
        request: JoinGroupRequest,
        require_known_member_id: bool = False,
        support_skipping_assignment: bool = False,
    ) -> Reply:
        """``sendClassicGroupJoin``: JoinGroup v3, v4 (KIP-394) or the latest (v9)."""
        version = 3
        if require_known_member_id:
            version = 9 if support_skipping_assignment else 4
        return self.send(self._source(), with_(request, api_version=version))

    def send_sync(
        self,
        member_id: str,
        generation_id: int = 0,
        group_instance_id: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
        assignments: tuple[tuple[str, bytes], ...] = (),
        group_id: str = GROUP_ID,
    ) -> Reply:
        """``sendClassicGroupSync`` with ``SyncGroupRequestBuilder``'s defaults."""
        return self.send(
            self._source(),
            SyncGroupRequest(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                group_instance_id=group_instance_id,
            ),
        )

    def send_heartbeat(
        self,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
        group_id: str = GROUP_ID,
    ) -> ErrorCode:
        """``sendClassicGroupHeartbeat``: the response's error (answered at once)."""
        reply = self.send(
            self._source(),
            HeartbeatRequest(group_id, member_id, generation_id, group_instance_id),
        )
        return reply.error

    def send_leave(self, *members: MemberIdentity, group_id: str = GROUP_ID) -> Reply:
        """``sendClassicGroupLeave`` with v3+ member identities."""
        return self.send(self._source(), LeaveGroupRequest(group_id=group_id, members=members))

    def sleep(self, ms: int) -> list[Expired]:
        """``context.sleep(ms)``: ``MockTime.sleep`` then ``MockCoordinatorTimer.poll`` (every
        due timer fires at the new time). Returns the timers that fired, each with the group
        records its handler wrote (Kafka's expired timeouts)."""
        self.now_ms += ms
        self._note("sleep", ms=ms)
        expired: list[Expired] = []
        while self.timers:
            key, (deadline, _) = min(self.timers.items(), key=lambda kv: kv[1])
            if deadline > self.now_ms:
                break
            del self.timers[key]
            self.fired.append((self.now_ms, key))
            before = self.coordinator.stored_record()
            self._note("expired", key=key)
            entry = self.transcript[-1]
            self.apply(self.coordinator.fire(key, self.now_ms))
            records = self._written_since(before)
            entry["records"] = _builtins(records)
            expired.append(Expired(key, records))
        return expired

    def expire(self, ms: int) -> list[str]:
        """``sleep(ms)``, returning the keys of the timers that fired."""
        return [e.key for e in self.sleep(ms)]

    # ----------------------------------------------------------------- scenarios

    def join_dynamic_and_complete_join(self, request: JoinGroupRequest) -> JoinGroupResponse:
        """``joinClassicGroupAsDynamicMemberAndCompleteJoin``: KIP-394 round trip, then the
        initial delay (exactly one timer fires) completes the join."""
        member_id = request.member_id
        if member_id == UNKNOWN_MEMBER_ID:
            first = self.send_join(request, require_known_member_id=True)
            assert first.records == []
            assert first.done and first.error is E.MEMBER_ID_REQUIRED
            member_id = first.response.member_id
        second = self.send_join(
            with_(request, member_id=member_id, group_instance_id=None),
            require_known_member_id=True,
        )
        assert second.records == []
        assert len(self.sleep(self.initial_rebalance_delay_ms)) == 1
        assert second.done and second.error is E.NONE, second
        response: JoinGroupResponse = second.response
        return response

    def join_and_complete_join(
        self,
        request: JoinGroupRequest,
        require_known_member_id: bool,
        support_skipping_assignment: bool,
        advance_clock_ms: int | None = None,
    ) -> JoinGroupResponse:
        """``joinClassicGroupAndCompleteJoin``."""
        if require_known_member_id and request.group_instance_id is None:
            return self.join_dynamic_and_complete_join(request)
        reply = self.send_join(request, require_known_member_id, support_skipping_assignment)
        self.sleep(
            self.initial_rebalance_delay_ms if advance_clock_ms is None else advance_clock_ms
        )
        assert reply.done and reply.error is E.NONE, reply
        response: JoinGroupResponse = reply.response
        return response

    def join_dynamic_and_complete_rebalance(self) -> JoinGroupResponse:
        """``joinClassicGroupAsDynamicMemberAndCompleteRebalance``: one dynamic member
        (rebalance 10 s, session 5 s), synced; the group is Stable at generation 1."""
        self.create_group()
        leader = self.join_dynamic_and_complete_join(
            join_request(
                protocols=to_protocols("range"),
                rebalance_timeout_ms=10_000,
                session_timeout_ms=5000,
            )
        )
        assert leader.generation_id == 1 and self.state is S.COMPLETING_REBALANCE
        sync = self.send_sync(leader.member_id, leader.generation_id)
        assert sync.records == [self.group_record()]
        assert sync.done and sync.error is E.NONE
        assert self.state is S.STABLE
        return leader

    def static_members_join_and_rebalance(
        self,
        leader_instance_id: str,
        follower_instance_id: str,
        rebalance_timeout_ms: int = 10_000,
        session_timeout_ms: int = 5000,
    ) -> RebalanceResult:
        """``staticMembersJoinAndRebalance``: two static members (range, roundrobin) join
        (v3), two initial delays complete the join, both sync; Stable at generation 1."""
        self.create_group()
        request = join_request(
            group_instance_id=leader_instance_id,
            protocols=to_protocols("range", "roundrobin"),
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
        )
        leader = self.send_join(request)
        follower = self.send_join(with_(request, group_instance_id=follower_instance_id))
        assert leader.records == [] and follower.records == []
        assert not leader.done and not follower.done
        assert_no_or_empty_result(self.sleep(self.initial_rebalance_delay_ms))
        assert_no_or_empty_result(self.sleep(self.initial_rebalance_delay_ms))
        assert leader.error is E.NONE and follower.error is E.NONE
        assert leader.response.generation_id == 1 == follower.response.generation_id
        assert self.num_members() == 2 and self.generation == 1
        assert self.state is S.COMPLETING_REBALANCE
        leader_id = leader.response.member_id
        follower_id = follower.response.member_id
        assignment = ((leader_id, b"\x01"), (follower_id, b"\x02"))
        lead_sync = self.send_sync(leader_id, 1, leader_instance_id, assignments=assignment)
        # The generated record carries the new assignment.
        assert lead_sync.records == [self.group_record(dict(assignment))]
        assert lead_sync.done and lead_sync.error is E.NONE and self.state is S.STABLE
        follow_sync = self.send_sync(follower_id, 1, follower_instance_id)
        assert follow_sync.records == []
        assert follow_sync.done and follow_sync.error is E.NONE
        assert self.state is S.STABLE and self.num_members() == 2 and self.generation == 1
        return RebalanceResult(
            1,
            leader_id,
            lead_sync.response.assignment,
            follower_id,
            follow_sync.response.assignment,
        )

    def setup_group_with_pending_member(self) -> PendingMemberGroupResult:
        """``setupGroupWithPendingMember``: leader and follower in generation 2, Stable, then
        the leader rejoins (PreparingRebalance), a third member is pending (KIP-394, session
        2500 ms) and the follower rejoins."""
        request = join_request(
            protocols=to_protocols("range"), rebalance_timeout_ms=10_000, session_timeout_ms=5000
        )
        leader = self.join_dynamic_and_complete_join(request)
        assignments = ((leader.member_id, b""),)
        sync = self.send_sync(leader.member_id, leader.generation_id, assignments=assignments)
        # Now the group is Stable, with the one member that joined above.
        assert sync.records == [self.group_record()]
        assert sync.done and sync.error is E.NONE
        follower_join = self.send_join(request)
        assert follower_join.records == [] and not follower_join.done
        leader_join = self.send_join(with_(request, member_id=leader.member_id))
        assert leader_join.records == []
        assert self.state is S.COMPLETING_REBALANCE
        assert leader_join.error is E.NONE and follower_join.error is E.NONE
        assert leader_join.response.generation_id == follower_join.response.generation_id
        assert leader_join.response.leader == leader.member_id == follower_join.response.leader
        generation = leader_join.response.generation_id
        follower_id = follower_join.response.member_id
        sync = self.send_sync(leader.member_id, generation, assignments=assignments)
        assert sync.records == [self.group_record()]
        assert sync.done and sync.error is E.NONE and self.state is S.STABLE
        leader_join = self.send_join(with_(request, member_id=leader.member_id))
        assert leader_join.records == []
        assert not leader_join.done and self.state is S.PREPARING_REBALANCE
        pending = self.send_join(
            with_(request, session_timeout_ms=2500), require_known_member_id=True
        )
        assert pending.records == []
        assert pending.error is E.MEMBER_ID_REQUIRED and self.num_pending() == 1
        follower_join = self.send_join(with_(request, member_id=follower_id))
        assert follower_join.records == []
        assert not follower_join.done and self.state is S.PREPARING_REBALANCE
        assert self.num_members() == 2 and self.num_pending() == 1
        return PendingMemberGroupResult(leader.member_id, follower_id, pending.response)

    def join_with_n_members(
        self, n: int, rebalance_timeout_ms: int, session_timeout_ms: int
    ) -> list[JoinGroupResponse]:
        """``joinWithNMembers``: n KIP-394 members, the initial delay then the rebalance
        timeout complete the join; CompletingRebalance."""
        self.create_group()
        request = join_request(
            protocols=to_protocols("range"),
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
        )
        ids = []
        for _ in range(n):
            first = self.send_join(request, require_known_member_id=True)
            assert first.records == [] and first.done
            ids.append(first.response.member_id)
        seconds = [
            self.send_join(with_(request, member_id=mid), require_known_member_id=True)
            for mid in ids
        ]
        assert not any(r.done or r.records for r in seconds)
        assert_no_or_empty_result(self.sleep(self.initial_rebalance_delay_ms))
        assert not any(r.done for r in seconds)
        # Advance the clock by the rebalance timeout to complete the join phase.
        assert_no_or_empty_result(self.sleep(rebalance_timeout_ms))
        assert all(r.done and r.error is E.NONE for r in seconds)
        assert self.num_members() == n and self.state is S.COMPLETING_REBALANCE
        return [r.response for r in seconds]

    def verify_session_expiration(self, timeout_ms: int) -> None:
        """``verifySessionExpiration``: every member's heartbeat expires; the group ends Empty
        with the empty group record written."""
        keys = {f"heartbeat:{mid}" for mid in self.all_member_ids()}
        expired = self.sleep(timeout_ms)
        assert {e.key for e in expired} == keys
        # Only the last member leaving writes the empty group record.
        assert expired[-1].records == [self.group_record()]
        assert self.group_record().members == () and self.group_record().protocol is None
        assert_no_or_empty_result(expired[:-1])
        assert self.state is S.EMPTY and self.num_members() == 0


def verify_join_responses(
    replies: list[Reply], expected_success: int, expected_failure: ErrorCode
) -> list[str]:
    """``verifyClassicGroupJoinResponses``: all answered, that many NONE, the rest the given
    error. Returns the member ids answered."""
    assert all(r.done for r in replies)
    ok = 0
    for r in replies:
        if r.error is E.NONE:
            ok += 1
        else:
            assert r.error is expected_failure, r
    assert ok == expected_success
    return [r.response.member_id for r in replies]
