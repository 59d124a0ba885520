"""The rebalance machinery of a classic group: a join phase begins (``prepareRebalance``,
with KIP-134's initial delay out of Empty), completes (``completeClassicGroupJoin``: stragglers
removed, leader re-elected, protocol voted, next generation) or times out its pending syncs
(``expirePendingSync``, KIP-814). Plain functions over a :class:`ClassicGroup`, after
``GroupMetadataManager`` of Apache Kafka 4.0.
"""

from __future__ import annotations

from protocol.effects import CancelTimer, Effect, Log, SetTimer
from protocol.group import ErrorCode
from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from . import sync, vote
from .classic_group import HEARTBEAT_PREFIX, JOIN_TIMER, SYNC_TIMER, ClassicGroup
from .state import COMPLETING, DEAD, EMPTY, PREPARING, STABLE

__all__ = [
    "maybe_prepare_rebalance_or_complete_join",
    "maybe_complete_join_phase",
    "prepare_rebalance",
    "try_complete_initial_rebalance",
    "complete_join",
    "maybe_elect_new_joined_leader",
    "expire_pending_sync",
]


def maybe_prepare_rebalance_or_complete_join(
    g: ClassicGroup, now_ms: int, effects: list[Effect]
) -> None:
    """Begin a join phase if the group can rebalance (``ClassicGroup#canRebalance``: Stable,
    CompletingRebalance or Empty), else try to complete the one under way."""
    state = g.state
    if state is STABLE or state is COMPLETING or state is EMPTY:  # canRebalance
        prepare_rebalance(g, now_ms, effects)
    else:
        maybe_complete_join_phase(g, now_ms, effects)


def maybe_complete_join_phase(g: ClassicGroup, now_ms: int, effects: list[Effect]) -> None:
    """Complete the join phase now if every member has joined (``GroupMetadataManager
    #maybeCompleteJoinPhase``; not during the initial delay, ``previousState == Empty``)."""
    if g.state is PREPARING and g.has_all_members_joined() and g.previous_state is not EMPTY:
        complete_join(g, now_ms, effects)


def prepare_rebalance(g: ClassicGroup, now_ms: int, effects: list[Effect]) -> None:
    """``GroupMetadataManager#prepareRebalance``: parked SyncGroups of a CompletingRebalance
    group are answered REBALANCE_IN_PROGRESS, the group goes PreparingRebalance, and the join
    timer is armed (the initial delay out of Empty, else the rebalance timeout unless every
    member has already joined: ``maybeCompleteJoinElseSchedule``)."""
    if g.state is COMPLETING:
        for m in g.members.values():
            m.assignment = b""
        sync.propagate_assignment(g, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, effects)
    g.cancel_sync_timer(effects)
    g.pending_sync.clear()
    initial = g.state is EMPTY
    if initial:
        delay = g.config.initial_rebalance_delay_ms
        remaining = max(g.rebalance_timeout_ms() - delay, 0)
        g.join_timer = ("initial", delay, remaining)
        effects.append(SetTimer(JOIN_TIMER, now_ms + delay))
    g.transition(PREPARING, now_ms, effects)
    if not initial:
        # maybeCompleteJoinElseSchedule
        if g.has_all_members_joined():
            complete_join(g, now_ms, effects)
        else:
            g.join_timer = ("complete", 0, 0)
            effects.append(SetTimer(JOIN_TIMER, now_ms + g.rebalance_timeout_ms()))


def try_complete_initial_rebalance(
    g: ClassicGroup, delay_ms: int, remaining_ms: int, now_ms: int, effects: list[Effect]
) -> None:
    """``GroupMetadataManager#tryCompleteInitialRebalanceElseSchedule``: the initial delay
    ``delay_ms`` ran out; while members keep arriving it re-arms, up to ``remaining_ms`` of
    the group rebalance timeout, else the join completes."""
    if g.new_member_added and remaining_ms != 0:
        g.new_member_added = False
        new_delay = min(g.config.initial_rebalance_delay_ms, remaining_ms)
        new_remaining = max(remaining_ms - delay_ms, 0)
        g.join_timer = ("initial", new_delay, new_remaining)
        effects.append(SetTimer(JOIN_TIMER, now_ms + new_delay))
    else:
        complete_join(g, now_ms, effects)


