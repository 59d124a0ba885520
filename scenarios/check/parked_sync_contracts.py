"""A parked SyncGroup is answered when Kafka's coordinator answers it (registered with the
other contract checkers in :mod:`scenarios.check.contracts`; docs/chaos.md "Contract rules").

``parked_sync_unanswered`` — ``GroupMetadataManager#classicGroupSyncToClassicGroup``: a
    SyncGroup reaching a group in CompletingRebalance at its generation, from a member of the
    group, is parked (``ClassicGroupMember#setAwaitingSyncFuture``; the leader's too, until
    its group record is appended); one reaching the group in any other state, or failing
    ``validateSyncGroup``, is answered at once. A parked one is answered

    * when the leader's assignment is stored (``classicGroupSyncToLeader``'s append future →
      ``setAndPropagateAssignment`` → ``propagateAssignment``, NONE; the group goes Stable);
    * when the group leaves CompletingRebalance for PreparingRebalance (``prepareRebalance``
      → ``resetAndPropagateAssignmentWithError``, REBALANCE_IN_PROGRESS: a member joins or
      leaves, a rejoin with new metadata, the pending-sync timeout ``expirePendingSync``
      removing the members that sent none — a parked one sent its SyncGroup — ...);
    * when another process takes its static member id over (``ClassicGroup
      #replaceStaticMember`` → ``completeSyncFuture``, FENCED_INSTANCE_ID);
    * when the coordinator unloads the group (``onUnloaded``, NOT_COORDINATOR).

    Not answered: the parked SyncGroup of a member removed meanwhile (``ClassicGroup#remove``
    completes no sync future, and ``propagateAssignment`` answers the members still in the
    group: ``removeMemberAndUpdateClassicGroup`` answers only a parked *JoinGroup*,
    UNKNOWN_MEMBER_ID), and one a second SyncGroup of the same member id replaced (its future
    is overwritten). A coordinator that takes the group over after a failover never heard of
    it. The client gives an unanswered SyncGroup up at ``request.timeout.ms``
    (``NetworkClient``: a lost connection; groupsim's ``coordinator_unknown`` with reason
    ``request timed out`` while the SyncGroup is its request in flight).

    Judged on the member's side: a ``sync_group_request`` (member id I, generation G) at
    ``s`` given up at ``t`` (its member's next record among ``sync_group_response``,
    ``join_group_request``, ``leave_group``, ``coordinator_unknown``, ``member_start``,
    ``member_stop``, ``member_crash``, ``member_fatal`` is a ``coordinator_unknown``
    ``request timed out``) is a violation when Kafka answered it at least :data:`SLACK_MS`
    before ``t``: the group was not CompletingRebalance at G when it was sent (``group_state``:
    answered on arrival), or left that state since (``group_state`` from CompletingRebalance
    at G: answered then if parked, on arrival if not), or a ``member_replaced`` replaced I
    since; and no ``member_removed`` of I and no ``group_loaded`` came in between. A fault
    that may have kept the request or the answer away excuses it: a network fault on the
    member's link (partition, loss, latency, held requests; its span as
    ``unexplained_removal`` reads it, :func:`scenarios.check.removals.fault_span`) within
    :data:`SLACK_MS` of the sending or of Kafka's answer, a stall of the member or a
    coordinator failover from :data:`SLACK_MS` before the sending to ``t``. groupsim's
    network takes 1 ms plus at most 5 ms of jitter each way
    (``scenarios/campaigns/chaos/timeline.py``) and keeps each link's order, so without such
    a fault the answer is back long before ``t``. A simulated run has one group (its
    coordinator records name none); a log of ``groupsim serve`` has no member records and is
    not judged.

Input: the log's records of the kinds the rule reads, decoded into their Structs
(``log_rules.reads_typed``), in log order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.check.removals import OPEN_END, SLACK_MS, fault_span
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = [
    "PARKED_SYNC_CHECKERS",
    "PARKED_SYNC_INVARIANTS",
    "PARKED_SYNC_UNANSWERED",
    "check_parked_sync_answered",
]

PARKED_SYNC_UNANSWERED = "parked_sync_unanswered"
PARKED_SYNC_INVARIANTS = (PARKED_SYNC_UNANSWERED,)

#: the member's reason when a request in flight times out (``GroupClient._on_request_timeout``)
_TIMED_OUT = "request timed out"
_COMPLETING = "CompletingRebalance"


@dataclass
class _Sync:
    """A member's SyncGroup in flight: sent at ``sent_ms`` with ``member_id`` for
    ``generation``; ``answered_ms``: when Kafka answered it at the latest (``None``: not yet,
    as far as the coordinator's records tell); ``judged``: False once its member id was
    removed or the group reloaded (Kafka may leave it unanswered)."""

    sent_ms: int
    member_id: str
    generation: int
    answered_ms: int | None
    judged: bool = True


@reads_typed(
    "group_state",
    "group_loaded",
    "member_replaced",
    "member_removed",
    "fault",
    "sync_group_request",
    "sync_group_response",
    "join_group_request",
    "leave_group",
    "coordinator_unknown",
    "member_start",
    "member_stop",
    "member_crash",
    "member_fatal",
)
def check_parked_sync_answered(records: Sequence[LogRecord]) -> list[Violation]:
    """``parked_sync_unanswered``: a SyncGroup the member gave up on at
    ``request.timeout.ms`` although Kafka's coordinator answered it (module doc)."""
    found: list[Violation] = []
    completing: int | None = None  # the generation the group is CompletingRebalance at
    in_flight: dict[str, _Sync] = {}  # member -> its SyncGroup in flight
    spans: dict[str, list[list[int]]] = {}  # member -> network fault spans on its link
    stalls: dict[str, list[tuple[int, int]]] = {}  # member -> its stalls (``slow``)
    failovers: list[tuple[int, int]] = []  # coordinator failovers (every member's link)
    for r in records:
        match r:
            case k.GroupState(from_=left, to=to, generation=generation, t_ms=t):
                if left == _COMPLETING:
                    for sync in in_flight.values():
                        if sync.generation == generation and sync.answered_ms is None:
                            sync.answered_ms = t  # propagateAssignment / prepareRebalance
                completing = generation if to == _COMPLETING else None
            case k.GroupLoaded():
                completing = None
                for sync in in_flight.values():
                    sync.judged = False  # the new coordinator never heard of it
            case k.MemberReplaced(old_member_id=old, t_ms=t):
                for sync in in_flight.values():
                    if sync.member_id == old and sync.answered_ms is None:
                        sync.answered_ms = t  # replaceStaticMember fences it
            case k.MemberRemoved(member_id=gone):
                for sync in in_flight.values():
                    if sync.member_id == gone:
                        sync.judged = False  # ClassicGroup#remove answers no SyncGroup
            case k.Fault(fault="heal", member=str(member), t_ms=t):
                for span in spans.get(member, ()):
                    if span[1] == OPEN_END:
                        span[1] = t
            case k.Fault(fault="slow", member=str(member)):
                stalls.setdefault(member, []).append(fault_span(r))
            case k.Fault(member=str(member)):
                spans.setdefault(member, []).append(list(fault_span(r)))
            case k.Fault(fault="coordinator_failover"):
                failovers.append(fault_span(r))
            case k.SyncGroupRequest(member=member, member_id=member_id, generation=g, t_ms=t):
                at_once = None if completing == g else t  # not parked: answered on arrival
                in_flight[member] = _Sync(t, member_id, g, at_once)
            case k.CoordinatorUnknown(member=member, reason=reason, t_ms=t):
                gave_up = in_flight.pop(member, None)
                if (
                    gave_up is not None
                    and reason == _TIMED_OUT
                    and gave_up.judged
                    and gave_up.answered_ms is not None
                    and gave_up.answered_ms + SLACK_MS <= t
                    and not _excused(
                        gave_up.sent_ms,
                        gave_up.answered_ms,
                        t,
                        spans.get(member, ()),
                        [*stalls.get(member, ()), *failovers],
                    )
                ):
                    found.append(_unanswered(r, gave_up))
            case (
                k.SyncGroupResponse(member=member)
                | k.JoinGroupRequest(member=member)
                | k.LeaveGroup(member=member)
                | k.MemberStart(member=member)
                | k.MemberStop(member=member)
                | k.MemberCrash(member=member)
                | k.MemberFatal(member=member)
            ):
                in_flight.pop(member, None)
    return found


def _touched(spans: Sequence[Sequence[int]], start: int, end: int) -> bool:
    """True when a span ``[from, to]`` (virtual ms) overlaps ``[start, end]``."""
    return any(span[0] <= end and span[1] >= start for span in spans)


def _excused(
    sent: int,
    answered: int,
    gave_up_ms: int,
    network: Sequence[Sequence[int]],
    whole: Sequence[Sequence[int]],
) -> bool:
    """True when a fault may have kept the answer to a SyncGroup sent at ``sent`` and answered
    by the coordinator at ``answered`` from its member by ``gave_up_ms`` (virtual ms): a
    ``network`` fault on its link (partition, loss, latency, held requests) around the
    request's way there (its sending) or the answer's way back (``answered``; an answer
    given at once leaves as the request arrives), each :data:`SLACK_MS` wide — the network
    takes a few ms either way and keeps each link's order, so a message sent earlier and
    slowed by a fault is within that fault's span —, or a stall of the member or a
    coordinator failover (``whole``) anywhere from :data:`SLACK_MS` before the sending to
    ``gave_up_ms``."""
    return (
        _touched(whole, sent - SLACK_MS, gave_up_ms)
        or _touched(network, sent - SLACK_MS, sent + SLACK_MS)
        or _touched(network, answered - SLACK_MS, answered + SLACK_MS)
    )


def _unanswered(r: k.CoordinatorUnknown, sync: _Sync) -> Violation:
    answered = sync.answered_ms
    return violation_at(
        PARKED_SYNC_UNANSWERED,
        f"{r.member}: SyncGroup of member id {sync.member_id} for generation "
        f"{sync.generation}, sent at {sync.sent_ms} ms, timed out unanswered at {r.t_ms} ms "
        f"though the coordinator answers it by {answered} ms (parked in CompletingRebalance: "
        "propagateAssignment, prepareRebalance's resetAndPropagateAssignmentWithError or "
        "replaceStaticMember; else at once), with no fault that could keep the answer away",
        r,
        member=r.member,
        member_id=sync.member_id,
        generation=sync.generation,
    )


PARKED_SYNC_CHECKERS = (check_parked_sync_answered,)
