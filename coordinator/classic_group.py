"""One classic group's state and member table (Kafka's ``ClassicGroup`` and
``ClassicGroupMember``), with the timer keys the coordinator arms.

:class:`ClassicGroup` holds everything the request handlers share: the state and its
transitions, the generation, protocol and leader, the member map (a Java ``HashMap``, so
:meth:`ClassicGroup.java_order` is the order every walk over it takes), KIP-394 pending member
ids, KIP-345 static instance ids, the pending-sync set (KIP-814) and the coordinator's timers.
Its methods are ``ClassicGroup``'s own (add, remove, replaceStaticMember, validateMember,
supportsProtocols, transitionTo...) plus the few ``GroupMetadataManager`` helpers that touch
nothing but the group (rescheduling a member's heartbeat, completing a parked request's
future). The handlers live in :mod:`coordinator.join`, :mod:`coordinator.sync`,
:mod:`coordinator.session` and :mod:`coordinator.rebalance`, as plain functions over a
:class:`ClassicGroup`; :class:`coordinator.group.GroupCoordinator` is the public face.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupResponse,
)
from protocol.java_capacity import grown_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from .config import CoordinatorConfig
from .record import GroupRecord, GroupRecordMember
from .state import DEAD, EMPTY, PREPARING, GroupState, check_transition

__all__ = [
    "ClassicGroup",
    "Member",
    "PendingMember",
    "IllegalGroupState",
    "JOIN_TIMER",
    "SYNC_TIMER",
    "COMMIT_TIMER",
    "HEARTBEAT_PREFIX",
    "heartbeat_key",
    "protocol_names",
    "pending_removed",
]

#: Timer keys armed by the coordinator (Kafka: ``join-<group>``, ``sync-<group>``,
#: ``heartbeat-<group>-<member>``; the runtime keeps one timer table per coordinator).
JOIN_TIMER = "join"
SYNC_TIMER = "sync"
#: The commit of the leader's SyncGroup record when :attr:`ClassicGroup.write_latency_ms`
#: holds it (``CoordinatorRuntime`` completes a write's future at the high watermark).
COMMIT_TIMER = "commit"
HEARTBEAT_PREFIX = "heartbeat:"


def heartbeat_key(member_id: str) -> str:
    """The key of the coordinator's session timer of ``member_id``
    (``GroupMetadataManager.classicGroupHeartbeatKey``)."""
    return HEARTBEAT_PREFIX + member_id


class IllegalGroupState(Exception):
    """A request Kafka's coordinator rejects with ``IllegalStateException`` (a client bug):
    a KIP-394 pending member rejoining with a ``group_instance_id``, or a known static
    member rejoining an Empty group with an unknown member id."""


def protocol_names(protocols: tuple[tuple[str, bytes], ...]) -> tuple[str, ...]:
    """The names of a JoinGroup's ``(name, metadata)`` protocol list, in order; a duplicate
    name counts once (Kafka would double-count it in ``ClassicGroup``'s supported-protocol
    counts; no client sends one)."""
    return tuple(dict.fromkeys(name for name, _ in protocols))


class Member:
    """Mutable member record (``ClassicGroupMember``). A parked JoinGroup/SyncGroup is the
    source address its response must go to (``None`` when nothing is parked).

    Attributes:
        member_id / hb_key: its member id and the key of its session timer.
        source: network address of its latest JoinGroup.
        client_id / protocol_type / group_instance_id: from its JoinGroup.
        protocols / names: its ordered (name, metadata) list and the names alone.
        session_timeout_ms / rebalance_timeout_ms: from its latest JoinGroup (virtual ms).
        is_new: added and not yet through a completed join (KAFKA-7610 timeout applies).
        join_source / sync_source: where a parked JoinGroup / SyncGroup is answered.
        assignment: its assignment bytes from the leader (``b""`` when none).
        hb_deadline: its session deadline (virtual ms).
    """

    __slots__ = (
        "member_id",
        "hb_key",
        "source",
        "client_id",
        "protocol_type",
        "protocols",
        "names",
        "session_timeout_ms",
        "rebalance_timeout_ms",
        "is_new",
        "join_source",
        "sync_source",
        "assignment",
        "hb_deadline",
        "group_instance_id",
    )

    def __init__(self, member_id: str, source: str, request: JoinGroupRequest) -> None:
        self.member_id = member_id
        self.hb_key = HEARTBEAT_PREFIX + member_id
        self.source = source
        self.client_id = request.client_id
        self.protocol_type = request.protocol_type
        self.protocols: tuple[tuple[str, bytes], ...] = request.protocols
        self.names: tuple[str, ...] = protocol_names(request.protocols)
        self.session_timeout_ms = request.session_timeout_ms
        self.rebalance_timeout_ms = request.rebalance_timeout_ms
        self.is_new = False
        self.join_source: str | None = None
        self.sync_source: str | None = None
        self.assignment = b""
        self.hb_deadline = 0
        self.group_instance_id: str | None = request.group_instance_id

    def metadata(self, protocol: str) -> bytes:
        """Its metadata for ``protocol`` (``ClassicGroupMember#metadata``).

        Raises:
            AssertionError: it does not support ``protocol``.
        """
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise AssertionError(f"member {self.member_id} does not support {protocol}")

    def renamed(self, member_id: str) -> Member:
        """A copy of this record under ``member_id`` with nothing parked and ``is_new`` off
        (what ``ClassicGroup#replaceStaticMember`` keeps of the old member)."""
        m = Member.__new__(Member)
        for slot in Member.__slots__:
            setattr(m, slot, getattr(self, slot))
        m.member_id = member_id
        m.hb_key = HEARTBEAT_PREFIX + member_id
        m.is_new = False
        m.join_source = None
        m.sync_source = None
        return m


class PendingMember:
    """A KIP-394 pending member: an id handed out with MEMBER_ID_REQUIRED, not yet joined
    (``source``: where it came from; ``deadline``: virtual ms its id is forgotten at)."""

    __slots__ = ("source", "deadline")

    def __init__(self, source: str, deadline: int) -> None:
        self.source = source
        self.deadline = deadline


_SYNC_FENCED = SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)


class ClassicGroup:
    """The state of one classic group (``ClassicGroup``) and the coordinator's bookkeeping
    around it; the handler modules read and change it through these attributes and methods.

    Args:
        group_id: the group.
        config: broker settings.
        new_member_id: ``client_id -> "<client_id>-<uuid>"`` (``ClassicGroup#generateMemberId``).

    Attributes:
        state / previous_state: ``ClassicGroup#currentState`` / ``previousState``.
        state_ms: when the current state was entered (``currentStateTimestamp``, virtual ms).
        exists: a JoinGroup created the group (or a record was loaded).
        generation / protocol_type / protocol_name / leader_id: as in Kafka's ``ClassicGroup``.
        members: member id -> :class:`Member`, in insertion order (walk it in
            :meth:`java_order`).
        max_members: the most members the map ever held (its capacity grows with it).
        pending: KIP-394 pending member id -> :class:`PendingMember`, in hand-out order.
        static: KIP-345 ``group_instance_id`` -> member id.
        pending_sync: member ids of the generation that have not sent SyncGroup (KIP-814).
        supported: protocol name -> how many members list it.
        num_awaiting_join: members with a parked JoinGroup.
        new_member_added: ``newMemberAdded`` of the initial-delay chain.
        join_timer: ``("initial", delay_ms, remaining_ms)`` or ``("complete", 0, 0)``;
            ``None`` when disarmed.
        sync_timer_generation: the generation the armed pending-sync timer belongs to.
        record: the last group metadata record written (or loaded).
        write_latency_ms: how long the leader's SyncGroup record takes to commit (0: at once,
            as with one replica of ``__consumer_offsets``).
        uncommitted: (generation, assignments, record) of the leader's record appended but
            not committed.
    """

    def __init__(
        self, group_id: str, config: CoordinatorConfig, new_member_id: Callable[[str], str]
    ) -> None:
        self.group_id = group_id
        self.config = config
        self.new_member_id = new_member_id
        self.state = EMPTY
        self.previous_state = EMPTY
        self.state_ms = 0
        self.exists = False
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.max_members = 0
        self._order: list[str] | None = None
        self.pending: dict[str, PendingMember] = {}
        self.static: dict[str, str] = {}
        self.pending_sync: dict[str, None] = {}
        self.supported: dict[str, int] = {}
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.join_timer: tuple[str, int, int] | None = None
        self.sync_timer_generation: int | None = None
        self.record: GroupRecord | None = None
        self.write_latency_ms = 0
        self.uncommitted: tuple[int, dict[str, bytes], GroupRecord] | None = None

    # ------------------------------------------------------------------ member table

    def java_order(self) -> list[str]:
        """Member ids in Java ``HashMap`` iteration order (cached until membership changes)."""
        order = self._order
        if order is None:
            order = hash_order(self.members, string_hash, grown_capacity(self.max_members))
            self._order = order
        return order

    def change_supported(self, names: tuple[str, ...], delta: int) -> None:
        """Count the protocols ``names`` once more (``delta`` 1) or once less (-1)."""
        supported = self.supported
        for name in names:
            count = supported.get(name, 0) + delta
            if count:
                supported[name] = count
            else:
                del supported[name]

    def restore(self, m: Member) -> None:
        """Put a member replayed from a group record into the map (``GroupMetadataManager
        #replay``): no JoinGroup parked, protocol counts left to the caller."""
        self.members[m.member_id] = m
        self._order = None
        if m.group_instance_id is not None:
            self.static[m.group_instance_id] = m.member_id

    def add(self, m: Member, join_source: str, effects: list[Effect]) -> None:
        """``ClassicGroup#add``: the member arrives with its JoinGroup parked."""
        mid = m.member_id
        if not self.members:
            self.protocol_type = m.protocol_type
        self.members[mid] = m
        self.max_members = max(self.max_members, len(self.members))
        self._order = None
        self.change_supported(m.names, 1)
        m.join_source = join_source
        self.num_awaiting_join += 1
        if self.leader_id is None:
            self.leader_id = mid
        self.pending.pop(mid, None)
        if m.group_instance_id is not None:
            self.static[m.group_instance_id] = mid
        effects.append(Log("member_added", {"member": m.source, "member_id": mid}))

    def remove(self, mid: str, reason: str, effects: list[Effect]) -> None:
        """``ClassicGroup#remove``: drop a member or pending member; a parked request of it
        is not answered here."""
        m = self.members.pop(mid, None)
        if m is not None:
            self._order = None
            self.change_supported(m.names, -1)
            if m.join_source is not None:
                self.num_awaiting_join -= 1
            if m.group_instance_id is not None:
                self.static.pop(m.group_instance_id, None)
            # with the timeouts it was held to (its JoinGroup's): what a removal is judged by
            fields: dict[str, object] = {
                "member": m.source,
                "member_id": mid,
                "reason": reason,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
            }
            effects.append(Log("member_removed", fields))
        if self.leader_id == mid:
            order = self.java_order()
            self.leader_id = order[0] if order else None
        pending = self.pending.pop(mid, None)
        if pending is not None:
            effects.append(pending_removed(pending.source, mid, reason))
        self.pending_sync.pop(mid, None)

    def replace_static_member(
        self, iid: str, old_id: str, new_id: str, effects: list[Effect]
    ) -> Member:
        """``ClassicGroup#replaceStaticMember``: the member record moves to ``new_id`` (same
        client id, address, timeouts, protocols and assignment; leadership follows); a parked
        JoinGroup or SyncGroup of ``old_id`` is answered FENCED_INSTANCE_ID. The old id's
        heartbeat timer is left to expire harmlessly; its pending-sync entry stays.

        Raises:
            KeyError: ``old_id`` is not a member.
        """
        old = self.members.pop(old_id)
        self.complete_join_future(
            old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id), effects
        )
        self.complete_sync_future(old, _SYNC_FENCED, effects)
        m = old.renamed(new_id)
        self.members[new_id] = m
        self._order = None
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static[iid] = new_id
        return m

    def validate_member(self, mid: str, group_instance_id: str | None) -> ErrorCode | None:
        """``ClassicGroup#validateMember``: an unknown instance id or member id is
        UNKNOWN_MEMBER_ID; an instance id mapped to another member id is FENCED_INSTANCE_ID."""
        if group_instance_id is not None:
            existing = self.static.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != mid:
                return ErrorCode.FENCED_INSTANCE_ID
        if mid not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def request_error(self, group_id: str) -> ErrorCode:
        """The error of a SyncGroup/Heartbeat that fails before member validation passes."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group_id != self.group_id:
            return ErrorCode.NOT_COORDINATOR
        if self.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.UNKNOWN_MEMBER_ID

    def supports_protocols(
        self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
    ) -> bool:
        """``ClassicGroup#supportsProtocols``."""
        if self.state is EMPTY:
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        supported = self.supported
        return protocol_type == self.protocol_type and any(
            supported.get(name, 0) == n for name, _ in protocols
        )

    def rebalance_timeout_ms(self) -> int:
        """The group rebalance timeout (``ClassicGroup#rebalanceTimeoutMs``): max over
        members, 0 without members (virtual ms)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        """``ClassicGroup#hasAllMembersJoined``: every member has a JoinGroup parked and no
        KIP-394 pending member is outstanding."""
        return len(self.members) == self.num_awaiting_join and not self.pending

    def leader_member_list(self) -> tuple[JoinGroupResponseMember, ...]:
        """``ClassicGroup#currentClassicGroupMembers``: coordinator order, chosen protocol."""
        protocol = self.protocol_name
        assert protocol is not None
        members = self.members
        return tuple(
            JoinGroupResponseMember(
                mid, members[mid].group_instance_id, members[mid].metadata(protocol)
            )
            for mid in self.java_order()
        )

    def generation_join_response(
        self,
        member_id: str,
        leader: str | None,
        members: tuple[JoinGroupResponseMember, ...] = (),
        skip_assignment: bool = False,
    ) -> JoinGroupResponse:
        """The NONE JoinGroup answer of the current generation for ``member_id``
        (``GroupMetadataManager#completeClassicGroupJoin`` / the static-member rejoin in
        ``updateStaticMemberThenRebalanceOrCompleteJoin``): ``leader`` as the answer names
        it (``""`` for none), ``members`` only in the leader's, ``skip_assignment``
        KIP-814's flag (JoinGroup v9+)."""
        return JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=self.generation,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=leader or "",
            member_id=member_id,
            members=members,
            skip_assignment=skip_assignment,
        )

    # ------------------------------------------------------------------ parked requests, timers

    def complete_join_future(
        self, m: Member, response: JoinGroupResponse, effects: list[Effect]
    ) -> bool:
        """Answer ``m``'s parked JoinGroup with ``response``; False when none is parked."""
        dest = m.join_source
        if dest is None:
            return False
        m.join_source = None
        self.num_awaiting_join -= 1
        effects.append(Send(dest, response))
        return True

    def complete_sync_future(
        self, m: Member, response: SyncGroupResponse, effects: list[Effect]
    ) -> bool:
        """Answer ``m``'s parked SyncGroup with ``response``; False when none is parked."""
        dest = m.sync_source
        if dest is None:
            return False
        m.sync_source = None
        effects.append(Send(dest, response))
        return True

    def reschedule_heartbeat(
        self, m: Member, now_ms: int, timeout_ms: int, effects: list[Effect]
    ) -> None:
        """``GroupMetadataManager#rescheduleClassicGroupMemberHeartbeat``: ``m``'s session
        deadline moves to ``now_ms + timeout_ms`` and its timer re-arms there."""
        m.hb_deadline = now_ms + timeout_ms
        effects.append(SetTimer(m.hb_key, m.hb_deadline))

    def extend_session(self, member_id: str, now_ms: int) -> int:
        """A Heartbeat that passed ``classicGroupHeartbeat``'s checks: ``member_id``'s
        session deadline moves to ``now_ms`` + its session timeout; returns the deadline
        (virtual ms). The caller re-arms the timer ``heartbeat_key(member_id)`` there.

        Raises:
            KeyError: ``member_id`` is not a member.
        """
        m = self.members[member_id]
        deadline = m.hb_deadline = now_ms + m.session_timeout_ms
        return deadline

    def cancel_join_timer(self, effects: list[Effect]) -> None:
        """Disarm the join timer if it is armed."""
        if self.join_timer is not None:
            self.join_timer = None
            effects.append(CancelTimer(JOIN_TIMER))

    def cancel_sync_timer(self, effects: list[Effect]) -> None:
        """Disarm the pending-sync timer if it is armed."""
        if self.sync_timer_generation is not None:
            self.sync_timer_generation = None
            effects.append(CancelTimer(SYNC_TIMER))

    def transition(self, target: GroupState, now_ms: int, effects: list[Effect]) -> None:
        """``ClassicGroup#transitionTo``: assert against Kafka's table, log the move, note
        when the state was entered (``currentStateTimestamp``).

        Raises:
            IllegalStateTransition: ``target`` may not follow the current state.
        """
        check_transition(self.group_id, self.state, target)
        fields: dict[str, object] = {
            "from": self.state.value,
            "to": target.value,
            "generation": self.generation,
        }
        if target is PREPARING:
            # What the join phase's length is judged by (KIP-62, join_phase_overran and
            # join_completed_early): the group's rebalance timeout as the phase begins — the
            # members' maximum (ClassicGroup#rebalanceTimeoutMs), taken here from the members
            # themselves — and, from Empty, the initial delay (InitialDelayedJoin).
            fields["rebalance_timeout_ms"] = max(
                (m.rebalance_timeout_ms for m in self.members.values()), default=0
            )
            if self.state is EMPTY:
                fields["initial_rebalance_delay_ms"] = self.config.initial_rebalance_delay_ms
        effects.append(Log("group_state", fields))
        self.previous_state = self.state
        self.state = target
        self.state_ms = now_ms

    # ------------------------------------------------------------------ group record

    def store_empty(self) -> None:
        """``newEmptyGroupMetadataRecord``: the group with no members, protocol or leader,
        at generation 0 and with an empty protocol type (``None`` here) even when the
        JoinGroup that created the group has already fixed one (the Kafka 4.0 oracle agrees,
        docs/coordinator-fidelity.md)."""
        self.record = GroupRecord(
            group_id=self.group_id,
            generation=0,
            protocol_type=None,
            protocol=None,
            leader=None,
            members=(),
            written_ms=self.state_ms,
        )

    def store(self) -> None:
        """Write the group metadata record (:meth:`group_record` of the members' current
        assignments)."""
        self.record = self.group_record(None)

    def group_record(self, assignments: dict[str, bytes] | None) -> GroupRecord:
        """The group metadata record (``GroupCoordinatorRecordHelpers
        #newGroupMetadataRecord``): the members in coordinator order with their metadata
        for the group's protocol and, per member id, its assignment from ``assignments``
        (missing ones empty) or, when ``assignments`` is None, its current one."""
        protocol = self.protocol_name
        stored: list[GroupRecordMember] = []
        for mid in self.java_order():
            m = self.members[mid]
            stored.append(
                GroupRecordMember(
                    member_id=mid,
                    client_id=m.client_id,
                    source=m.source,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol is not None else b"",
                    assignment=m.assignment if assignments is None else assignments.get(mid, b""),
                    group_instance_id=m.group_instance_id,
                )
            )
        return GroupRecord(
            group_id=self.group_id,
            generation=self.generation,
            protocol_type=self.protocol_type,
            protocol=protocol,
            leader=self.leader_id if stored else None,
            members=tuple(stored),
            written_ms=self.state_ms,
        )


def pending_removed(source: str, member_id: str, reason: str) -> Log:
    """The ``member_pending_removed`` record: a KIP-394 pending member id is forgotten
    (``reason``: ``session_timeout`` when it did not rejoin in time, ``leave``,
    ``max_size``)."""
    return Log(
        "member_pending_removed", {"member": source, "member_id": member_id, "reason": reason}
    )