def complete_join(g: ClassicGroup, now_ms: int, effects: list[Effect]) -> None:
    """``GroupMetadataManager#completeClassicGroupJoin``: dynamic members that did not rejoin
    are removed, the leader re-elected, and the next generation begins (``ClassicGroup
    #initNextGeneration``: protocol vote, CompletingRebalance, every parked JoinGroup
    answered, the pending-sync timer armed) or, without members, the group goes Empty."""
    g.cancel_join_timer(effects)
    members = g.members
    # Static members that did not rejoin stay (KIP-345); only session expiry removes them.
    stragglers = [
        mid
        for mid in g.java_order()
        if members[mid].join_source is None and members[mid].group_instance_id is None
    ]
    for mid in stragglers:
        g.remove(mid, "not_rejoined", effects)
        effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
    if g.state is DEAD:
        return
    if not maybe_elect_new_joined_leader(g) and members:
        # Only static stragglers can get here; kept for fidelity. The join phase gets
        # another rebalance timeout: logged, since it is what the phase's length is
        # judged by (join_phase_overran).
        g.join_timer = ("complete", 0, 0)
        timeout = g.rebalance_timeout_ms()
        effects.append(SetTimer(JOIN_TIMER, now_ms + timeout))
        effects.append(
            Log(
                "join_rescheduled",
                {"generation": g.generation, "rebalance_timeout_ms": timeout},
            )
        )
        return
    # ClassicGroup#initNextGeneration
    g.generation += 1
    if members:
        g.protocol_name = vote.select_protocol(g)
        g.transition(COMPLETING, now_ms, effects)
    else:
        g.protocol_name = None
        g.transition(EMPTY, now_ms, effects)
        g.store()  # completeClassicGroupJoin: the "empty" group record
    g.pending_sync.clear()
    order = g.java_order()
    leader_id = g.leader_id
    fields: dict[str, object] = {
        "generation": g.generation,
        "protocol": g.protocol_name,
        "leader": members[leader_id].source if leader_id is not None else None,
        "leader_id": leader_id,
        "members": [members[mid].source for mid in order],
        "member_ids": list(order),
    }
    if members:
        # the pending-sync deadline's length (schedulePendingSync): what pending_sync_kept
        # judges the generation's SyncGroups by
        fields["rebalance_timeout_ms"] = g.rebalance_timeout_ms()
    kept = [mid for mid in order if members[mid].join_source is None]
    if kept:
        # KIP-345 static members the join completed without (their JoinGroup answer is
        # their next rejoin's): what leader_not_rejoined judges maybeElectNewJoinedLeader by
        fields["not_rejoined"] = kept
    effects.append(Log("generation", fields))
    if not members:
        return
    leader_list = g.leader_member_list()
    rebalance_timeout = g.rebalance_timeout_ms()
    for mid in order:
        m = members[mid]
        response = g.generation_join_response(
            mid, leader_id, leader_list if mid == leader_id else ()
        )
        g.complete_join_future(m, response, effects)
        g.reschedule_heartbeat(m, now_ms, m.session_timeout_ms, effects)
        m.is_new = False
        g.pending_sync[mid] = None
    # schedulePendingSync
    g.sync_timer_generation = g.generation
    effects.append(SetTimer(SYNC_TIMER, now_ms + rebalance_timeout))


def maybe_elect_new_joined_leader(g: ClassicGroup) -> bool:
    """``ClassicGroup#maybeElectNewJoinedLeader``: a leader that did not rejoin is replaced
    by the first rejoined member in coordinator order; False when there is no leader or
    nobody rejoined."""
    leader_id = g.leader_id
    if leader_id is None:
        return False
    if g.members[leader_id].join_source is not None:
        return True
    for mid in g.java_order():
        if g.members[mid].join_source is not None:
            g.leader_id = mid
            return True
    return False


def expire_pending_sync(
    g: ClassicGroup, generation: int, now_ms: int, effects: list[Effect]
) -> None:
    """``GroupMetadataManager#expirePendingSync``: the members of ``generation`` that have
    not sent SyncGroup within the rebalance timeout are removed, and a rebalance begins."""
    if generation != g.generation:
        return
    if g.state not in (COMPLETING, STABLE) or not g.pending_sync:
        return
    # Kafka walks a HashSet copy of the pending-sync set.
    ids = hash_order(g.pending_sync, string_hash, presized_capacity(len(g.pending_sync)))
    for mid in ids:
        g.remove(mid, "sync_timeout", effects)
        effects.append(CancelTimer(HEARTBEAT_PREFIX + mid))
    prepare_rebalance(g, now_ms, effects)
