"""JoinGroup: members join, rejoin and, with a KIP-345 instance id, replace their previous
member id (``GroupCoordinatorService#joinGroup``, ``GroupMetadataManager#classicGroupJoin``
and its ``classicGroupJoinNewMember`` / ``classicGroupJoinExistingMember`` /
``updateStaticMemberThenRebalanceOrCompleteJoin`` / ``addMemberThenRebalanceOrCompleteJoin``
helpers), as plain functions over a :class:`ClassicGroup`.

A new dynamic member on JoinGroup v4+ gets a KIP-394 pending member id with
MEMBER_ID_REQUIRED; a new static member is added at once; a known instance id with an unknown
member id takes the member record over (:meth:`ClassicGroup.replace_static_member`). A JoinGroup
that joins is parked until the join phase completes (:mod:`coordinator.rebalance`).
"""

from __future__ import annotations

from protocol.effects import Effect, Log, Send, SetTimer
from protocol.group import ErrorCode, JoinGroupRequest, JoinGroupResponse

from . import rebalance, vote
from .classic_group import (
    HEARTBEAT_PREFIX,
    ClassicGroup,
    IllegalGroupState,
    Member,
    PendingMember,
    protocol_names,
)
from .state import COMPLETING, DEAD, EMPTY, PREPARING, STABLE

__all__ = [
    "join",
    "accept_joining_member",
    "join_new_member",
    "join_existing_member",
    "member_id_required",
    "update_static_member_then_rebalance_or_complete_join",
    "current_join_response",
    "add_member_then_rebalance_or_complete_join",
    "update_member_then_rebalance_or_complete_join",
    "update_member",
]


def join(g: ClassicGroup, source: str, req: JoinGroupRequest, now_ms: int) -> list[Effect]:
    """A JoinGroup from ``source`` at ``now_ms`` (``GroupCoordinatorService#joinGroup``, then
    ``GroupMetadataManager#classicGroupJoin``). Returns the effects: an error answer at once,
    or the member joined (its JoinGroup parked or answered) and the rebalance it causes.

    Raises:
        IllegalGroupState: a client bug Kafka rejects with ``IllegalStateException``.
    """
    effects: list[Effect] = []
    mid = req.member_id
    cfg = g.config
    error: ErrorCode | None = None
    if not req.group_id:
        error = ErrorCode.INVALID_GROUP_ID
    elif req.group_id != g.group_id:
        error = ErrorCode.NOT_COORDINATOR
    elif not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
        error = ErrorCode.INVALID_SESSION_TIMEOUT
    elif g.state is DEAD:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif mid and not g.exists:
        error = ErrorCode.UNKNOWN_MEMBER_ID  # getOrMaybeCreateClassicGroup: no such group
    if error is not None:
        effects.append(Send(source, JoinGroupResponse(error, member_id=mid)))
        return effects
    is_new_group = not g.exists
    if is_new_group:
        g.state_ms = now_ms  # ClassicGroup's constructor
    g.exists = True
    if not accept_joining_member(g, mid):
        g.remove(mid, "max_size", effects)
        effects.append(Send(source, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED)))
    elif not mid:
        join_new_member(g, source, req, now_ms, effects)
    else:
        join_existing_member(g, source, req, now_ms, effects)
    if is_new_group:
        # classicGroupJoin: a newly created group whose join wrote nothing is committed
        # with an empty group record (newEmptyGroupMetadataRecord).
        g.store_empty()
    return effects


def accept_joining_member(g: ClassicGroup, mid: str) -> bool:
    """``GroupMetadataManager#acceptJoiningMember`` (group.max.size): may ``mid`` (``""``
    for a new member) join now?"""
    state = g.state
    if state is EMPTY or state is DEAD:
        return True
    m = g.members.get(mid)
    if state is PREPARING:
        return (m is not None and m.join_source is not None) or (
            g.num_awaiting_join < g.config.max_size
        )
    return m is not None or len(g.members) < g.config.max_size


