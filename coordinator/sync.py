"""SyncGroup: the leader's assignment stored and handed out (``GroupMetadataManager
#classicGroupSync``, ``classicGroupSyncToLeader``, ``propagateAssignment``,
``removePendingSyncMember``), as plain functions over a :class:`ClassicGroup`.

The leader's SyncGroup appends the group record with every member's assignment; when
:attr:`ClassicGroup.write_latency_ms` is 0 the write commits at once, else the ``commit``
timer commits it (:func:`commit_write`) and the group stays CompletingRebalance meanwhile.
"""

from __future__ import annotations

from protocol.effects import Effect, Log, Send, SetTimer
from protocol.group import ErrorCode, SyncGroupRequest, SyncGroupResponse

from .classic_group import COMMIT_TIMER, ClassicGroup
from .state import COMPLETING, DEAD, EMPTY, PREPARING, STABLE

__all__ = ["sync", "complete_sync_write", "commit_write", "propagate_assignment"]


def sync(g: ClassicGroup, source: str, req: SyncGroupRequest, now_ms: int) -> list[Effect]:
    """A SyncGroup from ``source`` at ``now_ms`` (``GroupMetadataManager#classicGroupSync`` /
    ``validateSyncGroup``): answered at once with an error or, in Stable, the member's
    assignment; in CompletingRebalance parked until the leader's assignment is stored.
    Returns the effects."""
    state = g.state
    m = g.members.get(req.member_id)
    invalid = g.validate_member(req.member_id, req.group_instance_id)
    error: ErrorCode | None
    if req.group_id != g.group_id or state is DEAD:
        error = g.request_error(req.group_id)
    elif invalid is not None:
        error = invalid
    elif req.generation_id != g.generation:
        error = ErrorCode.ILLEGAL_GENERATION
    elif _inconsistent(req.protocol_type, g.protocol_type) or _inconsistent(
        req.protocol_name, g.protocol_name
    ):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    elif state is EMPTY:
        error = ErrorCode.UNKNOWN_MEMBER_ID
    elif state is PREPARING:
        error = ErrorCode.REBALANCE_IN_PROGRESS
    else:
        error = None
    if error is not None:
        return [Send(source, SyncGroupResponse(error))]
    assert m is not None
    effects: list[Effect] = []
    if state is COMPLETING:
        m.sync_source = source  # a parked SyncGroup of the member is replaced
        remove_pending_sync_member(g, m.member_id, effects)
        if m.member_id == g.leader_id:
            # classicGroupSyncToLeader: the group record with every member's assignment
            # (missing ones empty) is appended; writes never fail here.
            assignments = dict(req.assignments)
            if g.write_latency_ms <= 0:
                complete_sync_write(g, assignments, now_ms, effects)
            else:
                g.uncommitted = (g.generation, assignments, g.group_record(assignments))
                effects.append(SetTimer(COMMIT_TIMER, now_ms + g.write_latency_ms))
    else:  # Stable
        remove_pending_sync_member(g, m.member_id, effects)
        effects.append(
            Send(
                source,
                SyncGroupResponse(ErrorCode.NONE, g.protocol_type, g.protocol_name, m.assignment),
            )
        )
    return effects


def complete_sync_write(
    g: ClassicGroup, assignments: dict[str, bytes], now_ms: int, effects: list[Effect]
) -> None:
    """The leader's append future completes: every member's assignment (``assignments`` by
    member id, missing ones empty) is set, stored and propagated, and the group goes Stable."""
    for other in g.members.values():
        other.assignment = assignments.get(other.member_id, b"")
    g.store()
    propagate_assignment(g, ErrorCode.NONE, now_ms, effects)
    g.transition(STABLE, now_ms, effects)


def commit_write(g: ClassicGroup, now_ms: int, effects: list[Effect]) -> None:
    """The held leader's record is committed (``CoordinatorRuntime``: the high watermark
    passed it). It is now what a next coordinator loads; the SyncGroup's completion runs
    only if the group is still CompletingRebalance at that generation (``GroupMetadataManager
    #classicGroupSyncToLeader``'s append future: a member that joined meanwhile sent it back
    to PreparingRebalance, and the parked SyncGroups were answered REBALANCE_IN_PROGRESS)."""
    pending = g.uncommitted
    g.uncommitted = None
    if pending is None:
        return
    generation, assignments, record = pending
    if g.state is COMPLETING and g.generation == generation:
        complete_sync_write(g, assignments, now_ms, effects)
    else:
        g.record = record


def remove_pending_sync_member(g: ClassicGroup, mid: str, effects: list[Effect]) -> None:
    """``GroupMetadataManager#removePendingSyncMember``: ``mid`` has sent SyncGroup; the
    pending-sync timer goes when nobody of the generation is left to send one."""
    g.pending_sync.pop(mid, None)
    state = g.state
    if state is COMPLETING or state is STABLE:
        if not g.pending_sync:
            if g.sync_timer_generation is not None:
                # every member of the generation sent SyncGroup in time (KIP-814)
                effects.append(Log("pending_sync_complete", {"generation": g.generation}))
            g.cancel_sync_timer(effects)
    else:
        g.cancel_sync_timer(effects)


def propagate_assignment(
    g: ClassicGroup, error: ErrorCode, now_ms: int, effects: list[Effect]
) -> None:
    """``GroupMetadataManager#propagateAssignment``: answer every parked SyncGroup with
    ``error`` and the member's assignment (the protocol type and name only with a successful
    answer), and restart those members' sessions."""
    ok = error is ErrorCode.NONE
    protocol_type = g.protocol_type if ok else None
    protocol_name = g.protocol_name if ok else None
    for mid in g.java_order():
        m = g.members[mid]
        response = SyncGroupResponse(error, protocol_type, protocol_name, m.assignment)
        if g.complete_sync_future(m, response, effects):
            g.reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)


def _inconsistent(requested: str | None, current: str | None) -> bool:
    """``isProtocolInconsistent``: both set and different."""
    return requested is not None and current is not None and requested != current
