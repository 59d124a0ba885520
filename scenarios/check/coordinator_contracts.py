"""Contract checkers of the coordinator's answers: one published rule of Kafka's classic group
coordinator each, registered with the others in :mod:`scenarios.check.contracts`.

``heartbeat_not_rebalancing`` — ``GroupMetadataManager#classicGroupHeartbeatToClassicGroup``:
    a Heartbeat from a valid member of the current generation that reaches a group in
    PreparingRebalance is answered REBALANCE_IN_PROGRESS (that is how a member of a Stable
    generation learns to rejoin); other errors (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, …) come
    first, but never ``NONE``. Judged on the ``rebalance_heartbeat`` record the engine and
    ``groupsim serve`` write for every Heartbeat that reaches a PreparingRebalance group, with
    the answer that left the coordinator.
``heartbeat_completing_refused`` — the same method: a Heartbeat that reaches a group in
    CompletingRebalance (a member waiting for its SyncGroup answer while the leader's
    assignment is not in) is treated as in Stable — the session timer reset, answered NONE
    after the member and generation validations — never REBALANCE_IN_PROGRESS. Judged on the
    ``completing_heartbeat`` record of the same wire tap. (Kafka's client ignores
    REBALANCE_IN_PROGRESS outside Stable, ``HeartbeatResponseHandler``, so a coordinator that
    answers it there changes no member's behaviour: only the tap shows it.)
``assignment_recomputed`` — KIP-814,
    ``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``: a static leader
    that rejoins a Stable group under a new member id, with the elected protocol unchanged, is
    answered with ``skip_assignment`` (JoinGroup v9+, as every simulated member sends) and runs
    no assignor: it syncs with an empty assignment and the coordinator keeps the stored one.
    After such a ``member_replaced`` of the generation's leader, a leader decision
    (``assignor``, ``streams_assignment``, ``consumer_assignor``) by that member before its
    SyncGroup or any state change is a violation. (A leader that rejoins during
    CompletingRebalance is given the member list again and does run the assignor again for
    the same generation: that is Kafka's behaviour and not judged here.)
``join_phase_overran`` / ``join_completed_early`` — KIP-62, ``ClassicGroup#rebalanceTimeoutMs``,
    ``GroupMetadataManager#prepareRebalance`` / ``completeClassicGroupJoin``: a join phase
    (``group_state`` to PreparingRebalance until the next ``group_state`` from it) lasts at
    most the group's rebalance timeout as it began (``rebalance_timeout_ms`` on that
    ``group_state``: the members' maximum). From Empty the bound is the larger of that and
    ``initial_rebalance_delay_ms`` (``InitialDelayedJoin`` waits the delay, then again while
    members arrive, until the rebalance timeout is spent). When the timer expires with only
    static members left un-rejoined, the coordinator arms it again (``join_rescheduled``):
    the bound moves to that record's time plus its ``rebalance_timeout_ms``. A record logged
    later than the bound while the phase is open is ``join_phase_overran``. The other half:
    a phase that did not begin from Empty (no initial delay applies) ends before its bound
    only when every member rejoined, so a member removed as ``not_rejoined`` before the
    bound is ``join_completed_early``.
``pending_member_kept`` / ``pending_member_listed`` — KIP-394,
    ``GroupMetadataManager#classicGroupJoinNewDynamicMember`` /
    ``removePendingMemberAndUpdateClassicGroup``: a member id answered MEMBER_ID_REQUIRED is
    pending (``member_pending``) until it rejoins with it (``member_added``) or is forgotten
    (``member_pending_removed``); one still pending when a record is logged later than
    ``session_timeout_ms`` after its ``member_pending`` is ``pending_member_kept``. A pending
    member is not a member: a ``generation`` whose ``member_ids`` (the leader's JoinGroup
    answer) lists one is ``pending_member_listed``. A coordinator that goes Dead or a group
    that is loaded again forgets its pending members.

``join_answer_outside_generation`` — ``GroupMetadataManager#completeClassicGroupJoin`` /
    ``classicGroupJoinExistingMember``: a JoinGroup answered ``NONE`` hands its member a
    generation it belongs to — the members a ``generation`` (or ``group_loaded``) record of
    that number lists (either round's, if a failover made the group reuse it), or the new id a
    static member took over (``member_replaced``) — never an unknown member id
    (UNKNOWN_MEMBER_ID). Judged on the member's ``join_group_response``.

``pending_sync_kept`` / ``pending_sync_expired_early`` — KIP-814's pending sync,
    ``GroupMetadataManager#schedulePendingSync`` / ``expirePendingSync``: once a join
    completes (a ``generation`` with members, carrying ``rebalance_timeout_ms``), every member
    sends SyncGroup within that timeout (``pending_sync_complete``), or those that did not are
    removed (``sync_timeout``) and the group rebalances. A generation still unresolved — no
    ``pending_sync_complete``, no ``group_state`` to PreparingRebalance, Empty or Dead, no
    ``group_loaded`` — at a record logged after the deadline is ``pending_sync_kept``; a
    ``sync_timeout`` removal before it is ``pending_sync_expired_early``.

A ``groupsim serve`` log (records tagged ``group``) runs on the wall clock, where a timer fires
a little after its deadline: the bounds there get :data:`SERVE_TIMER_SLACK_MS`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from msgspec import UNSET

from scenarios.check.log_rules import (
    KnownProtocols,
    Violation,
    finds_only_with,
    protocol_vote,
    reads_all_typed,
    reads_typed,
    violation_at,
)
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.records import LogRecord

__all__ = [
    "HEARTBEAT_NOT_REBALANCING",
    "ASSIGNMENT_RECOMPUTED",
    "JOIN_PHASE_OVERRAN",
    "JOIN_COMPLETED_EARLY",
    "PENDING_MEMBER_KEPT",
    "PENDING_MEMBER_LISTED",
    "JOIN_ANSWER_OUTSIDE_GENERATION",
    "HEARTBEAT_COMPLETING_REFUSED",
    "PENDING_SYNC_KEPT",
    "PENDING_SYNC_EXPIRED_EARLY",
    "SERVE_TIMER_SLACK_MS",
    "STATIC_REJOIN_REBALANCED",
    "STATIC_REJOIN_NOT_REBALANCED",
    "check_static_rejoin",
    "check_rebalance_heartbeat",
    "check_completing_heartbeat",
    "check_assignment_once",
    "check_join_phase_length",
    "check_pending_members",
    "check_join_answer_in_generation",
    "check_pending_sync",
]

HEARTBEAT_NOT_REBALANCING = "heartbeat_not_rebalancing"
HEARTBEAT_COMPLETING_REFUSED = "heartbeat_completing_refused"
ASSIGNMENT_RECOMPUTED = "assignment_recomputed"
JOIN_PHASE_OVERRAN = "join_phase_overran"
JOIN_COMPLETED_EARLY = "join_completed_early"
PENDING_MEMBER_KEPT = "pending_member_kept"
PENDING_MEMBER_LISTED = "pending_member_listed"
JOIN_ANSWER_OUTSIDE_GENERATION = "join_answer_outside_generation"
PENDING_SYNC_KEPT = "pending_sync_kept"
PENDING_SYNC_EXPIRED_EARLY = "pending_sync_expired_early"

#: How late a served coordinator's timer may fire after its deadline (wall-clock ms).
SERVE_TIMER_SLACK_MS = 1_000
STATIC_REJOIN_REBALANCED = "static_rejoin_rebalanced"
STATIC_REJOIN_NOT_REBALANCED = "static_rejoin_not_rebalanced"


def _heartbeat_answers(
    records: Sequence[LogRecord],
    tapped: type[k.RebalanceHeartbeat | k.CompletingHeartbeat],
    error: str,
    invariant: str,
    state: str,
    why: str,
) -> list[Violation]:
    """A violation for every ``tapped`` record (a Heartbeat that reached the group in
    ``state``) answered ``error``; ``why`` says what Kafka does instead."""
    return [
        violation_at(
            invariant,
            f"{r.member}: a Heartbeat (generation {r.generation}) reached the "
            f"group in {state} and was answered {error}{why}",
            r,
            member=r.member,
            member_id=r.member_id,
        )
        for r in records
        if isinstance(r, tapped) and r.error == error
    ]


@reads_typed("completing_heartbeat")
def check_completing_heartbeat(records: Sequence[LogRecord]) -> list[Violation]:
    """``heartbeat_completing_refused``: a Heartbeat that reached a CompletingRebalance group
    was answered REBALANCE_IN_PROGRESS."""
    return _heartbeat_answers(
        records,
        k.CompletingHeartbeat,
        "REBALANCE_IN_PROGRESS",
        HEARTBEAT_COMPLETING_REFUSED,
        "CompletingRebalance",
        " (Kafka treats it as in Stable: NONE, its session timer reset)",
    )


@reads_typed("rebalance_heartbeat")
def check_rebalance_heartbeat(records: Sequence[LogRecord]) -> list[Violation]:
    """``heartbeat_not_rebalancing``: a Heartbeat that reached a PreparingRebalance group is
    never answered ``NONE``."""
    return _heartbeat_answers(
        records,
        k.RebalanceHeartbeat,
        "NONE",
        HEARTBEAT_NOT_REBALANCING,
        "PreparingRebalance",
        ", so the member does not learn to rejoin (Kafka answers REBALANCE_IN_PROGRESS)",
    )


#: A leader's record of the assignment it computed for a generation, per member kind.
_LEADER_DECISIONS = frozenset({"assignor", "streams_assignment", "consumer_assignor"})


@reads_typed(
    "generation",
    "group_loaded",
    "group_state",
    "member_replaced",
    "sync_group_request",
    *_LEADER_DECISIONS,
)
def check_assignment_once(records: Sequence[LogRecord]) -> list[Violation]:
    """``assignment_recomputed``: a static leader that rejoined a Stable group runs no
    assignor for the generation it already assigned (KIP-814 ``skip_assignment``)."""
    found: list[Violation] = []
    leader_id: str | None = None  # the current generation's leader member id
    state: str | None = None
    # member name -> its replacement as Stable leader
    told_to_skip: dict[str, k.MemberReplaced] = {}
    for r in records:
        match r:
            case k.Generation(leader_id=leader_id):
                told_to_skip.clear()
            case k.GroupLoaded(leader_id=leader_id, state=state):
                told_to_skip.clear()
            case k.GroupState(to=state):
                told_to_skip.clear()  # a rebalance: the member's next decision is a new round's
            case k.MemberReplaced(member=name):
                if state == "Stable" and r.old_member_id == leader_id:
                    leader_id = r.member_id
                    told_to_skip[name] = r
            case k.SyncGroupRequest(member=name):
                told_to_skip.pop(name, None)
            case (
                k.Assignor(member=name)
                | ks.StreamsAssignment(member=name)
                | ku.ConsumerAssignor(member=name)
            ) if name in told_to_skip:
                replaced = told_to_skip.pop(name)
                found.append(
                    violation_at(
                        ASSIGNMENT_RECOMPUTED,
                        f"static leader {name} rejoined the Stable group as "
                        f"{replaced.member_id} (was {replaced.old_member_id}) and ran "
                        f"the assignor again for generation {r.generation}; the coordinator "
                        "tells it skip_assignment (KIP-814) and keeps the stored assignment",
                        r,
                        member=name,
                        generation=r.generation,
                    )
                )
    return found


def _group(r: LogRecord) -> str | None:
    """The group a record names (``groupsim serve`` tags coordinator records), or None."""
    group = getattr(r, "group", None)  # only the coordinator's kinds and served ones have one
    return None if group is UNSET else group


def _slack(r: k.GroupState | k.Generation | kg.MemberPending) -> int:
    """The timer slack of a coordinator record: :data:`SERVE_TIMER_SLACK_MS` when served."""
    return SERVE_TIMER_SLACK_MS if r.group is not UNSET else 0


class _Phase:
    """One open join phase of a group: its start, its bound (virtual ms), whether it began
    from Empty, and whether an overrun was reported already."""

    __slots__ = ("record", "deadline", "initial", "reported")

    def __init__(self, record: k.GroupState, deadline: int, initial: bool) -> None:
        self.record = record
        self.deadline = deadline
        self.initial = initial
        self.reported = False


#: the records that open, move or close a join phase (the others only tell the time)
_PHASE_TYPES = frozenset({k.GroupState, kg.JoinRescheduled, k.GroupLoaded, k.MemberRemoved})


@reads_all_typed
def check_join_phase_length(records: Sequence[LogRecord]) -> list[Violation]:
    """``join_phase_overran`` / ``join_completed_early``: a join phase lasts the group's
    rebalance timeout at most, and less only when every member rejoined (module doc)."""
    found: list[Violation] = []
    phases: dict[str | None, _Phase] = {}  # group (None in a simulated log) -> its open phase
    for r in records:
        t = r.t_ms
        for group, phase in phases.items():
            if not phase.reported and t > phase.deadline + _slack(phase.record):
                phase.reported = True
                start = phase.record
                found.append(
                    violation_at(
                        JOIN_PHASE_OVERRAN,
                        f"the join phase begun at {start.t_ms} ms (generation "
                        f"{start.generation}, rebalance timeout "
                        f"{start.rebalance_timeout_ms} ms) was still open at {t} ms, "
                        f"past its bound {phase.deadline} ms (KIP-62: the members' maximum "
                        "rebalance.timeout.ms bounds the join phase)",
                        r,
                        generation=start.generation,
                        group=group,
                    )
                )
        if type(r) not in _PHASE_TYPES:
            continue
        group = _group(r)
        match r:
            case k.GroupState(from_=from_, to=to):
                if from_ == "PreparingRebalance":
                    phases.pop(group, None)
                if to == "PreparingRebalance" and isinstance(r.rebalance_timeout_ms, int):
                    timeout = r.rebalance_timeout_ms
                    initial = from_ == "Empty"
                    if initial:
                        timeout = max(timeout, r.initial_rebalance_delay_ms or 0)
                    phases[group] = _Phase(r, t + timeout, initial)
            case kg.JoinRescheduled() if group in phases:
                phase = phases[group]
                phase.deadline = t + r.rebalance_timeout_ms
                phase.reported = False
            case k.GroupLoaded():
                phases.pop(group, None)
            case k.MemberRemoved(reason="not_rejoined") if (
                group in phases and not phases[group].initial and t < phases[group].deadline
            ):
                phase = phases[group]
                found.append(
                    violation_at(
                        JOIN_COMPLETED_EARLY,
                        f"{r.member} ({r.member_id}) removed as not rejoined at "
                        f"{t} ms, before the join phase's bound {phase.deadline} ms (begun at "
                        f"{phase.record.t_ms} ms, rebalance timeout "
                        f"{phase.record.rebalance_timeout_ms} ms): the join completed "
                        "while a known member had time left to rejoin (KIP-62)",
                        r,
                        member=r.member,
                        member_id=r.member_id,
                        generation=phase.record.generation,
                    )
                )
    return found


#: the records that add, end or list a pending member (the others only tell the time)
_PENDING_TYPES = frozenset(
    {
        kg.MemberPending,
        k.MemberAdded,
        kg.MemberPendingRemoved,
        k.GroupLoaded,
        k.GroupState,
        k.Generation,
    }
)


@reads_all_typed
def check_pending_members(records: Sequence[LogRecord]) -> list[Violation]:
    """``pending_member_kept`` / ``pending_member_listed``: a KIP-394 pending member id is
    forgotten within ``session.timeout.ms`` unless it rejoins, and is never a member of a
    generation before it rejoins (module doc)."""
    found: list[Violation] = []
    # (group, member id) -> its member_pending
    pending: dict[tuple[str | None, str], kg.MemberPending] = {}
    # (deadline + slack, seq, group, id) heap
    deadlines: list[tuple[int, int, str | None, str]] = []
    for r in records:
        t = r.t_ms
        while deadlines and t > deadlines[0][0]:
            _, _, group, mid = heapq.heappop(deadlines)
            start = pending.pop((group, mid), None)
            if start is not None:
                found.append(
                    violation_at(
                        PENDING_MEMBER_KEPT,
                        f"pending member {mid} ({start.member}, MEMBER_ID_REQUIRED at "
                        f"{start.t_ms} ms) still pending at {t} ms, past its session "
                        f"timeout {start.session_timeout_ms} ms (KIP-394: a pending "
                        "member that does not rejoin in time is forgotten)",
                        r,
                        member=start.member,
                        member_id=mid,
                    )
                )
        if type(r) not in _PENDING_TYPES:
            continue
        group = _group(r)
        match r:
            case kg.MemberPending(member_id=mid):
                pending[(group, mid)] = r
                deadline = t + r.session_timeout_ms + _slack(r)
                heapq.heappush(deadlines, (deadline, r.seq, group, mid))
            case k.MemberAdded(member_id=mid) | kg.MemberPendingRemoved(member_id=mid):
                pending.pop((group, mid), None)
            case k.GroupLoaded() | k.GroupState(to="Dead"):
                for key in [key for key in pending if key[0] == group]:
                    del pending[key]
            case k.Generation(member_ids=ids):
                for listed in ids:
                    start = pending.get((group, listed))
                    if start is not None:
                        found.append(
                            violation_at(
                                PENDING_MEMBER_LISTED,
                                f"generation {r.generation} lists {listed}, a pending "
                                f"member ({start.member}, MEMBER_ID_REQUIRED at "
                                f"{start.t_ms} ms) that has not rejoined (KIP-394)",
                                r,
                                member=start.member,
                                member_id=listed,
                                generation=r.generation,
                            )
                        )
    return found


@reads_typed("generation", "group_loaded", "member_replaced", "join_group_response")
def check_join_answer_in_generation(records: Sequence[LogRecord]) -> list[Violation]:
    """``join_answer_outside_generation``: an answer NONE names a generation of its member."""
    found: list[Violation] = []
    members: dict[int, set[str]] = {}  # generation -> its member ids (replacements added)
    latest: int | None = None
    for r in records:
        match r:
            case (
                k.Generation(generation=latest, member_ids=ids)
                | k.GroupLoaded(generation=latest, member_ids=ids)
            ):
                members.setdefault(latest, set()).update(ids)
            case k.MemberReplaced(member_id=new_id) if latest is not None:
                members.setdefault(latest, set()).add(new_id)
            case k.JoinGroupResponse(error="NONE", generation=generation, member_id=mid):
                known = members.get(generation)
                if known is not None and mid not in known:
                    found.append(
                        violation_at(
                            JOIN_ANSWER_OUTSIDE_GENERATION,
                            f"{r.member} was answered generation {generation} as "
                            f"{mid}, not one of its members: an unknown member id "
                            "is answered UNKNOWN_MEMBER_ID (classicGroupJoinExistingMember)",
                            r,
                            member=r.member,
                            member_id=mid,
                            generation=generation,
                        )
                    )
    return found


#: the records that open or close a generation's pending sync (the others only tell the time)
_SYNC_TYPES = frozenset(
    {k.Generation, kg.PendingSyncComplete, k.GroupLoaded, k.GroupState, k.MemberRemoved}
)


@reads_all_typed
def check_pending_sync(records: Sequence[LogRecord]) -> list[Violation]:
    """``pending_sync_kept`` / ``pending_sync_expired_early``: a generation's members send
    SyncGroup within its rebalance timeout, or the late ones are removed at that deadline
    and the group rebalances (module doc)."""
    found: list[Violation] = []
    # group -> (its generation record, deadline)
    open_: dict[str | None, tuple[k.Generation, int]] = {}
    for r in records:
        t = r.t_ms
        for group, (start, deadline) in list(open_.items()) if open_ else ():
            if t > deadline + _slack(start):
                del open_[group]
                found.append(
                    violation_at(
                        PENDING_SYNC_KEPT,
                        f"generation {start.generation} (join completed at "
                        f"{start.t_ms} ms) still waits for SyncGroups at {t} ms, past "
                        f"its deadline {deadline} ms: members that did not sync within the "
                        "rebalance timeout are removed and the group rebalances "
                        "(expirePendingSync)",
                        r,
                        generation=start.generation,
                    )
                )
        if type(r) not in _SYNC_TYPES:
            continue
        group = _group(r)
        match r:
            case k.Generation(member_ids=ids, rebalance_timeout_ms=timeout):
                open_.pop(group, None)
                if ids and isinstance(timeout, int):
                    open_[group] = (r, t + timeout)
            case (
                kg.PendingSyncComplete()
                | k.GroupLoaded()
                | k.GroupState(to="PreparingRebalance" | "Empty" | "Dead")
            ):
                open_.pop(group, None)
            case k.MemberRemoved(reason="sync_timeout"):
                pending = open_.get(group)
                if pending is not None and t < pending[1]:
                    found.append(
                        violation_at(
                            PENDING_SYNC_EXPIRED_EARLY,
                            f"{r.member} ({r.member_id}) removed for not syncing at "
                            f"{t} ms, before generation {pending[0].generation}'s deadline "
                            f"{pending[1]} ms",
                            r,
                            member=r.member,
                            member_id=r.member_id,
                            generation=pending[0].generation,
                        )
                    )
    return found


#: Records a coordinator writes while it handles one request or timer (no member's record).
_COORDINATOR_TYPES = frozenset(
    {k.GroupState, k.Generation, k.MemberAdded, k.MemberRemoved, k.MemberReplaced}
)


@finds_only_with("member_replaced")  # (both rules judge what follows a replacement)
@reads_all_typed
def check_static_rejoin(records: Sequence[LogRecord]) -> list[Violation]:
    """``static_rejoin_rebalanced``: a Stable group keeps its generation when a static member
    rejoins and the vote still elects the protocol the group runs; ``static_rejoin_not_rebalanced``
    (KIP-345, ``updateStaticMemberThenRebalanceOrCompleteJoin``): it rebalances in the same
    coordinator step when the vote, the rejoiner's new list included, no longer elects it (a
    tie that includes it is not judged: Kafka's tie-break is the referee's), nor while another
    member's JoinGroup with a member id is in flight: it may be the cause (after a failover,
    all rejoin the reloaded group at once: Streams chaos seed 3 run 29)."""
    found: list[Violation] = []
    known = KnownProtocols(wire=True)  # the lists the coordinator knows, by member id
    members: list[str] = []  # member ids of the current generation (replacements applied)
    protocol: str | None = None
    state: str | None = None
    watching: k.MemberReplaced | None = None  # a member_replaced in Stable, vote unchanged
    expecting: k.MemberReplaced | None = None  # ... with a vote that elects another protocol
    expected: str | None = None
    # members with a JoinGroup of a member id in flight: in Stable it may rebalance by itself
    rejoining: set[str] = set()  # (classicGroupJoinExistingMember: a leader, new metadata)
    for r in records:
        known.see_record(r)
        if type(r) is k.JoinGroupRequest:
            if r.member_id:
                rejoining.add(r.member)
            else:
                rejoining.discard(r.member)
        elif type(r) is k.JoinGroupResponse:
            rejoining.discard(r.member)
        elif type(r) is k.Generation:
            rejoining.clear()  # the join phase answered every parked JoinGroup
        same_step = type(r) in _COORDINATOR_TYPES
        if watching is not None and (not same_step or r.t_ms != watching.t_ms):
            watching = None
        if expecting is not None and (not same_step or r.t_ms != expecting.t_ms):
            found.append(
                violation_at(
                    STATIC_REJOIN_NOT_REBALANCED,
                    f"static member {expecting.member} rejoined as "
                    f"{expecting.member_id} while Stable with a protocol list that makes "
                    f"the vote elect {expected}, not {protocol!r}, yet the group did not "
                    "rebalance (KIP-345)",
                    expecting,
                    member=expecting.member,
                )
            )
            expecting = None
        if not same_step and type(r) is not k.GroupLoaded:
            continue
        match r:
            case k.Generation(member_ids=ids, protocol=protocol):
                members = list(ids)
            case k.GroupLoaded(member_ids=ids, protocol=protocol, state=state):
                members = list(ids)
            case k.MemberReplaced(old_member_id=old, member_id=new):
                # a rebalance at this instant is the latest rejoin's (two static members back
                # in one millisecond: the second may change the vote)
                watching = None
                known.adopt(r.member, new)
                members = [new if m == old else m for m in members]
                if state == "Stable" and protocol is not None:
                    votes = [known.of(m) for m in members]
                    winners = protocol_vote(votes)[0] if members and all(votes) else None  # type: ignore[arg-type]
                    if winners == [protocol]:
                        watching = r
                    elif winners is not None and protocol not in winners:
                        expecting, expected = r, " or ".join(winners)
            case k.MemberAdded() | k.MemberRemoved():
                # a new member joining (or one leaving) at this instant rebalances the group by
                # itself: that rebalance is its, not the static rejoin's
                watching = None
            case k.GroupState(from_=from_, to=to):
                if from_ == "Stable" and to == "PreparingRebalance":
                    expecting = None
                if watching is not None and rejoining - {watching.member}:
                    watching = None  # another member's rejoin may be this rebalance's cause
                if watching is not None and from_ == "Stable" and to == "PreparingRebalance":
                    found.append(
                        violation_at(
                            STATIC_REJOIN_REBALANCED,
                            f"static member {watching.member} rejoined as "
                            f"{watching.member_id} (was {watching.old_member_id}) "
                            f"while Stable and the vote still elects {protocol!r}, yet the group "
                            "rebalanced",
                            r,
                            member=watching.member,
                            generation=r.generation,
                        )
                    )
                    watching = None
                state = to
    return found
