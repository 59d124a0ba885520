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
    generation it belongs to — the members the ``generation`` (or ``group_loaded``) record of
    that number lists, or the new id a static member took over (``member_replaced``) — never
    an unknown member id (UNKNOWN_MEMBER_ID). Judged on the member's ``join_group_response``.

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
from typing import Any

from scenarios.check.log_rules import (
    KnownProtocols,
    Record,
    Violation,
    protocol_vote,
    reads_typed,
    violation,
    violation_at,
)
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
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


def _slack(r: Record) -> int:
    """The timer slack of a coordinator record: :data:`SERVE_TIMER_SLACK_MS` when served."""
    return SERVE_TIMER_SLACK_MS if "group" in r else 0


class _Phase:
    """One open join phase of a group: its start, its bound (virtual ms), whether it began
    from Empty, and whether an overrun was reported already."""

    __slots__ = ("record", "deadline", "initial", "reported")

    def __init__(self, record: Record, deadline: int, initial: bool) -> None:
        self.record = record
        self.deadline = deadline
        self.initial = initial
        self.reported = False


def check_join_phase_length(records: Sequence[Record]) -> list[Violation]:
    """``join_phase_overran`` / ``join_completed_early``: a join phase lasts the group's
    rebalance timeout at most, and less only when every member rejoined (module doc)."""
    found: list[Violation] = []
    phases: dict[Any, _Phase] = {}  # group (None in a simulated log) -> its open join phase
    for r in records:
        t = int(r.get("t_ms") or 0)
        for group, phase in phases.items():
            if not phase.reported and t > phase.deadline + _slack(phase.record):
                phase.reported = True
                start = phase.record
                found.append(
                    violation(
                        JOIN_PHASE_OVERRAN,
                        f"the join phase begun at {start.get('t_ms')} ms (generation "
                        f"{start.get('generation')}, rebalance timeout "
                        f"{start.get('rebalance_timeout_ms')} ms) was still open at {t} ms, "
                        f"past its bound {phase.deadline} ms (KIP-62: the members' maximum "
                        "rebalance.timeout.ms bounds the join phase)",
                        r,
                        generation=start.get("generation"),
                        group=group,
                    )
                )
        kind = r.get("kind")
        group = r.get("group")
        if kind == "group_state":
            if r.get("from") == "PreparingRebalance":
                phases.pop(group, None)
            if r.get("to") == "PreparingRebalance" and "rebalance_timeout_ms" in r:
                timeout = int(r["rebalance_timeout_ms"])
                initial = r.get("from") == "Empty"
                if initial:
                    timeout = max(timeout, int(r.get("initial_rebalance_delay_ms") or 0))
                phases[group] = _Phase(r, t + timeout, initial)
        elif kind == "join_rescheduled" and group in phases:
            phase = phases[group]
            phase.deadline = t + int(r.get("rebalance_timeout_ms") or 0)
            phase.reported = False
        elif kind == "group_loaded":
            phases.pop(group, None)
        elif (
            kind == "member_removed"
            and r.get("reason") == "not_rejoined"
            and group in phases
            and not phases[group].initial
            and t < phases[group].deadline
        ):
            phase = phases[group]
            found.append(
                violation(
                    JOIN_COMPLETED_EARLY,
                    f"{r.get('member')} ({r.get('member_id')}) removed as not rejoined at "
                    f"{t} ms, before the join phase's bound {phase.deadline} ms (begun at "
                    f"{phase.record.get('t_ms')} ms, rebalance timeout "
                    f"{phase.record.get('rebalance_timeout_ms')} ms): the join completed "
                    "while a known member had time left to rejoin (KIP-62)",
                    r,
                    member=r.get("member"),
                    member_id=r.get("member_id"),
                    generation=phase.record.get("generation"),
                )
            )
    return found


