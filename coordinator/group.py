"""Kafka's classic group coordinator for one group, as a pure (sans-IO) state machine.

Follows ``GroupMetadataManager`` (classicGroupJoin, classicGroupSync, classicGroupHeartbeat,
classicGroupLeave and their helpers), ``ClassicGroup``, ``ClassicGroupMember`` and
``ClassicGroupState`` of Apache Kafka 4.0 (docs/coordinator-fidelity.md). Nothing
here reads a clock, draws random numbers or does I/O: :meth:`GroupCoordinator.handle` and
:meth:`GroupCoordinator.fire` take the virtual time and return effects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.java_capacity import grown_capacity, presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from .config import CoordinatorConfig
from .record import GroupRecord, GroupRecordMember
from .state import GroupState, check_transition

__all__ = [
    "GroupCoordinator",
    "IllegalGroupState",
    "GroupRecord",
    "GroupRecordMember",
    "MemberView",
    "JOIN_TIMER",
    "SYNC_TIMER",
    "COMMIT_TIMER",
    "HEARTBEAT_PREFIX",
    "heartbeat_key",
]

#: Timer keys armed by the coordinator (Kafka: ``join-<group>``, ``sync-<group>``,
#: ``heartbeat-<group>-<member>``; the runtime keeps one timer table per coordinator).
JOIN_TIMER = "join"
SYNC_TIMER = "sync"
#: The commit of the leader's SyncGroup record when :attr:`GroupCoordinator.write_latency_ms`
#: holds it (``CoordinatorRuntime`` completes a write's future at the high watermark).
COMMIT_TIMER = "commit"
HEARTBEAT_PREFIX = "heartbeat:"


def heartbeat_key(member_id: str) -> str:
    """The key of the coordinator's session timer of ``member_id``
    (``GroupMetadataManager.classicGroupHeartbeatKey``)."""
    return HEARTBEAT_PREFIX + member_id


_EMPTY = GroupState.EMPTY
_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_DEAD = GroupState.DEAD

_JOIN_UNKNOWN = JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id="")
_SYNC_FENCED = SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID)


class IllegalGroupState(Exception):
    """A request Kafka's coordinator rejects with ``IllegalStateException`` (a client bug):
    a KIP-394 pending member rejoining with a ``group_instance_id``, or a known static
    member rejoining an Empty group with an unknown member id."""


class MemberView(msgspec.Struct, frozen=True):
    """A read-only snapshot of one group member (``ClassicGroupMember``).

    Attributes:
        member_id: the id the coordinator gave it (``<client_id>-<uuid>``).
        source: network address of its latest JoinGroup (the worker name, e.g. ``"w1"``).
        client_id: the JoinGroup ``client_id``.
        protocol_type: e.g. ``"connect"``.
        protocols: its ordered (name, metadata) preference list.
        session_timeout_ms / rebalance_timeout_ms: from its latest JoinGroup (virtual ms).
        is_new: added and not yet through a completed join (KAFKA-7610 timeout applies).
        is_leader: it is the group's leader.
        awaiting_join / awaiting_sync: a JoinGroup / SyncGroup of it is parked.
        pending_sync: it is in the current generation but has not sent SyncGroup yet.
        assignment: its assignment bytes from the leader (``b""`` when none).
        group_instance_id: its KIP-345 static id, ``None`` for a dynamic member.
    """

    member_id: str
    source: str
    client_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    is_new: bool
    is_leader: bool
    awaiting_join: bool
    awaiting_sync: bool
    pending_sync: bool
    assignment: bytes
    group_instance_id: str | None = None


class DescribedMember(msgspec.Struct, frozen=True):
    """One member as DescribeGroups shows it (``ClassicGroupMember#describe`` /
    ``describeNoMetadata``).

    Attributes:
        member_id / group_instance_id / client_id: as in :class:`MemberView`.
        source: network address of its latest JoinGroup (Kafka reports ``clientHost``).
        metadata: its metadata for the group protocol when the group is Stable, else ``b""``.
        assignment: its current assignment bytes, in every state (``b""`` when none).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    source: str
    metadata: bytes
    assignment: bytes


