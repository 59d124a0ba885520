"""Heartbeat, LeaveGroup and the session timers of a classic group's members
(``GroupMetadataManager#classicGroupHeartbeat``, ``expireClassicGroupMemberHeartbeat``,
``classicGroupLeave``), as plain functions over a :class:`ClassicGroup`.

A member's session timer is ``heartbeat_key(member_id)``; a Heartbeat that passes the checks
pushes it back by the session timeout (:meth:`ClassicGroup.extend_session`), a JoinGroup or
SyncGroup re-arms it too. When it fires the member is removed (unless a request of it is
parked) and the group rebalances; a KIP-394 pending member id is forgotten the same way.
"""

from __future__ import annotations

from protocol.effects import CancelTimer, Effect, Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
)

from . import rebalance
from .classic_group import HEARTBEAT_PREFIX, ClassicGroup, Member, pending_removed
from .state import COMPLETING, DEAD, EMPTY, PREPARING, STABLE

__all__ = ["heartbeat", "expire_heartbeat", "remove_member_and_update_group", "leave"]


_JOIN_UNKNOWN = JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id="")


def heartbeat(g: ClassicGroup, source: str, req: HeartbeatRequest, now_ms: int) -> list[Effect]:
    """A Heartbeat from ``source`` at ``now_ms`` (``GroupMetadataManager
    #classicGroupHeartbeat``: member, generation, then state): answered at once; one that
    passes the checks extends the member's session (REBALANCE_IN_PROGRESS while the group
    is PreparingRebalance, else NONE). Returns the effects."""
    state = g.state
    corr = req.correlation_id
    if req.group_id != g.group_id or state is DEAD:
        return [Send(source, HeartbeatResponse(g.request_error(req.group_id), corr))]
    invalid = g.validate_member(req.member_id, req.group_instance_id)
    if invalid is not None:
        return [Send(source, HeartbeatResponse(invalid, corr))]
    m = g.members[req.member_id]
    if req.generation_id != g.generation:
        return [Send(source, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION, corr))]
    if state is EMPTY:
        return [Send(source, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID, corr))]
    deadline = g.extend_session(req.member_id, now_ms)
    error = ErrorCode.REBALANCE_IN_PROGRESS if state is PREPARING else ErrorCode.NONE
    return [SetTimer(m.hb_key, deadline), Send(source, HeartbeatResponse(error, corr))]


def expire_heartbeat(g: ClassicGroup, mid: str, now_ms: int, effects: list[Effect]) -> None:
    """The session timer of ``mid`` fired (``GroupMetadataManager
    #expireClassicGroupMemberHeartbeat``): a pending member id past its deadline is forgotten;
    a member past its deadline with nothing parked (``ClassicGroupMember
    #hasSatisfiedHeartbeat``) is removed. A stale timer does nothing."""
    if g.state is DEAD:
        return
    pending = g.pending.get(mid)
    if pending is not None:
        if now_ms < pending.deadline:
            return
        del g.pending[mid]
        effects.append(pending_removed(pending.source, mid, "session_timeout"))
        # removePendingMemberAndUpdateClassicGroup: completes the join directly, even
        # during the initial rebalance (no previousState check, unlike maybeCompleteJoinPhase).
        if g.state is PREPARING and g.has_all_members_joined():
            rebalance.complete_join(g, now_ms, effects)
        return
    m = g.members.get(mid)
    if m is None or now_ms < m.hb_deadline:
        return
    # ClassicGroupMember#hasSatisfiedHeartbeat
    if not m.is_new and (m.join_source is not None or m.sync_source is not None):
        return
    remove_member_and_update_group(g, m, "session_timeout", now_ms, effects)


def remove_member_and_update_group(
    g: ClassicGroup, m: Member, reason: str, now_ms: int, effects: list[Effect]
) -> None:
    """``GroupMetadataManager#removeMemberAndUpdateClassicGroup``: a parked JoinGroup of
    ``m`` is answered UNKNOWN_MEMBER_ID, ``m`` removed (``reason`` goes to the log), and the
    group rebalances or completes its join phase."""
    g.complete_join_future(m, _JOIN_UNKNOWN, effects)
    g.remove(m.member_id, reason, effects)
    state = g.state
    if state is STABLE or state is COMPLETING:
        rebalance.maybe_prepare_rebalance_or_complete_join(g, now_ms, effects)
    elif state is PREPARING and g.has_all_members_joined():
        # Kafka completes the join directly here, even during the initial rebalance.
        rebalance.complete_join(g, now_ms, effects)


def leave(g: ClassicGroup, source: str, req: LeaveGroupRequest, now_ms: int) -> list[Effect]:
    """A LeaveGroup from ``source`` at ``now_ms`` (``GroupMetadataManager#classicGroupLeave``
    / ``classicGroupLeaveToClassicGroup``): each identity is handled (and removed) in request
    order, by member id or, with an empty member id, by its static instance id; if anyone
    left, the group rebalances. Returns the effects (the answer last)."""
    if not req.group_id:
        return [Send(source, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID))]
    if req.group_id != g.group_id:
        return [Send(source, LeaveGroupResponse(ErrorCode.NOT_COORDINATOR))]
    if not g.exists:
        # "Group not found": the manager throws UnknownMemberIdException, which
        # GroupCoordinatorService#leaveGroup answers with no top-level error and every
        # leaving member UNKNOWN_MEMBER_ID.
        unknown = tuple(
            LeaveGroupMemberResponse(i.member_id, i.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
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
    if g.state is DEAD:
        return [Send(source, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))]
    effects: list[Effect] = []
    answers: list[LeaveGroupMemberResponse] = []
    for ident in req.identities():
        mid, iid = ident.member_id, ident.group_instance_id
        error: ErrorCode | None
        if not mid:
            # Administrative removal of a static member by its instance id.
            static_id = g.static.get(iid) if iid is not None else None
            if static_id is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                remove_current_member(g, static_id, effects)
                error = None
        elif mid in g.pending:
            g.remove(mid, "leave", effects)
            effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
            error = None
        else:
            error = g.validate_member(mid, iid)
            if error is None:
                remove_current_member(g, mid, effects)
        answers.append(LeaveGroupMemberResponse(mid, iid, error or ErrorCode.NONE))
    if any(a.error is ErrorCode.NONE for a in answers):
        state = g.state
        if state is STABLE or state is COMPLETING:
            rebalance.maybe_prepare_rebalance_or_complete_join(g, now_ms, effects)
        elif state is PREPARING:
            rebalance.maybe_complete_join_phase(g, now_ms, effects)
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


def remove_current_member(g: ClassicGroup, mid: str, effects: list[Effect]) -> None:
    """``removeCurrentMemberFromClassicGroup``: cancel the heartbeat, answer a parked
    JoinGroup UNKNOWN_MEMBER_ID, remove the member (a parked SyncGroup goes with it)."""
    m = g.members[mid]
    effects.append(CancelTimer(m.hb_key))
    g.complete_join_future(m, _JOIN_UNKNOWN, effects)
    g.remove(mid, "leave", effects)