def join_new_member(
    g: ClassicGroup, source: str, req: JoinGroupRequest, now_ms: int, effects: list[Effect]
) -> None:
    """``classicGroupJoinNewMember`` / ``classicGroupJoinNewDynamicMember`` /
    ``classicGroupJoinNewStaticMember``: a JoinGroup without a member id."""
    if not g.supports_protocols(req.protocol_type, req.protocols):
        effects.append(Send(source, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)))
        return
    iid = req.group_instance_id
    # ClassicGroup#generateMemberId: "<group.instance.id or client.id>-<uuid>".
    new_id = g.new_member_id(req.client_id if iid is None else iid)
    if iid is not None:
        # classicGroupJoinNewStaticMember: never MEMBER_ID_REQUIRED; a known instance id
        # replaces its previous member id.
        old_id = g.static.get(iid)
        if old_id is not None:
            update_static_member_then_rebalance_or_complete_join(
                g, source, req, old_id, new_id, now_ms, effects
            )
        else:
            add_member_then_rebalance_or_complete_join(g, source, req, new_id, now_ms, effects)
    elif req.api_version >= 4:  # KIP-394: JoinGroupRequest.requiresKnownMemberId
        deadline = now_ms + req.session_timeout_ms
        g.pending[new_id] = PendingMember(source, deadline)
        effects.append(SetTimer(HEARTBEAT_PREFIX + new_id, deadline))
        effects += member_id_required(source, new_id, req.session_timeout_ms)
    else:
        add_member_then_rebalance_or_complete_join(g, source, req, new_id, now_ms, effects)


def member_id_required(source: str, new_id: str, session_timeout_ms: int) -> list[Effect]:
    """KIP-394 (``JoinGroupRequest.requiresKnownMemberId``): the ``member_pending`` record the
    pending-member rules are judged by (member_pending_kept/listed) and the
    MEMBER_ID_REQUIRED answer handing ``source`` its new member id ``new_id``."""
    pending = {"member": source, "member_id": new_id, "session_timeout_ms": session_timeout_ms}
    return [
        Log("member_pending", pending),
        Send(source, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id)),
    ]


def join_existing_member(
    g: ClassicGroup, source: str, req: JoinGroupRequest, now_ms: int, effects: list[Effect]
) -> None:
    """``classicGroupJoinExistingMember``: a JoinGroup with a member id (a pending member
    rejoining, or a member rejoining: answered the current generation when nothing changed,
    else a rebalance).

    Raises:
        IllegalGroupState: a pending member rejoins with a ``group_instance_id``.
    """
    mid = req.member_id
    if not g.supports_protocols(req.protocol_type, req.protocols):
        effects.append(
            Send(source, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=mid))
        )
        return
    if mid in g.pending:
        if req.group_instance_id is not None:
            raise IllegalGroupState(
                f"group {g.group_id!r}: unexpected JoinGroup with group_instance_id="
                f"{req.group_instance_id!r} for pending member {mid!r}"
            )
        add_member_then_rebalance_or_complete_join(g, source, req, mid, now_ms, effects)
        return
    error = g.validate_member(mid, req.group_instance_id)
    if error is not None:
        effects.append(Send(source, JoinGroupResponse(error, member_id=mid)))
        return
    m = g.members[mid]
    state = g.state
    if state is EMPTY:
        effects.append(Send(source, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=mid)))
    elif state is PREPARING:
        update_member_then_rebalance_or_complete_join(g, source, m, req, now_ms, effects)
    elif state is COMPLETING:
        if m.protocols == req.protocols:
            # Same metadata (a lost JoinGroup response): return the current generation.
            effects.append(Send(source, current_join_response(g, m, with_members=True)))
        else:
            update_member_then_rebalance_or_complete_join(g, source, m, req, now_ms, effects)
    else:  # Stable
        if mid == g.leader_id or m.protocols != req.protocols:
            update_member_then_rebalance_or_complete_join(g, source, m, req, now_ms, effects)
        else:
            effects.append(Send(source, current_join_response(g, m, with_members=False)))