def check_pending_members(records: Sequence[Record]) -> list[Violation]:
    """``pending_member_kept`` / ``pending_member_listed``: a KIP-394 pending member id is
    forgotten within ``session.timeout.ms`` unless it rejoins, and is never a member of a
    generation before it rejoins (module doc)."""
    found: list[Violation] = []
    pending: dict[tuple[Any, str], Record] = {}  # (group, member id) -> its member_pending
    deadlines: list[tuple[int, int, Any, str]] = []  # (deadline + slack, seq, group, id) heap
    for r in records:
        t = int(r.get("t_ms") or 0)
        while deadlines and t > deadlines[0][0]:
            _, _, group, mid = heapq.heappop(deadlines)
            start = pending.pop((group, mid), None)
            if start is not None:
                found.append(
                    violation(
                        PENDING_MEMBER_KEPT,
                        f"pending member {mid} ({start.get('member')}, MEMBER_ID_REQUIRED at "
                        f"{start.get('t_ms')} ms) still pending at {t} ms, past its session "
                        f"timeout {start.get('session_timeout_ms')} ms (KIP-394: a pending "
                        "member that does not rejoin in time is forgotten)",
                        r,
                        member=start.get("member"),
                        member_id=mid,
                    )
                )
        kind = r.get("kind")
        group = r.get("group")
        if kind == "member_pending":
            mid = str(r.get("member_id"))
            pending[(group, mid)] = r
            deadline = t + int(r.get("session_timeout_ms") or 0) + _slack(r)
            heapq.heappush(deadlines, (deadline, int(r.get("seq") or 0), group, mid))
        elif kind in ("member_added", "member_pending_removed"):
            pending.pop((group, str(r.get("member_id"))), None)
        elif kind == "group_loaded" or (kind == "group_state" and r.get("to") == "Dead"):
            for key in [k for k in pending if k[0] == group]:
                del pending[key]
        elif kind == "generation":
            for listed in r.get("member_ids") or ():
                start = pending.get((group, str(listed)))
                if start is not None:
                    found.append(
                        violation(
                            PENDING_MEMBER_LISTED,
                            f"generation {r.get('generation')} lists {listed}, a pending "
                            f"member ({start.get('member')}, MEMBER_ID_REQUIRED at "
                            f"{start.get('t_ms')} ms) that has not rejoined (KIP-394)",
                            r,
                            member=start.get("member"),
                            member_id=listed,
                            generation=r.get("generation"),
                        )
                    )
    return found


@reads_typed("generation", "group_loaded", "member_replaced", "join_group_response")
def check_join_answer_in_generation(records: Sequence[LogRecord]) -> list[Violation]:
    """``join_answer_outside_generation``: a successful JoinGroup answer goes to a member of
    the generation it names (module doc)."""
    found: list[Violation] = []
    members: dict[int, set[str]] = {}  # generation -> its member ids (replacements added)
    latest: int | None = None
    for r in records:
        match r:
            case (
                k.Generation(generation=latest, member_ids=ids)
                | k.GroupLoaded(generation=latest, member_ids=ids)
            ):
                members[latest] = set(ids)
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


def check_pending_sync(records: Sequence[Record]) -> list[Violation]:
    """``pending_sync_kept`` / ``pending_sync_expired_early``: a generation's members send
    SyncGroup within its rebalance timeout, or the late ones are removed at that deadline
    and the group rebalances (module doc)."""
    found: list[Violation] = []
    open_: dict[Any, tuple[Record, int]] = {}  # group -> (its generation record, deadline)
    for r in records:
        t = int(r.get("t_ms") or 0)
        for group, (start, deadline) in list(open_.items()) if open_ else ():
            if t > deadline + _slack(start):
                del open_[group]
                found.append(
                    violation(
                        PENDING_SYNC_KEPT,
                        f"generation {start.get('generation')} (join completed at "
                        f"{start.get('t_ms')} ms) still waits for SyncGroups at {t} ms, past "
                        f"its deadline {deadline} ms: members that did not sync within the "
                        "rebalance timeout are removed and the group rebalances "
                        "(expirePendingSync)",
                        r,
                        generation=start.get("generation"),
                    )
                )
        kind = r.get("kind")
        group = r.get("group")
        if kind == "generation":
            open_.pop(group, None)
            if r.get("member_ids") and "rebalance_timeout_ms" in r:
                open_[group] = (r, t + int(r["rebalance_timeout_ms"]))
        elif kind in ("pending_sync_complete", "group_loaded") or (
            kind == "group_state" and r.get("to") in ("PreparingRebalance", "Empty", "Dead")
        ):
            open_.pop(group, None)
        elif kind == "member_removed" and r.get("reason") == "sync_timeout":
            pending = open_.get(group)
            if pending is not None and t < pending[1]:
                found.append(
                    violation(
                        PENDING_SYNC_EXPIRED_EARLY,
                        f"{r.get('member')} ({r.get('member_id')}) removed for not syncing at "
                        f"{t} ms, before generation {pending[0].get('generation')}'s deadline "
                        f"{pending[1]} ms",
                        r,
                        member=r.get("member"),
                        member_id=r.get("member_id"),
                        generation=pending[0].get("generation"),
                    )
                )
    return found


