"""Contract checkers for rejoins: a client told to rejoin at once does (KIP-441), and a rejoin
that only repeats a lost JoinGroup starts no rebalance (the classic coordinator).

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``); each is one pass over the log, O(1) per record.

``followup_rejoin_missed`` — KIP-441 / KIP-429 (``StreamsPartitionAssignor#onAssignment`` →
    ``maybeScheduleFollowupRebalance``: an assignment whose ``AssignmentInfo`` carries
    ``nextScheduledRebalanceMs`` 0 — the leader withheld an active task until its owner revoked
    it — or a version-probing subscription change sets the client's next rebalance to "now";
    ``StreamThread#runLoop`` calls ``enforceRebalance`` at its next iteration, and the
    consumer's next ``poll`` sends JoinGroup): after a Streams ``assignment`` with
    ``error`` 0 and ``next_rebalance_ms`` 0, or a ``subscription_version_update``, at t, the
    member logs ``join_group_request`` no later than t plus what its poll loop adds. In the
    model that is the rest of a ``stream_thread_stall`` (the stream thread blocked: no poll
    until it ends) and the time without a coordinator (from ``coordinator_unknown`` until
    ``coordinator_found``: the JoinGroup waits for the coordinator); closing revoked tasks
    takes no virtual time. The obligation ends when the member stops, crashes, fails, starts
    again or leaves (``leave_group``: its poll timer expired), or the log ends. Another
    rebalance beginning first excuses nothing: the member must send JoinGroup to be in it.
    A probing rebalance (``nextScheduledRebalanceMs`` T > 0, at
    ``probing.rebalance.interval.ms``) is the same duty from T on: the timer's firing is
    ``scheduled_rejoin_missed`` (:mod:`scenarios.check.kip_contracts`), and its
    ``timer_fired`` ``probing-rebalance`` obliges the JoinGroup here — unless the member sent
    one since its latest assignment (a rebalance of its own under way: ``StreamThread``
    waits for it, and that rebalance's assignment sets the next probing time).
``completing_rejoin_rebalanced`` — ``GroupMetadataManager#classicGroupJoinExistingMember``: a
    JoinGroup from a known member while the group is CompletingRebalance whose protocols match
    the stored ones (``ClassicGroupMember#matches``: a member whose JoinGroup answer was lost)
    is answered at once with the current generation (leader or follower), and no join phase
    starts. Judged on the wire tap's ``completing_join`` record (:mod:`scenarios.sim.wire_tap`):
    ``same_metadata`` true and an answer other than ``NONE`` in ``group_generation``
    (``error`` null: the request was parked for a new phase).
``completing_rejoin_not_rebalanced`` — the other half of the same rule: a rejoin with changed
    metadata (``same_metadata`` false) starts a join phase
    (``updateMemberThenRebalanceOrCompleteJoin``), so it is not answered at once with the
    current generation (parked, or — a group of one member — the next generation at once).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from msgspec import UnsetType

from scenarios.check.log_rules import Violation, reads_all_typed, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.records import LogRecord

__all__ = [
    "REJOIN_CONTRACT_INVARIANTS",
    "REJOIN_CONTRACT_CHECKERS",
    "check_followup_rejoin",
    "check_completing_rejoin",
]

FOLLOWUP_REJOIN_MISSED = "followup_rejoin_missed"
COMPLETING_REJOIN_REBALANCED = "completing_rejoin_rebalanced"
COMPLETING_REJOIN_NOT_REBALANCED = "completing_rejoin_not_rebalanced"

REJOIN_CONTRACT_INVARIANTS = (
    FOLLOWUP_REJOIN_MISSED,
    COMPLETING_REJOIN_REBALANCED,
    COMPLETING_REJOIN_NOT_REBALANCED,
)

#: the records that tell a Streams client to rejoin at once, by class: their ``kind``
_TOLD_KIND: dict[type, str] = {
    ks.SubscriptionVersionUpdate: "subscription_version_update",
    k.TimerFired: "timer_fired",
    k.Assignment: "assignment",
}


#: the records that tell a client to rejoin at once, release it, or hold its poll back
_FOLLOWUP_TYPES = frozenset(
    {
        *_TOLD_KIND,
        k.JoinGroupRequest,
        k.MemberStop,
        k.MemberCrash,
        k.MemberFatal,
        k.MemberStart,
        k.LeaveGroup,
        ks.StreamThreadStall,
        k.CoordinatorUnknown,
        k.CoordinatorFound,
    }
)


class _Owed:
    """One member's pending "rejoin at once": what told it, and what holds its poll back."""

    __slots__ = ("told", "stalled_until", "no_coordinator", "due", "seq")

    def __init__(self, told: LogRecord, stalled_until: int, no_coordinator: bool) -> None:
        self.told = told
        self.stalled_until = stalled_until
        self.no_coordinator = no_coordinator
        self.due = -1  # -1: not due while the coordinator is unknown
        self.seq = 0  # which push of this obligation in the heap is current


def _told_at_once(r: LogRecord) -> bool:
    match r:
        case ks.SubscriptionVersionUpdate():
            return True
        case k.TimerFired(key=key):
            return key == "probing-rebalance"
        case k.Assignment(error=0, next_rebalance_ms=0, delay_ms=UnsetType()):
            return True
    return False