def update_static_member_then_rebalance_or_complete_join(
    g: ClassicGroup,
    source: str,
    req: JoinGroupRequest,
    old_id: str,
    new_id: str,
    now_ms: int,
    effects: list[Effect],
) -> None:
    """``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``: a known
    instance id joins with an unknown member id and takes ``new_id`` over from ``old_id``.
    In Stable, no rebalance unless the vote's winner would change (the record is written and
    the joiner answered at once; v9+ tells a leader to skip the assignment); in
    CompletingRebalance always a rebalance.

    Raises:
        IllegalGroupState: the group is Empty or Dead.
    """
    iid = req.group_instance_id
    assert iid is not None
    state = g.state
    if state is EMPTY or state is DEAD:
        raise IllegalGroupState(
            f"group {g.group_id!r} was not supposed to be in the state {state.value} "
            f"when the unknown static member {iid!r} rejoins"
        )
    current_leader = g.leader_id
    m = g.replace_static_member(iid, old_id, new_id, effects)
    effects.append(
        Log(
            "member_replaced",
            {"member": source, "member_id": new_id, "old_member_id": old_id},
        )
    )
    g.reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
    update_member(g, source, m, req)
    if state is STABLE:
        if g.protocol_name == vote.select_protocol(g):
            # The selected protocol stays: no rebalance. The group record with the new
            # member id is written (writes never fail here) and the joiner answered.
            g.store()
            if req.api_version >= 9:  # JoinGroupRequest.supportsSkippingAssignment
                is_leader = new_id == g.leader_id
                response = g.generation_join_response(
                    new_id,
                    g.leader_id,
                    g.leader_member_list() if is_leader else (),
                    skip_assignment=is_leader,
                )
            else:
                response = g.generation_join_response(new_id, current_leader)
            g.complete_join_future(m, response, effects)
        else:
            rebalance.maybe_prepare_rebalance_or_complete_join(g, now_ms, effects)
    elif state is COMPLETING:
        # The leader may already hold an assignment keyed by the old member id.
        rebalance.prepare_rebalance(g, now_ms, effects)
    else:
        rebalance.maybe_complete_join_phase(g, now_ms, effects)


def current_join_response(g: ClassicGroup, m: Member, with_members: bool) -> JoinGroupResponse:
    """The current generation's JoinGroup answer for ``m`` (the member list only for the
    leader and only ``with_members``)."""
    is_leader = m.member_id == g.leader_id
    return g.generation_join_response(
        m.member_id, g.leader_id, g.leader_member_list() if with_members and is_leader else ()
    )


def add_member_then_rebalance_or_complete_join(
    g: ClassicGroup,
    source: str,
    req: JoinGroupRequest,
    mid: str,
    now_ms: int,
    effects: list[Effect],
) -> None:
    """``GroupMetadataManager#addMemberThenRebalanceOrCompleteJoin``: ``mid`` is added with
    its JoinGroup parked and the new-member join timeout as its session (KAFKA-7610)."""
    m = Member(mid, source, req)
    m.is_new = True
    if g.state is PREPARING and g.previous_state is EMPTY:
        g.new_member_added = True
    g.add(m, source, effects)
    g.reschedule_heartbeat(m, now_ms, g.config.new_member_join_timeout_ms, effects)
    rebalance.maybe_prepare_rebalance_or_complete_join(g, now_ms, effects)


def update_member_then_rebalance_or_complete_join(
    g: ClassicGroup,
    source: str,
    m: Member,
    req: JoinGroupRequest,
    now_ms: int,
    effects: list[Effect],
) -> None:
    """``GroupMetadataManager#updateMemberThenRebalanceOrCompleteJoin``."""
    update_member(g, source, m, req)
    rebalance.maybe_prepare_rebalance_or_complete_join(g, now_ms, effects)


def update_member(g: ClassicGroup, source: str, m: Member, req: JoinGroupRequest) -> None:
    """``ClassicGroup#updateMember``: new protocols and timeouts, the JoinGroup parked (a
    parked JoinGroup of the member is replaced)."""
    g.change_supported(m.names, -1)
    m.protocols = req.protocols
    m.names = protocol_names(req.protocols)
    g.change_supported(m.names, 1)
    m.rebalance_timeout_ms = req.rebalance_timeout_ms
    m.session_timeout_ms = req.session_timeout_ms
    m.source = source
    if m.join_source is None:
        g.num_awaiting_join += 1
    m.join_source = source
