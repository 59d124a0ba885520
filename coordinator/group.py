"""Kafka's classic group coordinator for one group, as a pure (sans-IO) state machine.

Follows ``GroupMetadataManager`` (classicGroupJoin, classicGroupSync, classicGroupHeartbeat,
classicGroupLeave and their helpers), ``ClassicGroup``, ``ClassicGroupMember`` and
``ClassicGroupState`` of Apache Kafka 4.0 (docs/coordinator-fidelity.md). Nothing
here reads a clock, draws random numbers or does I/O: :meth:`GroupCoordinator.handle` and
:meth:`GroupCoordinator.fire` take the virtual time and return effects.

:class:`GroupCoordinator` is the public face: it loads and unloads the group, dispatches
requests and timers, and gives read-only views. The work is done by one module per job, as
plain functions over the group's state (:class:`~coordinator.classic_group.ClassicGroup`, the
state and member table): :mod:`coordinator.join` (JoinGroup, static members),
:mod:`coordinator.sync` (SyncGroup), :mod:`coordinator.session` (Heartbeat, LeaveGroup,
session timers), :mod:`coordinator.rebalance` (join phases, generations, pending syncs),
:mod:`coordinator.vote` (the protocol vote) and :mod:`coordinator.views` (snapshots).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.effects import CancelTimer, Effect, Log
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)

from . import join, rebalance, session, sync, views
from .classic_group import (
    COMMIT_TIMER,
    HEARTBEAT_PREFIX,
    JOIN_TIMER,
    SYNC_TIMER,
    ClassicGroup,
    IllegalGroupState,
    Member,
    heartbeat_key,
)
from .config import CoordinatorConfig
from .record import GroupRecord, GroupRecordMember
from .state import DEAD, PREPARING, STABLE, GroupState
from .views import DescribedGroup, DescribedMember, MemberView

__all__ = [
    "GroupCoordinator",
    "IllegalGroupState",
    "GroupRecord",
    "GroupRecordMember",
    "MemberView",
    "DescribedGroup",
    "DescribedMember",
    "JOIN_TIMER",
    "SYNC_TIMER",
    "COMMIT_TIMER",
    "HEARTBEAT_PREFIX",
    "heartbeat_key",
]


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
    * **Protocol vote** (``ClassicGroup#selectProtocol``, :mod:`coordinator.vote`): each
      member votes, in coordinator order, for its first protocol every member supports; most
      votes wins, ties broken by ``protocol_tie_break``. Connect workers advertise suffixes
      of one list, so ties cannot happen in a pure Connect group.
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
        self._group = ClassicGroup(group_id, config, new_member_id)
        self._handlers: dict[type, Callable[[ClassicGroup, str, Any, int], list[Effect]]] = {
            HeartbeatRequest: session.heartbeat,
            JoinGroupRequest: join.join,
            SyncGroupRequest: sync.sync,
            LeaveGroupRequest: session.leave,
        }

    @property
    def group(self) -> ClassicGroup:
        """The group's state and member table, which the handler modules work on (for tests
        and tools that drive a handler or a ``ClassicGroup`` method directly)."""
        return self._group

    @property
    def write_latency_ms(self) -> int:
        """How long (virtual ms) the leader's SyncGroup record takes to commit: 0 (the
        default) commits at once, as with one replica of ``__consumer_offsets``; a replicated
        partition commits when the followers have fetched it (``replay --conform`` sets the
        latency the trace shows). Meanwhile the group stays CompletingRebalance."""
        return self._group.write_latency_ms

    @write_latency_ms.setter
    def write_latency_ms(self, value: int) -> None:
        self._group.write_latency_ms = value

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
        g = self._group
        effects: list[Effect] = []
        if record is not None:
            if record.group_id != group_id:
                raise ValueError(
                    f"group {group_id!r}: cannot load a record of group {record.group_id!r}"
                )
            g.record = record
            g.exists = True
            g.state_ms = record.written_ms
            g.generation = record.generation
            g.protocol_type = record.protocol_type
            g.protocol_name = record.protocol
            g.previous_state = DEAD
            protocol = record.protocol
            for rm in record.members:
                assert protocol is not None, "a record with members names its protocol"
                # replay: ClassicGroupMember with plainProtocolSet(protocol, subscription)
                m = Member(
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
                g.restore(m)
            members = g.members
            if members:
                g.max_members = len(members)
                g.supported = {protocol: len(members)} if protocol is not None else {}
                g.leader_id = record.leader if record.leader in members else None
                if g.leader_id is None:  # not written by this coordinator; be safe
                    g.leader_id = g.java_order()[0]
                g.state = STABLE
        self._log_loaded(effects)
        for mid in g.java_order():
            m = g.members[mid]
            g.reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
        if len(g.members) > config.max_size:
            # onLoaded: "Freshly-loaded group is over capacity" (group.max.size changed).
            rebalance.prepare_rebalance(g, now_ms, effects)
        return self, effects

    def _log_loaded(self, effects: list[Effect]) -> None:
        g = self._group
        members = g.members
        order = g.java_order()
        leader_id = g.leader_id
        effects.append(
            Log(
                "group_loaded",
                {
                    "generation": g.generation,
                    "protocol": g.protocol_name,
                    "state": g.state.value,
                    "leader": members[leader_id].source if leader_id is not None else None,
                    "leader_id": leader_id,
                    "members": [members[mid].source for mid in order],
                    "member_ids": list(order),
                },
            )
        )

    # ------------------------------------------------------------------ read-only views

    @property
    def state(self) -> GroupState:
        """Current state (``ClassicGroup#currentState``)."""
        return self._group.state

    @property
    def previous_state(self) -> GroupState:
        """State before the last transition (``ClassicGroup#previousState``)."""
        return self._group.previous_state

    @property
    def state_since_ms(self) -> int:
        """Virtual time the group entered its current state (``ClassicGroup
        #currentStateTimestamp``); the group record carries it as ``written_ms``."""
        return self._group.state_ms

    @property
    def generation_id(self) -> int:
        """Current generation; 0 before the first join completes."""
        return self._group.generation

    @property
    def protocol_type(self) -> str | None:
        """Protocol type fixed by the first member added to the empty group (``"connect"``)."""
        return self._group.protocol_type

    @property
    def protocol_name(self) -> str | None:
        """Protocol chosen by the vote for this generation; ``None`` when Empty."""
        return self._group.protocol_name

    @property
    def leader_id(self) -> str | None:
        """Member id of the leader, ``None`` when there are no members."""
        return self._group.leader_id

    def members(self) -> list[MemberView]:
        """Snapshots of all members, in coordinator (Java HashMap) order."""
        g = self._group
        return [views.member_view(g, g.members[mid]) for mid in g.java_order()]

    def join_counts(self) -> tuple[int, int]:
        """How many members the group has (``ClassicGroup#size``) and how many of them await
        a JoinGroup answer (``MemberView.awaiting_join``): what counting :meth:`members` gives,
        without a snapshot of every member (the wire tap asks at every JoinGroup of a
        bounded group: ``scenarios.sim.wire_tap.bounded_join``)."""
        members = self._group.members
        return len(members), sum(1 for m in members.values() if m.join_source is not None)

    def member(self, member_id: str) -> MemberView | None:
        """Snapshot of one member, or ``None`` if it is not in the group."""
        g = self._group
        m = g.members.get(member_id)
        return None if m is None else views.member_view(g, m)

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id a static member's instance id maps to (``ClassicGroup
        #staticMemberId``), ``None`` if no member has that instance id."""
        return self._group.static.get(group_instance_id)

    def pending_member_ids(self) -> list[str]:
        """KIP-394 pending member ids (handed out, not yet rejoined), in hand-out order."""
        return list(self._group.pending)

    def stored_record(self) -> GroupRecord | None:
        """The last group metadata record this coordinator wrote (or loaded), ``None`` if the
        group was never stored. This is what a coordinator taking the partition over
        loads (:meth:`load`)."""
        return self._group.record

    def describe(self) -> DescribedGroup:
        """What DescribeGroups answers for this group (:func:`coordinator.views.describe`,
        ``GroupMetadataManager#describeGroups``)."""
        return views.describe(self._group)

    def rebalance_timeout_ms(self) -> int:
        """The group rebalance timeout: max over members, 0 without members
        (:meth:`ClassicGroup.rebalance_timeout_ms`)."""
        return self._group.rebalance_timeout_ms()

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
        return handler(self._group, source, request, now_ms)

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
        g = self._group
        effects: list[Effect] = []
        if key.startswith(HEARTBEAT_PREFIX):
            session.expire_heartbeat(g, key[len(HEARTBEAT_PREFIX) :], now_ms, effects)
        elif key == JOIN_TIMER:
            timer = g.join_timer
            g.join_timer = None
            if timer is not None and g.state is PREPARING:
                kind, delay_ms, remaining_ms = timer
                if kind == "initial":
                    rebalance.try_complete_initial_rebalance(
                        g, delay_ms, remaining_ms, now_ms, effects
                    )
                else:
                    rebalance.complete_join(g, now_ms, effects)
        elif key == COMMIT_TIMER:
            sync.commit_write(g, now_ms, effects)
        elif key == SYNC_TIMER:
            generation = g.sync_timer_generation
            g.sync_timer_generation = None
            if generation is not None:
                rebalance.expire_pending_sync(g, generation, now_ms, effects)
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
        g = self._group
        effects: list[Effect] = []
        g.transition(DEAD, now_ms, effects)
        for mid in g.java_order():
            m = g.members[mid]
            g.complete_join_future(
                m, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=mid), effects
            )
            g.complete_sync_future(m, SyncGroupResponse(ErrorCode.NOT_COORDINATOR), effects)
            effects.append(CancelTimer(m.hb_key))
        for mid in g.pending:
            effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
        g.cancel_join_timer(effects)
        g.cancel_sync_timer(effects)
        if g.uncommitted is not None:
            # A record never committed is not what the next coordinator loads.
            g.uncommitted = None
            effects.append(CancelTimer(COMMIT_TIMER))
        return effects

    # ------------------------------------------------------------------ steady heartbeats
    #
    # The engine's heartbeat replay (scenarios/sim/fastpath) carries out the Heartbeats of a
    # Stable group's valid members through these, without effects: each is answered NONE and
    # pushes the member's session deadline back (timer heartbeat_key(member id)). Anything
    # else goes through handle (coordinator.session.heartbeat).

    def heartbeat_steady(self, request: HeartbeatRequest) -> bool:
        """True when ``request`` would be answered NONE and change nothing but its member's
        session deadline (:meth:`extend_session`): it is for this group, the group is Stable
        and the member valid in the request's generation (``classicGroupHeartbeat``'s
        checks). Its correlation id does not matter."""
        g = self._group
        return (
            request.group_id == self.group_id
            and g.state is STABLE
            and request.generation_id == g.generation
            and g.validate_member(request.member_id, request.group_instance_id) is None
        )

    def extend_session(self, member_id: str, now_ms: int) -> int:
        """A steady Heartbeat (:meth:`heartbeat_steady`) of ``member_id`` arrives at
        ``now_ms``: its session deadline moves to ``now_ms`` + its session timeout, and its
        timer ``heartbeat_key(member_id)`` re-arms there, as :meth:`handle` does (the
        answer is NONE); returns the deadline (virtual ms).

        This is ``rescheduleClassicGroupMemberHeartbeat`` of every Heartbeat that passes
        ``classicGroupHeartbeat``'s checks (:meth:`ClassicGroup.extend_session`, which
        :meth:`handle` calls too).

        Raises:
            KeyError: ``member_id`` is not a member.
        """
        return self._group.extend_session(member_id, now_ms)

    def session_deadlines(self) -> list[tuple[str, int]]:
        """Every member's session deadline: (member id, virtual ms), by member id."""
        return sorted((mid, m.hb_deadline) for mid, m in self._group.members.items())

    def shift_sessions(self, dt_ms: int) -> None:
        """Move every member's session deadline ``dt_ms`` later (the engine skipped whole
        heartbeat periods of a quiet group, every time in it shifted alike; the timers move
        with the engine's)."""
        for m in self._group.members.values():
            m.hb_deadline += dt_ms