class DescribedGroup(msgspec.Struct, frozen=True):
    """A group as DescribeGroups shows it (``GroupMetadataManager#describeGroups``).

    Attributes:
        group_id: the group.
        state: Kafka's state name (``"Stable"``, ``"PreparingRebalance"``...); ``"Dead"`` for
            a group that does not exist.
        protocol_type: ``""`` when none was fixed.
        protocol: the group protocol when Stable, ``""`` otherwise.
        members: every member, in coordinator (Java HashMap) order.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...]


class _Member:
    """Mutable member record (``ClassicGroupMember``). A parked JoinGroup/SyncGroup is the
    source address its response must go to (``None`` when nothing is parked)."""

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
        self.names: tuple[str, ...] = _names(request.protocols)
        self.session_timeout_ms = request.session_timeout_ms
        self.rebalance_timeout_ms = request.rebalance_timeout_ms
        self.is_new = False
        self.join_source: str | None = None
        self.sync_source: str | None = None
        self.assignment = b""
        self.hb_deadline = 0
        self.group_instance_id: str | None = request.group_instance_id

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise AssertionError(f"member {self.member_id} does not support {protocol}")


class _Pending:
    """A KIP-394 pending member: an id handed out with MEMBER_ID_REQUIRED, not yet joined."""

    __slots__ = ("source", "deadline")

    def __init__(self, source: str, deadline: int) -> None:
        self.source = source
        self.deadline = deadline


def _names(protocols: tuple[tuple[str, bytes], ...]) -> tuple[str, ...]:
    # Duplicate names count once (Kafka would double-count them; no client sends them).
    return tuple(dict.fromkeys(name for name, _ in protocols))


class GroupCoordinator:
    """The classic group coordinator of one group (``GroupMetadataManager`` + ``ClassicGroup``).

    Args:
        group_id: the group this coordinator owns; requests naming another group get
            NOT_COORDINATOR, an empty group id INVALID_GROUP_ID.
        config: broker settings (:class:`~coordinator.config.CoordinatorConfig`).
        new_member_id: ``client_id -> "<client_id>-<uuid>"``, drawn from the runtime's seeded
            random generator (``ClassicGroup#generateMemberId``).

    Inputs are :meth:`handle` (a request from the network address ``source``) and :meth:`fire`
    (a due timer); both return effects to carry out in list order. Each request gets exactly
    one ``Send(dest=source, message=<Response>)``: at once, or later (a parked JoinGroup or
    SyncGroup, answered from another call to the address it came from). Exceptions, as in
    Kafka: a parked request superseded by a newer one of the same member is never answered
    (``ClassicGroup#updateMember`` replaces the future), and a SyncGroup parked by a member
    that then leaves is dropped with the member.

    Timers (virtual ms; arming a key again replaces it): ``heartbeat:<member_id>`` (session or
    new-member timeout), ``join`` (rebalance timeout, or the initial-delay chain), ``sync``
    (rebalance timeout from join completion; the generation it belongs to is kept here).

    Rules worth knowing (all Kafka's unless marked):

    * **Member order.** The member map is a Java ``HashMap<String, Member>``: iteration goes by
      bucket of ``String.hashCode`` (spread) and, within a bucket, by insertion. Its capacity
      grows with the largest size the map ever held and never shrinks. The leader's JoinGroup
      member list, the ``generation`` log, vote counting, leader fallback and :meth:`members`
      all use this order ("coordinator order").
    * **Leader.** The first member added while there is no leader. When the leader is removed,
      the first key in coordinator order takes over (``ClassicGroup#remove``); at join
      completion a leader that did not rejoin is replaced by the first rejoined member in
      coordinator order (``maybeElectNewJoinedLeader``).
    * **Protocol vote** (``ClassicGroup#selectProtocol``). Candidates are the protocols every
      member supports; each member, in coordinator order, votes for the first candidate in
      its own list; most votes wins. Ties: ``protocol_tie_break="java"`` (Kafka's) takes the
      first tied protocol in the iteration order of the votes ``HashMap`` (String.hashCode
      bucket in a 16-slot table, then order of first vote); ``"first_listed"`` (groupsim's)
      takes the tied protocol ranked highest by the earliest-added current member. Connect
      workers advertise suffixes of one list, so ties cannot happen in a pure Connect group.
    * **Initial delay.** A rebalance out of Empty waits ``initial_rebalance_delay_ms``, and
      while members keep arriving re-arms up to the group rebalance timeout
      (``tryCompleteInitialRebalanceElseSchedule``); meanwhile ``previousState == Empty``
      refuses early completion. The ``newMemberAdded`` flag is only cleared by that chain.

    * **Persistence and failover.** The group metadata record (:class:`GroupRecord`) is
      written, as Kafka writes it, when the leader's SyncGroup stores a generation's
      assignment, when a join completes with no members left (the group goes Empty), and
      when a JoinGroup creates the group. :meth:`stored_record` is the last one written;
      :meth:`unload` gives the group up and :meth:`load` builds the next coordinator from
      that record (see there for what survives).

    * **Static members** (KIP-345, ``group_instance_id``; Connect never sends one, see
      ``GroupRebalanceConfig``). A new static member is added without MEMBER_ID_REQUIRED;
      a known instance id joining with an unknown member id takes a fresh member id
      (``replaceStaticMember``: the old id's parked JoinGroup/SyncGroup is answered
      FENCED_INSTANCE_ID, assignment and leadership carry over, a ``member_replaced`` log
      record). In Stable that costs no rebalance unless the selected protocol would change
      (the group record is written and the joiner answered at once; v9+ tells a leader to
      skip the assignment); in CompletingRebalance it always rebalances. Every request with
      an instance id is checked by ``validateMember`` (UNKNOWN_MEMBER_ID /
      FENCED_INSTANCE_ID). Join completion keeps static members that did not rejoin; only
      session expiry (or the pending-sync timeout, or LeaveGroup by instance id) removes them.

    Deviations (see docs/coordinator-fidelity.md): no log writes exist, so none fail (a
    write's completion follows at once); the ``member_removed`` reason ``max_size`` (a known
    member turned away by GROUP_MAX_SIZE_REACHED) and the ``member_replaced`` kind extend the
    event-log schema; a Dead (unloaded) group answers every request COORDINATOR_NOT_AVAILABLE
    (``ClassicGroupState.DEAD``) where a real broker would answer NOT_COORDINATOR.
    """

    def __init__(
        self,
        group_id: str,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
    ) -> None:
        self.group_id = group_id
        self.config = config
        self._new_member_id = new_member_id
        self._state = _EMPTY
        self._previous_state = _EMPTY
        self._state_ms = 0  # when the current state was entered (currentStateTimestamp)
        self._exists = False
        self._generation = 0
        self._protocol_type: str | None = None
        self._protocol_name: str | None = None
        self._leader_id: str | None = None
        self._members: dict[str, _Member] = {}
        self._max_members = 0
        self._order: list[str] | None = None
        self._pending: dict[str, _Pending] = {}
        self._static: dict[str, str] = {}  # group_instance_id -> member id (KIP-345)
        self._pending_sync: dict[str, None] = {}
        self._supported: dict[str, int] = {}
        self._num_awaiting_join = 0
        self._new_member_added = False
        # ("initial", delay_ms, remaining_ms) or ("complete", 0, 0); None when disarmed.
        self._join_timer: tuple[str, int, int] | None = None
        self._sync_timer_generation: int | None = None
        self._record: GroupRecord | None = None
        #: How long (virtual ms) the leader's SyncGroup record takes to commit: 0 (the default)
        #: commits at once, as with one replica of ``__consumer_offsets``; a replicated
        #: partition commits when the followers have fetched it (``replay --conform`` sets the
        #: latency the trace shows). Meanwhile the group stays CompletingRebalance.
        self.write_latency_ms = 0
        # (generation, assignments, record) of the leader's record appended but not committed
        self._uncommitted: tuple[int, dict[str, bytes], GroupRecord] | None = None
        self._handlers: dict[type, Callable[[str, Any, int], list[Effect]]] = {
            HeartbeatRequest: self._heartbeat,
            JoinGroupRequest: self._join,
            SyncGroupRequest: self._sync,
            LeaveGroupRequest: self._leave,
        }

    @classmethod
    def load(
        cls,
        group_id: str,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
        record: GroupRecord | None,
        now_ms: int,
    ) -> tuple[GroupCoordinator, list[Effect]]:
        """A coordinator that takes the group's ``__consumer_offsets`` partition over at
        ``now_ms`` and loads the group from the last record written (:meth:`stored_record`
        of the previous coordinator).

        Kafka: ``CoordinatorLoaderImpl`` replays the partition into the new
        ``GroupCoordinatorShard``; ``GroupMetadataManager#replay(GroupMetadataKey,
        GroupMetadataValue)`` rebuilds the ``ClassicGroup`` from each record (the last one
        wins), then ``GroupMetadataManager#onLoaded`` arms every member's heartbeat and
        rebalances a group that is over ``group.max.size`` (Scala: ``GroupMetadataManager
        #loadGroup`` + ``GroupCoordinator#onGroupLoaded``).

        Restored: generation, protocol type and name, leader, and the members in record order
        with client id, address, session and rebalance timeouts, and assignment. The group is
        **Stable** if the record has members, **Empty** otherwise (``previous_state`` is Dead,
        as in ``ClassicGroup``'s constructor); every member's heartbeat timer is armed for its
        session timeout from ``now_ms``; nothing is parked, pending or pending-sync, and no
        join or sync timer runs. If there are more members than ``config.max_size`` the group
        goes straight to PreparingRebalance.

        Lost: everything after the record. A rebalance in progress (the new coordinator is
        back at the stored generation and its members), members that joined or left since,
        KIP-394 pending member ids, and parked requests (the old coordinator's :meth:`unload`
        answered them NOT_COORDINATOR). Each member's protocol list shrinks to the group's
        protocol with its stored metadata (Kafka stores only that), so a follower rejoining
        with its full list counts as changed metadata and triggers a rebalance, and a joiner
        must now support exactly that protocol.

        Args:
            group_id: the group; must match ``record.group_id``.
            config: the new coordinator's broker settings.
            new_member_id: as for the constructor.
            record: the last group metadata record, or ``None`` (no group was ever stored:
                the new coordinator starts without the group, like the constructor).
            now_ms: virtual time of the load.

        Returns:
            The coordinator and the effects to carry out: one ``group_loaded`` log record
            (``generation``, ``protocol``, ``state``, ``leader``, ``leader_id``, ``members``,
            ``member_ids``), the members' heartbeat timers and, for an over-capacity group,
            the rebalance's records and join timer.

        Raises:
            ValueError: ``record`` belongs to another group.
        """
        self = cls(group_id, config, new_member_id)
        effects: list[Effect] = []
        if record is not None:
            if record.group_id != group_id:
                raise ValueError(
                    f"group {group_id!r}: cannot load a record of group {record.group_id!r}"
                )
            self._record = record
            self._exists = True
            self._state_ms = record.written_ms
            self._generation = record.generation
            self._protocol_type = record.protocol_type
            self._protocol_name = record.protocol
            self._previous_state = _DEAD
            members = self._members
            protocol = record.protocol
            for rm in record.members:
                assert protocol is not None, "a record with members names its protocol"
                # replay: ClassicGroupMember with plainProtocolSet(protocol, subscription)
                m = _Member(
                    rm.member_id,
                    rm.source,
                    JoinGroupRequest(
                        group_id=group_id,
                        member_id=rm.member_id,
                        protocol_type=record.protocol_type or "",
                        protocols=((protocol, rm.subscription),),
                        session_timeout_ms=rm.session_timeout_ms,
                        # A record written before rebalance timeouts existed says -1:
                        # replay uses the session timeout (GroupMetadataManager#replay).
                        rebalance_timeout_ms=(
                            rm.rebalance_timeout_ms
                            if rm.rebalance_timeout_ms >= 0
                            else rm.session_timeout_ms
                        ),
                        client_id=rm.client_id,
                        group_instance_id=rm.group_instance_id,
                    ),
                )
                m.assignment = rm.assignment
                members[rm.member_id] = m
                if rm.group_instance_id is not None:
                    self._static[rm.group_instance_id] = rm.member_id
            if members:
                self._max_members = len(members)
                self._supported = {protocol: len(members)} if protocol is not None else {}
                self._leader_id = record.leader if record.leader in members else None
                if self._leader_id is None:  # not written by this coordinator; be safe
                    self._leader_id = self._java_order()[0]
                self._state = _STABLE
        self._log_loaded(effects)
        for mid in self._java_order():
            m = self._members[mid]
            self._reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
        if len(self._members) > config.max_size:
            # onLoaded: "Freshly-loaded group is over capacity" (group.max.size changed).
            self._prepare_rebalance(now_ms, effects)
        return self, effects

    def _log_loaded(self, effects: list[Effect]) -> None:
        members = self._members
        order = self._java_order()
        leader_id = self._leader_id
        effects.append(
            Log(
                "group_loaded",
                {
                    "generation": self._generation,
                    "protocol": self._protocol_name,
                    "state": self._state.value,
                    "leader": members[leader_id].source if leader_id is not None else None,
                    "leader_id": leader_id,
                    "members": [members[mid].source for mid in order],
                    "member_ids": list(order),
                },
            )
        )

    def _store_empty(self, now_ms: int) -> None:
        """``newEmptyGroupMetadataRecord``: the group with no members, protocol or leader,
        at generation 0 and with an empty protocol type (``None`` here) even when the
        JoinGroup that created the group has already fixed one (the Kafka 4.0 oracle agrees,
        docs/coordinator-fidelity.md)."""
        self._record = GroupRecord(
            group_id=self.group_id,
            generation=0,
            protocol_type=None,
            protocol=None,
            leader=None,
            members=(),
            written_ms=self._state_ms,
        )

    def _store(self, now_ms: int) -> None:
        """Write the group metadata record (:meth:`_group_record` of the members' current
        assignments)."""
        self._record = self._group_record(None)

    def _group_record(self, assignments: dict[str, bytes] | None) -> GroupRecord:
        """The group metadata record (``GroupCoordinatorRecordHelpers
        #newGroupMetadataRecord``): the members in coordinator order with their metadata
        for the group's protocol and, per member id, its assignment from ``assignments``
        (missing ones empty) or, when ``assignments`` is None, its current one."""
        protocol = self._protocol_name
        stored: list[GroupRecordMember] = []
        for mid in self._java_order():
            m = self._members[mid]
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
            generation=self._generation,
            protocol_type=self._protocol_type,
            protocol=protocol,
            leader=self._leader_id if stored else None,
            members=tuple(stored),
            written_ms=self._state_ms,
        )

    # ------------------------------------------------------------------ read-only views

    @property
    def state(self) -> GroupState:
        """Current state (``ClassicGroup#currentState``)."""
        return self._state

    @property
    def previous_state(self) -> GroupState:
        """State before the last transition (``ClassicGroup#previousState``)."""
        return self._previous_state

    @property
    def state_since_ms(self) -> int:
        """Virtual time the group entered its current state (``ClassicGroup
        #currentStateTimestamp``); the group record carries it as ``written_ms``."""
        return self._state_ms

    @property
    def generation_id(self) -> int:
        """Current generation; 0 before the first join completes."""
        return self._generation

    @property
    def protocol_type(self) -> str | None:
        """Protocol type fixed by the first member added to the empty group (``"connect"``)."""
        return self._protocol_type

    @property
    def protocol_name(self) -> str | None:
        """Protocol chosen by the vote for this generation; ``None`` when Empty."""
        return self._protocol_name

    @property
    def leader_id(self) -> str | None:
        """Member id of the leader, ``None`` when there are no members."""
        return self._leader_id

    def members(self) -> list[MemberView]:
        """Snapshots of all members, in coordinator (Java HashMap) order."""
        return [self._view(self._members[mid]) for mid in self._java_order()]

    def member(self, member_id: str) -> MemberView | None:
        """Snapshot of one member, or ``None`` if it is not in the group."""
        m = self._members.get(member_id)
        return None if m is None else self._view(m)

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id a static member's instance id maps to (``ClassicGroup
        #staticMemberId``), ``None`` if no member has that instance id."""
        return self._static.get(group_instance_id)

    def pending_member_ids(self) -> list[str]:
        """KIP-394 pending member ids (handed out, not yet rejoined), in hand-out order."""
        return list(self._pending)

    def stored_record(self) -> GroupRecord | None:
        """The last group metadata record this coordinator wrote (or loaded), ``None`` if the
        group was never stored. This is what a coordinator taking the partition over
        loads (:meth:`load`)."""
        return self._record

    def describe(self) -> DescribedGroup:
        """What DescribeGroups answers for this group (``GroupMetadataManager#describeGroups``):
        when Stable, the protocol and each member with its metadata for it and its assignment
        (``ClassicGroupMember#describe``); in any other state no protocol, and each member
        without metadata but **with** its assignment (``describeNoMetadata``). A group that
        does not exist is ``Dead`` with no members (Kafka's ``GroupIdNotFoundException``
        branch)."""
        if not self._exists:
            return DescribedGroup(self.group_id, _DEAD.value, "", "", ())
        stable = self._state is _STABLE
        protocol = (self._protocol_name or "") if stable else ""
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                source=m.source,
                metadata=m.metadata(protocol) if stable else b"",
                assignment=m.assignment,
            )
            for m in (self._members[mid] for mid in self._java_order())
        )
        return DescribedGroup(
            self.group_id, self._state.value, self._protocol_type or "", protocol, members
        )

    def rebalance_timeout_ms(self) -> int:
        """The group rebalance timeout: max over members, 0 without members."""
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    def _view(self, m: _Member) -> MemberView:
        return MemberView(
            member_id=m.member_id,
            source=m.source,
            client_id=m.client_id,
            protocol_type=m.protocol_type,
            protocols=m.protocols,
            session_timeout_ms=m.session_timeout_ms,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            is_new=m.is_new,
            is_leader=m.member_id == self._leader_id,
            awaiting_join=m.join_source is not None,
            awaiting_sync=m.sync_source is not None,
            pending_sync=m.member_id in self._pending_sync,
            assignment=m.assignment,
            group_instance_id=m.group_instance_id,
        )

    # ------------------------------------------------------------------ inputs

    def handle(self, source: str, request: Request, now_ms: int) -> list[Effect]:
        """Process one request from network address ``source`` at virtual time ``now_ms``.

        Returns the effects: the response (now or never for a parked request, which is
        answered by a later call), timers, and log records.

        Raises:
            TypeError: ``request`` is not one of the four group requests.
            IllegalStateTransition: only on a bug (every transition is asserted).
        """
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"not a group request: {type(request).__name__}")
        return handler(source, request, now_ms)

    def fire(self, key: str, now_ms: int) -> list[Effect]:
        """A timer this coordinator armed is due (``CoordinatorTimer`` expiry).

        ``heartbeat:<id>`` → ``expireClassicGroupMemberHeartbeat``; ``join`` →
        ``completeClassicGroupJoin`` or the initial-delay chain; ``sync`` →
        ``expirePendingSync``; ``commit`` → the held leader's record commits
        (:attr:`write_latency_ms`). A timer that is stale (disarmed, or a heartbeat deadline that
        moved later) does nothing.

        Raises:
            ValueError: ``key`` is not a key this coordinator arms.
        """
        effects: list[Effect] = []
        if key.startswith(HEARTBEAT_PREFIX):
            self._expire_heartbeat(key[len(HEARTBEAT_PREFIX) :], now_ms, effects)
        elif key == JOIN_TIMER:
            timer = self._join_timer
            self._join_timer = None
            if timer is not None and self._state is _PREPARING:
                kind, delay_ms, remaining_ms = timer
                if kind == "initial":
                    self._try_complete_initial_rebalance(delay_ms, remaining_ms, now_ms, effects)
                else:
                    self._complete_join(now_ms, effects)
        elif key == COMMIT_TIMER:
            self._commit_write(now_ms, effects)
        elif key == SYNC_TIMER:
            generation = self._sync_timer_generation
            self._sync_timer_generation = None
            if generation is not None:
                self._expire_pending_sync(generation, now_ms, effects)
        else:
            raise ValueError(f"group {self.group_id!r}: unknown timer key {key!r}")
        return effects

    def unload(self, now_ms: int) -> list[Effect]:
        """The coordinator gives the group up (partition emigration): go Dead.

        Parked JoinGroups and SyncGroups are answered NOT_COORDINATOR (Kafka
        ``GroupMetadataManager#onUnloaded``), every timer is cancelled, and every later
        request is answered COORDINATOR_NOT_AVAILABLE. Dead is terminal. The group lives on
        in :meth:`stored_record`, from which the next coordinator is built (:meth:`load`): its
        last *committed* record (a leader's record still held by :attr:`write_latency_ms` is
        dropped).
        """
        effects: list[Effect] = []
        self._transition(_DEAD, now_ms, effects)
        for mid in self._java_order():
            m = self._members[mid]
            self._complete_join_future(
                m, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=mid), effects
            )
            self._complete_sync_future(m, SyncGroupResponse(ErrorCode.NOT_COORDINATOR), effects)
            effects.append(CancelTimer(m.hb_key))
        for mid in self._pending:
            effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
        self._cancel_join_timer(effects)
        self._cancel_sync_timer(effects)
        if self._uncommitted is not None:
            # A record never committed is not what the next coordinator loads.
            self._uncommitted = None
            effects.append(CancelTimer(COMMIT_TIMER))
        return effects

    # ------------------------------------------------------------------ Heartbeat

    def _heartbeat(self, source: str, req: HeartbeatRequest, now_ms: int) -> list[Effect]:
        # GroupMetadataManager#classicGroupHeartbeat: member, generation, then state.
        state = self._state
        corr = req.correlation_id
        if req.group_id != self.group_id or state is _DEAD:
            error = self._request_error(req.group_id, req.member_id)
            return [Send(source, HeartbeatResponse(error, corr))]
        invalid = self._validate_member(req.member_id, req.group_instance_id)
        if invalid is not None:
            return [Send(source, HeartbeatResponse(invalid, corr))]
        m = self._members[req.member_id]
        if req.generation_id != self._generation:
            return [Send(source, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION, corr))]
        if state is _EMPTY:
            return [Send(source, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID, corr))]
        deadline = self.extend_session(req.member_id, now_ms)
        error = ErrorCode.REBALANCE_IN_PROGRESS if state is _PREPARING else ErrorCode.NONE
        return [SetTimer(m.hb_key, deadline), Send(source, HeartbeatResponse(error, corr))]

    # ------------------------------------------------------------------ steady heartbeats
    #
    # The engine's heartbeat replay (scenarios/sim/fastpath) carries out the Heartbeats of a
    # Stable group's valid members through these, without effects: each is answered NONE and
    # pushes the member's session deadline back (timer heartbeat_key(member id)). Anything
    # else goes through handle.

    def heartbeat_steady(self, request: HeartbeatRequest) -> bool:
        """True when ``request`` would be answered NONE and change nothing but its member's
        session deadline (:meth:`extend_session`): it is for this group, the group is Stable
        and the member valid in the request's generation (``classicGroupHeartbeat``'s
        checks). Its correlation id does not matter."""
        return (
            request.group_id == self.group_id
            and self._state is _STABLE
            and request.generation_id == self._generation
            and self._validate_member(request.member_id, request.group_instance_id) is None
        )

    def extend_session(self, member_id: str, now_ms: int) -> int:
        """A steady Heartbeat (:meth:`heartbeat_steady`) of ``member_id`` arrives at
        ``now_ms``: its session deadline moves to ``now_ms`` + its session timeout, and its
        timer ``heartbeat_key(member_id)`` re-arms there, as :meth:`handle` does (the
        answer is NONE); returns the deadline (virtual ms).

        This is ``rescheduleClassicGroupMemberHeartbeat`` of every Heartbeat that passes
        ``classicGroupHeartbeat``'s checks (:meth:`handle` calls it too).

        Raises:
            KeyError: ``member_id`` is not a member.
        """
        m = self._members[member_id]
        deadline = m.hb_deadline = now_ms + m.session_timeout_ms
        return deadline

    def session_deadlines(self) -> list[tuple[str, int]]:
        """Every member's session deadline: (member id, virtual ms), by member id."""
        return sorted((mid, m.hb_deadline) for mid, m in self._members.items())

    def shift_sessions(self, dt_ms: int) -> None:
        """Move every member's session deadline ``dt_ms`` later (the engine skipped whole
        heartbeat periods of a quiet group, every time in it shifted alike; the timers move
        with the engine's)."""
        for m in self._members.values():
            m.hb_deadline += dt_ms

    def _request_error(self, group_id: str, member_id: str) -> ErrorCode:
        """The error of a SyncGroup/Heartbeat that fails before member validation passes."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group_id != self.group_id:
            return ErrorCode.NOT_COORDINATOR
        if self._state is _DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.UNKNOWN_MEMBER_ID

    # ------------------------------------------------------------------ JoinGroup

    def _join(self, source: str, req: JoinGroupRequest, now_ms: int) -> list[Effect]:
        # GroupCoordinatorService#joinGroup, then GroupMetadataManager#classicGroupJoin.
        effects: list[Effect] = []
        mid = req.member_id
        cfg = self.config
        error: ErrorCode | None = None
        if not req.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif req.group_id != self.group_id:
            error = ErrorCode.NOT_COORDINATOR
        elif not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        elif self._state is _DEAD:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif mid and not self._exists:
            error = ErrorCode.UNKNOWN_MEMBER_ID  # getOrMaybeCreateClassicGroup: no such group
        if error is not None:
            effects.append(Send(source, JoinGroupResponse(error, member_id=mid)))
            return effects
        is_new_group = not self._exists
        if is_new_group:
            self._state_ms = now_ms  # ClassicGroup's constructor
        self._exists = True
        if not self._accept_joining_member(mid):
            self._remove(mid, "max_size", effects)
            effects.append(Send(source, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED)))
        elif not mid:
            self._join_new_member(source, req, now_ms, effects)
        else:
            self._join_existing_member(source, req, now_ms, effects)
        if is_new_group:
            # classicGroupJoin: a newly created group whose join wrote nothing is committed
            # with an empty group record (newEmptyGroupMetadataRecord).
            self._store_empty(now_ms)
        return effects

    def _accept_joining_member(self, mid: str) -> bool:
        """``GroupMetadataManager#acceptJoiningMember`` (group.max.size)."""
        state = self._state
        if state is _EMPTY or state is _DEAD:
            return True
        m = self._members.get(mid)
        if state is _PREPARING:
            return (m is not None and m.join_source is not None) or (
                self._num_awaiting_join < self.config.max_size
            )
        return m is not None or len(self._members) < self.config.max_size

    def _supports_protocols(
        self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
    ) -> bool:
        """``ClassicGroup#supportsProtocols``."""
        if self._state is _EMPTY:
            return bool(protocol_type) and bool(protocols)
        n = len(self._members)
        supported = self._supported
        return protocol_type == self._protocol_type and any(
            supported.get(name, 0) == n for name, _ in protocols
        )

    def _join_new_member(
        self, source: str, req: JoinGroupRequest, now_ms: int, effects: list[Effect]
    ) -> None:
        # classicGroupJoinNewMember / classicGroupJoinNewDynamicMember.
        if not self._supports_protocols(req.protocol_type, req.protocols):
            effects.append(Send(source, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)))
            return
        iid = req.group_instance_id
        # ClassicGroup#generateMemberId: "<group.instance.id or client.id>-<uuid>".
        new_id = self._new_member_id(req.client_id if iid is None else iid)
        if iid is not None:
            # classicGroupJoinNewStaticMember: never MEMBER_ID_REQUIRED; a known instance id
            # replaces its previous member id.
            old_id = self._static.get(iid)
            if old_id is not None:
                self._update_static_member_then_rebalance_or_complete_join(
                    source, req, old_id, new_id, now_ms, effects
                )
            else:
                self._add_member_then_rebalance_or_complete_join(
                    source, req, new_id, now_ms, effects
                )
        elif req.api_version >= 4:  # KIP-394: JoinGroupRequest.requiresKnownMemberId
            deadline = now_ms + req.session_timeout_ms
            self._pending[new_id] = _Pending(source, deadline)
            effects.append(SetTimer(HEARTBEAT_PREFIX + new_id, deadline))
            # what KIP-394's pending-member rules are judged by (member_pending_kept/listed)
            effects.append(
                Log(
                    "member_pending",
                    {
                        "member": source,
                        "member_id": new_id,
                        "session_timeout_ms": req.session_timeout_ms,
                    },
                )
            )
            effects.append(
                Send(source, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            )
        else:
            self._add_member_then_rebalance_or_complete_join(source, req, new_id, now_ms, effects)

    def _join_existing_member(
        self, source: str, req: JoinGroupRequest, now_ms: int, effects: list[Effect]
    ) -> None:
        # classicGroupJoinExistingMember.
        mid = req.member_id
        if not self._supports_protocols(req.protocol_type, req.protocols):
            effects.append(
                Send(
                    source,
                    JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=mid),
                )
            )
            return
        if mid in self._pending:
            if req.group_instance_id is not None:
                raise IllegalGroupState(
                    f"group {self.group_id!r}: unexpected JoinGroup with group_instance_id="
                    f"{req.group_instance_id!r} for pending member {mid!r}"
                )
            self._add_member_then_rebalance_or_complete_join(source, req, mid, now_ms, effects)
            return
        error = self._validate_member(mid, req.group_instance_id)
        if error is not None:
            effects.append(Send(source, JoinGroupResponse(error, member_id=mid)))
            return
        m = self._members[mid]
        state = self._state
        if state is _EMPTY:
            effects.append(
                Send(source, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=mid))
            )
        elif state is _PREPARING:
            self._update_member_then_rebalance_or_complete_join(source, m, req, now_ms, effects)
        elif state is _COMPLETING:
            if m.protocols == req.protocols:
                # Same metadata (a lost JoinGroup response): return the current generation.
                effects.append(Send(source, self._current_join_response(m, with_members=True)))
            else:
                self._update_member_then_rebalance_or_complete_join(source, m, req, now_ms, effects)
        else:  # Stable
            if mid == self._leader_id or m.protocols != req.protocols:
                self._update_member_then_rebalance_or_complete_join(source, m, req, now_ms, effects)
            else:
                effects.append(Send(source, self._current_join_response(m, with_members=False)))

    def _validate_member(self, mid: str, group_instance_id: str | None) -> ErrorCode | None:
        """``ClassicGroup#validateMember``: an unknown instance id or member id is
        UNKNOWN_MEMBER_ID; an instance id mapped to another member id is FENCED_INSTANCE_ID."""
        if group_instance_id is not None:
            existing = self._static.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != mid:
                return ErrorCode.FENCED_INSTANCE_ID
        if mid not in self._members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _replace_static_member(
        self, iid: str, old_id: str, new_id: str, effects: list[Effect]
    ) -> _Member:
        """``ClassicGroup#replaceStaticMember``: the member record moves to ``new_id`` (same
        client id, address, timeouts, protocols and assignment; leadership follows); a parked
        JoinGroup or SyncGroup of ``old_id`` is answered FENCED_INSTANCE_ID. The old id's
        heartbeat timer is left to expire harmlessly; its pending-sync entry stays."""
        old = self._members.pop(old_id)
        self._complete_join_future(
            old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id), effects
        )
        self._complete_sync_future(old, _SYNC_FENCED, effects)
        m = _Member.__new__(_Member)
        for slot in _Member.__slots__:
            setattr(m, slot, getattr(old, slot))
        m.member_id = new_id
        m.hb_key = HEARTBEAT_PREFIX + new_id
        m.is_new = False
        m.join_source = None
        m.sync_source = None
        self._members[new_id] = m
        self._order = None
        if self._leader_id == old_id:
            self._leader_id = new_id
        self._static[iid] = new_id
        return m

    def _update_static_member_then_rebalance_or_complete_join(
        self,
        source: str,
        req: JoinGroupRequest,
        old_id: str,
        new_id: str,
        now_ms: int,
        effects: list[Effect],
    ) -> None:
        # GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin.
        iid = req.group_instance_id
        assert iid is not None
        state = self._state
        if state is _EMPTY or state is _DEAD:
            raise IllegalGroupState(
                f"group {self.group_id!r} was not supposed to be in the state {state.value} "
                f"when the unknown static member {iid!r} rejoins"
            )
        current_leader = self._leader_id
        m = self._replace_static_member(iid, old_id, new_id, effects)
        effects.append(
            Log(
                "member_replaced",
                {"member": source, "member_id": new_id, "old_member_id": old_id},
            )
        )
        self._reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
        self._update_member(source, m, req)
        if state is _STABLE:
            if self._protocol_name == self._select_protocol():
                # The selected protocol stays: no rebalance. The group record with the new
                # member id is written (writes never fail here) and the joiner answered.
                self._store(now_ms)
                if req.api_version >= 9:  # JoinGroupRequest.supportsSkippingAssignment
                    is_leader = new_id == self._leader_id
                    response = JoinGroupResponse(
                        ErrorCode.NONE,
                        generation_id=self._generation,
                        protocol_type=self._protocol_type,
                        protocol_name=self._protocol_name,
                        leader=self._leader_id or "",
                        member_id=new_id,
                        members=self._leader_member_list() if is_leader else (),
                        skip_assignment=is_leader,
                    )
                else:
                    response = JoinGroupResponse(
                        ErrorCode.NONE,
                        generation_id=self._generation,
                        protocol_type=self._protocol_type,
                        protocol_name=self._protocol_name,
                        leader=current_leader or "",
                        member_id=new_id,
                    )
                self._complete_join_future(m, response, effects)
            else:
                self._maybe_prepare_rebalance_or_complete_join(now_ms, effects)
        elif state is _COMPLETING:
            # The leader may already hold an assignment keyed by the old member id.
            self._prepare_rebalance(now_ms, effects)
        else:
            self._maybe_complete_join_phase(now_ms, effects)

    def _current_join_response(self, m: _Member, with_members: bool) -> JoinGroupResponse:
        is_leader = m.member_id == self._leader_id
        return JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=self._generation,
            protocol_type=self._protocol_type,
            protocol_name=self._protocol_name,
            leader=self._leader_id or "",
            member_id=m.member_id,
            members=self._leader_member_list() if with_members and is_leader else (),
        )

    def _leader_member_list(self) -> tuple[JoinGroupResponseMember, ...]:
        """``ClassicGroup#currentClassicGroupMembers``: coordinator order, chosen protocol."""
        protocol = self._protocol_name
        assert protocol is not None
        members = self._members
        return tuple(
            JoinGroupResponseMember(
                mid, members[mid].group_instance_id, members[mid].metadata(protocol)
            )
            for mid in self._java_order()
        )

    def _add_member_then_rebalance_or_complete_join(
        self, source: str, req: JoinGroupRequest, mid: str, now_ms: int, effects: list[Effect]
    ) -> None:
        # GroupMetadataManager#addMemberThenRebalanceOrCompleteJoin.
        m = _Member(mid, source, req)
        m.is_new = True
        if self._state is _PREPARING and self._previous_state is _EMPTY:
            self._new_member_added = True
        self._add(m, source, effects)
        self._reschedule_heartbeat(m, now_ms, self.config.new_member_join_timeout_ms, effects)
        self._maybe_prepare_rebalance_or_complete_join(now_ms, effects)

    def _update_member_then_rebalance_or_complete_join(
        self,
        source: str,
        m: _Member,
        req: JoinGroupRequest,
        now_ms: int,
        effects: list[Effect],
    ) -> None:
        self._update_member(source, m, req)
        self._maybe_prepare_rebalance_or_complete_join(now_ms, effects)

    def _update_member(self, source: str, m: _Member, req: JoinGroupRequest) -> None:
        """``ClassicGroup#updateMember``: new protocols and timeouts, the JoinGroup parked (a
        parked JoinGroup of the member is replaced)."""
        self._change_supported(m.names, -1)
        m.protocols = req.protocols
        m.names = _names(req.protocols)
        self._change_supported(m.names, 1)
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.session_timeout_ms = req.session_timeout_ms
        m.source = source
        if m.join_source is None:
            self._num_awaiting_join += 1
        m.join_source = source

    # ------------------------------------------------------------------ rebalance machinery

    def _maybe_prepare_rebalance_or_complete_join(self, now_ms: int, effects: list[Effect]) -> None:
        state = self._state
        if state is _STABLE or state is _COMPLETING or state is _EMPTY:  # canRebalance
            self._prepare_rebalance(now_ms, effects)
        else:
            self._maybe_complete_join_phase(now_ms, effects)

    def _has_all_members_joined(self) -> bool:
        return len(self._members) == self._num_awaiting_join and not self._pending

    def _maybe_complete_join_phase(self, now_ms: int, effects: list[Effect]) -> None:
        if (
            self._state is _PREPARING
            and self._has_all_members_joined()
            and self._previous_state is not _EMPTY
        ):
            self._complete_join(now_ms, effects)

    def _prepare_rebalance(self, now_ms: int, effects: list[Effect]) -> None:
        # GroupMetadataManager#prepareRebalance.
        if self._state is _COMPLETING:
            for m in self._members.values():
                m.assignment = b""
            self._propagate_assignment(ErrorCode.REBALANCE_IN_PROGRESS, now_ms, effects)
        self._cancel_sync_timer(effects)
        self._pending_sync.clear()
        initial = self._state is _EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(self.rebalance_timeout_ms() - delay, 0)
            self._join_timer = ("initial", delay, remaining)
            effects.append(SetTimer(JOIN_TIMER, now_ms + delay))
        self._transition(_PREPARING, now_ms, effects)
        if not initial:
            # maybeCompleteJoinElseSchedule
            if self._has_all_members_joined():
                self._complete_join(now_ms, effects)
            else:
                self._join_timer = ("complete", 0, 0)
                effects.append(SetTimer(JOIN_TIMER, now_ms + self.rebalance_timeout_ms()))

    def _try_complete_initial_rebalance(
        self, delay_ms: int, remaining_ms: int, now_ms: int, effects: list[Effect]
    ) -> None:
        # GroupMetadataManager#tryCompleteInitialRebalanceElseSchedule.
        if self._new_member_added and remaining_ms != 0:
            self._new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._join_timer = ("initial", new_delay, new_remaining)
            effects.append(SetTimer(JOIN_TIMER, now_ms + new_delay))
        else:
            self._complete_join(now_ms, effects)

    def _complete_join(self, now_ms: int, effects: list[Effect]) -> None:
        # GroupMetadataManager#completeClassicGroupJoin.
        self._cancel_join_timer(effects)
        members = self._members
        # Static members that did not rejoin stay (KIP-345); only session expiry removes them.
        stragglers = [
            mid
            for mid in self._java_order()
            if members[mid].join_source is None and members[mid].group_instance_id is None
        ]
        for mid in stragglers:
            self._remove(mid, "not_rejoined", effects)
            effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
        if self._state is _DEAD:
            return
        if not self._maybe_elect_new_joined_leader() and members:
            # Only static stragglers can get here; kept for fidelity. The join phase gets
            # another rebalance timeout: logged, since it is what the phase's length is
            # judged by (join_phase_overran).
            self._join_timer = ("complete", 0, 0)
            timeout = self.rebalance_timeout_ms()
            effects.append(SetTimer(JOIN_TIMER, now_ms + timeout))
            effects.append(
                Log(
                    "join_rescheduled",
                    {"generation": self._generation, "rebalance_timeout_ms": timeout},
                )
            )
            return
        # ClassicGroup#initNextGeneration
        self._generation += 1
        if members:
            self._protocol_name = self._select_protocol()
            self._transition(_COMPLETING, now_ms, effects)
        else:
            self._protocol_name = None
            self._transition(_EMPTY, now_ms, effects)
            self._store(now_ms)  # completeClassicGroupJoin: the "empty" group record
        self._pending_sync.clear()
        order = self._java_order()
        leader_id = self._leader_id
        fields: dict[str, object] = {
            "generation": self._generation,
            "protocol": self._protocol_name,
            "leader": members[leader_id].source if leader_id is not None else None,
            "leader_id": leader_id,
            "members": [members[mid].source for mid in order],
            "member_ids": list(order),
        }
        if members:
            # the pending-sync deadline's length (schedulePendingSync): what pending_sync_kept
            # judges the generation's SyncGroups by
            fields["rebalance_timeout_ms"] = self.rebalance_timeout_ms()
        kept = [mid for mid in order if members[mid].join_source is None]
        if kept:
            # KIP-345 static members the join completed without (their JoinGroup answer is
            # their next rejoin's): what leader_not_rejoined judges maybeElectNewJoinedLeader by
            fields["not_rejoined"] = kept
        effects.append(Log("generation", fields))
        if not members:
            return
        leader_list = self._leader_member_list()
        rebalance_timeout = self.rebalance_timeout_ms()
        for mid in order:
            m = members[mid]
            response = JoinGroupResponse(
                ErrorCode.NONE,
                generation_id=self._generation,
                protocol_type=self._protocol_type,
                protocol_name=self._protocol_name,
                leader=leader_id or "",
                member_id=mid,
                members=leader_list if mid == leader_id else (),
            )
            self._complete_join_future(m, response, effects)
            self._reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
            m.is_new = False
            self._pending_sync[mid] = None
        # schedulePendingSync
        self._sync_timer_generation = self._generation
        effects.append(SetTimer(SYNC_TIMER, now_ms + rebalance_timeout))

    def _maybe_elect_new_joined_leader(self) -> bool:
        leader_id = self._leader_id
        if leader_id is None:
            return False
        if self._members[leader_id].join_source is not None:
            return True
        for mid in self._java_order():
            if self._members[mid].join_source is not None:
                self._leader_id = mid
                return True
        return False

    def _select_protocol(self) -> str:
        """``ClassicGroup#selectProtocol`` with the configured tie-break (see class doc).

        Raises:
            IllegalGroupState: the group has no members (Kafka's ``IllegalStateException``).
        """
        members = self._members
        n = len(members)
        if not n:
            raise IllegalGroupState(
                f"group {self.group_id!r}: cannot select a protocol without members"
            )
        candidates = {name for name, count in self._supported.items() if count == n}
        votes: dict[str, int] = {}
        for mid in self._java_order():
            # ClassicGroupMember#vote: first of its own protocols that is a candidate.
            vote = next(name for name in members[mid].names if name in candidates)
            votes[vote] = votes.get(vote, 0) + 1
        if self.config.protocol_tie_break == "java":
            # Stream.max over the votes HashMap keeps the first maximum it meets.
            best = ""
            best_votes = 0
            for name in hash_order(votes, string_hash):
                if votes[name] > best_votes:
                    best, best_votes = name, votes[name]
            return best
        top = max(votes.values())
        tied = {name for name, count in votes.items() if count == top}
        earliest = next(iter(members.values()))
        return next(name for name in earliest.names if name in tied)

    def _expire_pending_sync(self, generation: int, now_ms: int, effects: list[Effect]) -> None:
        # GroupMetadataManager#expirePendingSync.
        if generation != self._generation:
            return
        if self._state not in (_COMPLETING, _STABLE) or not self._pending_sync:
            return
        # Kafka walks a HashSet copy of the pending-sync set.
        ids = hash_order(
            self._pending_sync, string_hash, presized_capacity(len(self._pending_sync))
        )
        for mid in ids:
            self._remove(mid, "sync_timeout", effects)
            effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
        self._prepare_rebalance(now_ms, effects)

    def _expire_heartbeat(self, mid: str, now_ms: int, effects: list[Effect]) -> None:
        # GroupMetadataManager#expireClassicGroupMemberHeartbeat.
        if self._state is _DEAD:
            return
        pending = self._pending.get(mid)
        if pending is not None:
            if now_ms < pending.deadline:
                return
            del self._pending[mid]
            effects.append(_pending_removed(pending.source, mid, "session_timeout"))
            # removePendingMemberAndUpdateClassicGroup: completes the join directly, even
            # during the initial rebalance (no previousState check, unlike maybeCompleteJoinPhase).
            if self._state is _PREPARING and self._has_all_members_joined():
                self._complete_join(now_ms, effects)
            return
        m = self._members.get(mid)
        if m is None or now_ms < m.hb_deadline:
            return
        # ClassicGroupMember#hasSatisfiedHeartbeat
        if not m.is_new and (m.join_source is not None or m.sync_source is not None):
            return
        self._remove_member_and_update_group(m, "session_timeout", now_ms, effects)

    def _remove_member_and_update_group(
        self, m: _Member, reason: str, now_ms: int, effects: list[Effect]
    ) -> None:
        # GroupMetadataManager#removeMemberAndUpdateClassicGroup.
        self._complete_join_future(m, _JOIN_UNKNOWN, effects)
        self._remove(m.member_id, reason, effects)
        state = self._state
        if state is _STABLE or state is _COMPLETING:
            self._maybe_prepare_rebalance_or_complete_join(now_ms, effects)
        elif state is _PREPARING and self._has_all_members_joined():
            # Kafka completes the join directly here, even during the initial rebalance.
            self._complete_join(now_ms, effects)

    # ------------------------------------------------------------------ SyncGroup

    def _sync(self, source: str, req: SyncGroupRequest, now_ms: int) -> list[Effect]:
        # GroupMetadataManager#classicGroupSync / validateSyncGroup.
        state = self._state
        m = self._members.get(req.member_id)
        invalid = self._validate_member(req.member_id, req.group_instance_id)
        error: ErrorCode | None
        if req.group_id != self.group_id or state is _DEAD:
            error = self._request_error(req.group_id, req.member_id)
        elif invalid is not None:
            error = invalid
        elif req.generation_id != self._generation:
            error = ErrorCode.ILLEGAL_GENERATION
        elif _inconsistent(req.protocol_type, self._protocol_type) or _inconsistent(
            req.protocol_name, self._protocol_name
        ):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        elif state is _EMPTY:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif state is _PREPARING:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        else:
            error = None
        if error is not None:
            return [Send(source, SyncGroupResponse(error))]
        assert m is not None
        effects: list[Effect] = []
        if state is _COMPLETING:
            m.sync_source = source  # a parked SyncGroup of the member is replaced
            self._remove_pending_sync_member(m.member_id, effects)
            if m.member_id == self._leader_id:
                # classicGroupSyncToLeader: the group record with every member's assignment
                # (missing ones empty) is appended; writes never fail here.
                assignments = dict(req.assignments)
                if self.write_latency_ms <= 0:
                    self._complete_sync_write(assignments, now_ms, effects)
                else:
                    self._uncommitted = (
                        self._generation,
                        assignments,
                        self._group_record(assignments),
                    )
                    effects.append(SetTimer(COMMIT_TIMER, now_ms + self.write_latency_ms))
        else:  # Stable
            self._remove_pending_sync_member(m.member_id, effects)
            effects.append(
                Send(
                    source,
                    SyncGroupResponse(
                        ErrorCode.NONE, self._protocol_type, self._protocol_name, m.assignment
                    ),
                )
            )
        return effects

    def _complete_sync_write(
        self, assignments: dict[str, bytes], now_ms: int, effects: list[Effect]
    ) -> None:
        # The append future's completion: assignments set and propagated, the group Stable.
        for other in self._members.values():
            other.assignment = assignments.get(other.member_id, b"")
        self._store(now_ms)
        self._propagate_assignment(ErrorCode.NONE, now_ms, effects)
        self._transition(_STABLE, now_ms, effects)

    def _commit_write(self, now_ms: int, effects: list[Effect]) -> None:
        """The held leader's record is committed (``CoordinatorRuntime``: the high watermark
        passed it). It is now what a next coordinator loads; the SyncGroup's completion runs
        only if the group is still CompletingRebalance at that generation (``GroupMetadataManager
        #classicGroupSyncToLeader``'s append future: a member that joined meanwhile sent it back
        to PreparingRebalance, and the parked SyncGroups were answered REBALANCE_IN_PROGRESS)."""
        pending = self._uncommitted
        self._uncommitted = None
        if pending is None:
            return
        generation, assignments, record = pending
        if self._state is _COMPLETING and self._generation == generation:
            self._complete_sync_write(assignments, now_ms, effects)
        else:
            self._record = record

    def _remove_pending_sync_member(self, mid: str, effects: list[Effect]) -> None:
        self._pending_sync.pop(mid, None)
        state = self._state
        if state is _COMPLETING or state is _STABLE:
            if not self._pending_sync:
                if self._sync_timer_generation is not None:
                    # every member of the generation sent SyncGroup in time (KIP-814)
                    effects.append(Log("pending_sync_complete", {"generation": self._generation}))
                self._cancel_sync_timer(effects)
        else:
            self._cancel_sync_timer(effects)

    def _propagate_assignment(self, error: ErrorCode, now_ms: int, effects: list[Effect]) -> None:
        # GroupMetadataManager#propagateAssignment: answer parked SyncGroups, reset sessions.
        # The protocol type and name go only with a successful answer.
        ok = error is ErrorCode.NONE
        protocol_type = self._protocol_type if ok else None
        protocol_name = self._protocol_name if ok else None
        for mid in self._java_order():
            m = self._members[mid]
            response = SyncGroupResponse(error, protocol_type, protocol_name, m.assignment)
            if self._complete_sync_future(m, response, effects):
                self._reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)

    # ------------------------------------------------------------------ LeaveGroup

    def _leave(self, source: str, req: LeaveGroupRequest, now_ms: int) -> list[Effect]:
        # GroupMetadataManager#classicGroupLeave / classicGroupLeaveToClassicGroup: each
        # identity is handled (and removed) in request order.
        if not req.group_id:
            return [Send(source, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID))]
        if req.group_id != self.group_id:
            return [Send(source, LeaveGroupResponse(ErrorCode.NOT_COORDINATOR))]
        if not self._exists:
            # "Group not found": the manager throws UnknownMemberIdException, which
            # GroupCoordinatorService#leaveGroup answers with no top-level error and every
            # leaving member UNKNOWN_MEMBER_ID.
            unknown = tuple(
                LeaveGroupMemberResponse(
                    i.member_id, i.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID
                )
                for i in req.identities()
            )
            return [
                Send(
                    source,
                    LeaveGroupResponse(
                        ErrorCode.NONE, tuple((a.member_id, a.error) for a in unknown), unknown
                    ),
                )
            ]
        if self._state is _DEAD:
            return [Send(source, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))]
        effects: list[Effect] = []
        answers: list[LeaveGroupMemberResponse] = []
        for ident in req.identities():
            mid, iid = ident.member_id, ident.group_instance_id
            error: ErrorCode | None
            if not mid:
                # Administrative removal of a static member by its instance id.
                static_id = self._static.get(iid) if iid is not None else None
                if static_id is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_current_member(static_id, effects)
                    error = None
            elif mid in self._pending:
                self._remove(mid, "leave", effects)
                effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
                error = None
            else:
                error = self._validate_member(mid, iid)
                if error is None:
                    self._remove_current_member(mid, effects)
            answers.append(LeaveGroupMemberResponse(mid, iid, error or ErrorCode.NONE))
        if any(a.error is ErrorCode.NONE for a in answers):
            state = self._state
            if state is _STABLE or state is _COMPLETING:
                self._maybe_prepare_rebalance_or_complete_join(now_ms, effects)
            elif state is _PREPARING:
                self._maybe_complete_join_phase(now_ms, effects)
        effects.append(
            Send(
                source,
                LeaveGroupResponse(
                    ErrorCode.NONE,
                    tuple((a.member_id, a.error) for a in answers),
                    tuple(answers),
                ),
            )
        )
        return effects

    def _remove_current_member(self, mid: str, effects: list[Effect]) -> None:
        """``removeCurrentMemberFromClassicGroup``: cancel the heartbeat, answer a parked
        JoinGroup UNKNOWN_MEMBER_ID, remove the member (a parked SyncGroup goes with it)."""
        m = self._members[mid]
        effects.append(CancelTimer(m.hb_key))
        self._complete_join_future(m, _JOIN_UNKNOWN, effects)
        self._remove(mid, "leave", effects)

    # ------------------------------------------------------------------ ClassicGroup helpers

    def _java_order(self) -> list[str]:
        """Member ids in Java ``HashMap`` iteration order (cached until membership changes)."""
        order = self._order
        if order is None:
            order = hash_order(self._members, string_hash, grown_capacity(self._max_members))
            self._order = order
        return order

    def _change_supported(self, names: tuple[str, ...], delta: int) -> None:
        supported = self._supported
        for name in names:
            count = supported.get(name, 0) + delta
            if count:
                supported[name] = count
            else:
                del supported[name]

    def _add(self, m: _Member, join_source: str, effects: list[Effect]) -> None:
        """``ClassicGroup#add``: the member arrives with its JoinGroup parked."""
        mid = m.member_id
        if not self._members:
            self._protocol_type = m.protocol_type
        self._members[mid] = m
        self._max_members = max(self._max_members, len(self._members))
        self._order = None
        self._change_supported(m.names, 1)
        m.join_source = join_source
        self._num_awaiting_join += 1
        if self._leader_id is None:
            self._leader_id = mid
        self._pending.pop(mid, None)
        if m.group_instance_id is not None:
            self._static[m.group_instance_id] = mid
        effects.append(Log("member_added", {"member": m.source, "member_id": mid}))

    def _remove(self, mid: str, reason: str, effects: list[Effect]) -> None:
        """``ClassicGroup#remove``: drop a member or pending member; a parked request of it
        is not answered here."""
        m = self._members.pop(mid, None)
        if m is not None:
            self._order = None
            self._change_supported(m.names, -1)
            if m.join_source is not None:
                self._num_awaiting_join -= 1
            if m.group_instance_id is not None:
                self._static.pop(m.group_instance_id, None)
            # with the timeouts it was held to (its JoinGroup's): what a removal is judged by
            fields: dict[str, object] = {
                "member": m.source,
                "member_id": mid,
                "reason": reason,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
            }
            effects.append(Log("member_removed", fields))
        if self._leader_id == mid:
            order = self._java_order()
            self._leader_id = order[0] if order else None
        pending = self._pending.pop(mid, None)
        if pending is not None:
            effects.append(_pending_removed(pending.source, mid, reason))
        self._pending_sync.pop(mid, None)

    def _complete_join_future(
        self, m: _Member, response: JoinGroupResponse, effects: list[Effect]
    ) -> bool:
        dest = m.join_source
        if dest is None:
            return False
        m.join_source = None
        self._num_awaiting_join -= 1
        effects.append(Send(dest, response))
        return True

    def _complete_sync_future(
        self, m: _Member, response: SyncGroupResponse, effects: list[Effect]
    ) -> bool:
        dest = m.sync_source
        if dest is None:
            return False
        m.sync_source = None
        effects.append(Send(dest, response))
        return True

    def _reschedule_heartbeat(
        self, m: _Member, now_ms: int, timeout_ms: int, effects: list[Effect]
    ) -> None:
        m.hb_deadline = now_ms + timeout_ms
        effects.append(SetTimer(m.hb_key, m.hb_deadline))

    def _cancel_join_timer(self, effects: list[Effect]) -> None:
        if self._join_timer is not None:
            self._join_timer = None
            effects.append(CancelTimer(JOIN_TIMER))

    def _cancel_sync_timer(self, effects: list[Effect]) -> None:
        if self._sync_timer_generation is not None:
            self._sync_timer_generation = None
            effects.append(CancelTimer(SYNC_TIMER))

    def _transition(self, target: GroupState, now_ms: int, effects: list[Effect]) -> None:
        """``ClassicGroup#transitionTo``: assert against Kafka's table, log the move, note
        when the state was entered (``currentStateTimestamp``)."""
        check_transition(self.group_id, self._state, target)
        fields: dict[str, object] = {
            "from": self._state.value,
            "to": target.value,
            "generation": self._generation,
        }
        if target is _PREPARING:
            # What the join phase's length is judged by (KIP-62, join_phase_overran and
            # join_completed_early): the group's rebalance timeout as the phase begins — the
            # members' maximum (ClassicGroup#rebalanceTimeoutMs), taken here from the members
            # themselves — and, from Empty, the initial delay (InitialDelayedJoin).
            fields["rebalance_timeout_ms"] = max(
                (m.rebalance_timeout_ms for m in self._members.values()), default=0
            )
            if self._state is _EMPTY:
                fields["initial_rebalance_delay_ms"] = self.config.initial_rebalance_delay_ms
        effects.append(Log("group_state", fields))
        self._previous_state = self._state
        self._state = target
        self._state_ms = now_ms


def _pending_removed(source: str, member_id: str, reason: str) -> Log:
    """The ``member_pending_removed`` record: a KIP-394 pending member id is forgotten
    (``reason``: ``session_timeout`` when it did not rejoin in time, ``leave``,
    ``max_size``)."""
    return Log(
        "member_pending_removed", {"member": source, "member_id": member_id, "reason": reason}
    )


def _inconsistent(requested: str | None, current: str | None) -> bool:
    """``isProtocolInconsistent``: both set and different."""
    return requested is not None and current is not None and requested != current