#: Records a coordinator writes while it handles one request or timer (no member's record).
_COORDINATOR_KINDS = frozenset(
    {"group_state", "generation", "member_added", "member_removed", "member_replaced"}
)


def check_static_rejoin(records: Sequence[Record]) -> list[Violation]:
    """``static_rejoin_rebalanced``: a Stable group keeps its generation when a static member
    rejoins and the vote still elects the protocol the group runs; ``static_rejoin_not_rebalanced``
    (KIP-345, ``updateStaticMemberThenRebalanceOrCompleteJoin``): it rebalances in the same
    coordinator step when the vote, the rejoiner's new list included, no longer elects it (a
    tie that includes it is not judged: Kafka's tie-break is the referee's)."""
    found: list[Violation] = []
    known = KnownProtocols(wire=True)  # the lists the coordinator knows, by member id
    members: list[str] = []  # member ids of the current generation (replacements applied)
    protocol: str | None = None
    state: str | None = None
    watching: Record | None = None  # a member_replaced in Stable with an unchanged vote
    expecting: Record | None = None  # ... with a vote that elects another protocol
    expected: str | None = None
    for r in records:
        known.see(r)
        kind = r.get("kind")
        if watching is not None and (
            kind not in _COORDINATOR_KINDS or r.get("t_ms") != watching.get("t_ms")
        ):
            watching = None
        if expecting is not None and (
            kind not in _COORDINATOR_KINDS or r.get("t_ms") != expecting.get("t_ms")
        ):
            found.append(
                violation(
                    STATIC_REJOIN_NOT_REBALANCED,
                    f"static member {expecting.get('member')} rejoined as "
                    f"{expecting.get('member_id')} while Stable with a protocol list that makes "
                    f"the vote elect {expected}, not {protocol!r}, yet the group did not "
                    "rebalance (KIP-345)",
                    expecting,
                    member=expecting.get("member"),
                )
            )
            expecting = None
        if kind in ("generation", "group_loaded"):
            members = [str(m) for m in r.get("member_ids") or ()]
            protocol = r.get("protocol")
            if kind == "group_loaded":
                state = r.get("state")
        elif kind == "member_replaced":
            # a rebalance at this instant is the latest rejoin's (two static members back in
            # one millisecond: the second may change the vote)
            watching = None
            old, new = str(r.get("old_member_id")), str(r.get("member_id"))
            known.adopt(str(r.get("member")), new)
            members = [new if m == old else m for m in members]
            if state == "Stable" and protocol is not None:
                votes = [known.of(m) for m in members]
                winners = protocol_vote(votes)[0] if members and all(votes) else None  # type: ignore[arg-type]
                if winners == [protocol]:
                    watching = r
                elif winners is not None and protocol not in winners:
                    expecting, expected = r, " or ".join(winners)
        elif kind in ("member_added", "member_removed"):
            # a new member joining (or one leaving) at this instant rebalances the group by
            # itself: that rebalance is its, not the static rejoin's
            watching = None
        elif kind == "group_state":
            if r.get("from") == "Stable" and r.get("to") == "PreparingRebalance":
                expecting = None
            if (
                watching is not None
                and r.get("from") == "Stable"
                and r.get("to") == "PreparingRebalance"
            ):
                found.append(
                    violation(
                        STATIC_REJOIN_REBALANCED,
                        f"static member {watching.get('member')} rejoined as "
                        f"{watching.get('member_id')} (was {watching.get('old_member_id')}) "
                        f"while Stable and the vote still elects {protocol!r}, yet the group "
                        "rebalanced",
                        r,
                        member=watching.get("member"),
                        generation=r.get("generation"),
                    )
                )
                watching = None
            state = r.get("to")
    return found