@reads_all_typed
def check_followup_rejoin(records: Sequence[LogRecord]) -> list[Violation]:
    """``followup_rejoin_missed``: a Streams client told to rejoin at once sent no JoinGroup by
    the time its poll loop was free again (module docstring). Reads every record: any record
    logged after the due time shows the JoinGroup did not come then."""
    found: list[Violation] = []
    owed: dict[str, _Owed] = {}
    stalled_until: dict[str, int] = {}  # member -> when its stream thread's stall ends
    no_coordinator: set[str] = set()
    rejoined: set[str] = set()  # members that sent JoinGroup since their latest assignment
    due: list[tuple[int, int, str]] = []  # (due ms, push number, member)
    pushes = 0

    def arm(member: str, entry: _Owed, t: int) -> None:
        nonlocal pushes
        if entry.no_coordinator:
            entry.due = -1
            return
        entry.due = max(t, entry.stalled_until)
        pushes += 1
        entry.seq = pushes
        heapq.heappush(due, (entry.due, pushes, member))

    for r in records:
        t = r.t_ms
        while due and due[0][0] < t:
            at, seq, member = heapq.heappop(due)
            entry = owed.get(member)
            if entry is None or entry.seq != seq or entry.due != at:
                continue
            del owed[member]
            told = entry.told
            generation = getattr(told, "generation", None)
            found.append(
                violation_at(
                    FOLLOWUP_REJOIN_MISSED,
                    f"{member} was told at {told.t_ms} ms ({_TOLD_KIND[type(told)]}, "
                    f"generation {generation}) to rejoin at once, was free to "
                    f"poll at {at} ms, and had sent no JoinGroup by {t} ms",
                    told,
                    member=member,
                    generation=generation,
                )
            )
        if type(r) not in _FOLLOWUP_TYPES:
            continue  # no member's record, or one that neither tells nor releases it
        name: str = r.member  # type: ignore[union-attr,assignment]  # each of them has one
        match r:
            case (
                k.JoinGroupRequest()
                | k.MemberStop()
                | k.MemberCrash()
                | k.MemberFatal()
                | k.MemberStart()
                | k.LeaveGroup()
            ):
                owed.pop(name, None)
                if isinstance(r, k.JoinGroupRequest):
                    rejoined.add(name)
                if isinstance(r, k.MemberStart | k.MemberCrash | k.MemberStop):
                    stalled_until.pop(name, None)
                    no_coordinator.discard(name)
            case ks.StreamThreadStall(stall_ms=stall_ms):
                stalled_until[name] = t + stall_ms
                entry = owed.get(name)
                if entry is not None:
                    entry.stalled_until = stalled_until[name]
                    arm(name, entry, t)
            case k.CoordinatorUnknown():
                no_coordinator.add(name)
                entry = owed.get(name)
                if entry is not None:
                    entry.no_coordinator = True
                    entry.due = -1
            case k.CoordinatorFound():
                no_coordinator.discard(name)
                entry = owed.get(name)
                if entry is not None:
                    entry.no_coordinator = False
                    arm(name, entry, t)
            case ks.SubscriptionVersionUpdate() | k.TimerFired() if name in rejoined:
                # logged after the JoinGroup its assignment's follow-up already sent, or a
                # probing timer due while the member's own rebalance is under way (StreamThread
                # waits for it: the new assignment sets the next probing time)
                pass
            case _:
                if isinstance(r, k.Assignment):
                    rejoined.discard(name)
                if _told_at_once(r) and name not in owed:
                    entry = _Owed(r, stalled_until.get(name, 0), name in no_coordinator)
                    owed[name] = entry
                    arm(name, entry, t)
    return found


@reads_typed("completing_join")
def check_completing_rejoin(records: Sequence[LogRecord]) -> list[Violation]:
    """``completing_rejoin_rebalanced``: a same-metadata JoinGroup of a known member in
    CompletingRebalance was not answered at once with the current generation;
    ``completing_rejoin_not_rebalanced``: one with changed metadata was (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, kg.CompletingJoin):
            continue
        same, error, generation = r.same_metadata, r.error, r.generation
        current = error == "NONE" and generation == r.group_generation
        if current is same:
            continue
        if same:
            answer = (
                "parked (a new join phase)"
                if error is None
                else f"{error}, generation {generation}"
            )
            invariant = COMPLETING_REJOIN_REBALANCED
            what = (
                f"with the metadata the coordinator holds was answered {answer}; Kafka answers "
                "the current generation and starts no rebalance"
            )
        else:
            invariant = COMPLETING_REJOIN_NOT_REBALANCED
            what = (
                "with changed metadata was answered the current generation; Kafka starts a new "
                "join phase (updateMemberThenRebalanceOrCompleteJoin)"
            )
        found.append(
            violation_at(
                invariant,
                f"{r.member}: a JoinGroup {what} (group in CompletingRebalance, "
                f"generation {r.group_generation}; classicGroupJoinExistingMember)",
                r,
                member=r.member,
                member_id=r.member_id,
                generation=r.group_generation,
            )
        )
    return found


REJOIN_CONTRACT_CHECKERS = (check_followup_rejoin, check_completing_rejoin)
