"""KIP-345 fencing of a SyncGroup, judged on the coordinator's answer (issue 23; registered
with the protocol checkers in :mod:`scenarios.check.protocol_checkers`; docs/chaos.md
"Contract rules").

``sync_not_fenced`` — KIP-345, ``GroupMetadataManager#classicGroupSync`` →
    ``validateSyncGroup`` → ``ClassicGroup#validateMember``: once another process took a
    static member's ``group.instance.id`` over (``member_replaced``: the instance maps to the
    new member id), a SyncGroup carrying the old member id is answered FENCED_INSTANCE_ID —
    the check comes before the generation and state checks, so never ILLEGAL_GENERATION,
    REBALANCE_IN_PROGRESS or UNKNOWN_MEMBER_ID (which would make the client forget its id and
    rejoin under the instance id, taking it back: ``AbstractCoordinator
    #resetGenerationOnResponseError``), and never a parked answer. Only the answers given
    before the group is looked at are allowed besides: NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS (a failover). Judged where the
    log shows when the coordinator handled the request:

    * a held SyncGroup reaching the coordinator (``late_request`` of ``sync_group``, a
      ``delay_request`` fault: its ``error`` is the coordinator's answer, ``null`` if parked)
      — the one the member sent at its ``sent_ms``, whose member id was replaced by then;
    * a SyncGroup the member sent after the replacement (its ``sync_group_request``), by the
      member's next ``sync_group_response`` for that member id (a request held by a fault is
      judged by its ``late_request`` instead, the answer it heard repeats it);
    * on a served log, a ``wire_request`` of SyncGroup, by its ``wire_response`` (both
      written by the broker as it handles the request);
    * a SyncGroup parked at the coordinator when the twin took over
      (``ClassicGroup#replaceStaticMember`` answers it FENCED_INSTANCE_ID at once, before
      ``updateStaticMemberThenRebalanceOrCompleteJoin`` starts a new join phase, whose
      REBALANCE_IN_PROGRESS goes to the others' parked SyncGroups only): one the member sent
      with the old id for generation G, unanswered when the ``member_replaced`` comes while
      the group is CompletingRebalance at G (its ``group_state``). Sent after the group
      entered that state and never answered at once there (a follower's waits for the
      leader's, a leader's completes the state), it was either parked or not yet arrived,
      and both are answered FENCED_INSTANCE_ID — judged by the member's next
      ``sync_group_response`` for that id (or its ``late_request``, if a fault held it).

    The fence lifts when the member holding the instance is removed (``member_removed``: the
    instance is unknown again, UNKNOWN_MEMBER_ID is right) and is forgotten at a reload
    (``group_loaded``: the stored record may predate the replacement). A SyncGroup sent
    before the replacement whose answer arrives after it is not judged unless held by a fault
    or sent in the CompletingRebalance the replacement lands in (the log does not say which
    came first at the coordinator: in Stable or PreparingRebalance it was answered at once).
    A parked SyncGroup left unanswered (the member gives up on it at ``request.timeout.ms``)
    is ``parked_sync_unanswered``'s (:mod:`scenarios.check.parked_sync_contracts`); what the
    process did after it is ``zombie_owns_work``'s.

Input: the log's records of the kinds the rule reads, decoded into their Structs
(``log_rules.reads_typed``), in log order.
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_serve as kv
from scenarios.eventlog.records import LogRecord

__all__ = ["FENCING_CONTRACT_CHECKERS", "FENCING_CONTRACT_INVARIANTS", "check_sync_fenced"]

SYNC_NOT_FENCED = "sync_not_fenced"
FENCING_CONTRACT_INVARIANTS = (SYNC_NOT_FENCED,)

#: Answers a coordinator gives before it looks at the group (``GroupCoordinatorService``).
_BEFORE_GROUP = frozenset(
    {"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"}
)
_ALLOWED = _BEFORE_GROUP | {"FENCED_INSTANCE_ID"}


@reads_typed(
    "group_state",
    "member_replaced",
    "member_removed",
    "group_loaded",
    "sync_group_request",
    "sync_group_response",
    "late_request",
    "wire_request",
    "wire_response",
)
def check_sync_fenced(records: Sequence[LogRecord]) -> list[Violation]:
    """``sync_not_fenced``: a SyncGroup with a static member id another process took over
    is answered FENCED_INSTANCE_ID (module doc)."""
    found: list[Violation] = []
    holder: dict[str, str] = {}  # replaced member id -> the member id holding its instance
    sent: dict[str, dict[int, str]] = {}  # member -> send time -> the SyncGroup's member id
    after: dict[str, str] = {}  # member -> fenced id of a SyncGroup sent after the replacement
    held: dict[str, set[str]] = {}  # member -> fenced ids of those a fault held (late_request)
    served: dict[str, str] = {}  # served connection -> fenced id of its SyncGroup in progress
    parked: set[str] = set()  # members whose entry in ``after`` the replacement made
    completing: dict[object, int] = {}  # group -> the generation it is CompletingRebalance at
    unanswered: dict[str, tuple[str, int]] = {}  # member -> (member id, generation) of its
    for r in records:  # SyncGroup sent while its group completed that generation, unanswered
        match r:
            case k.GroupState(to="CompletingRebalance", group=group, generation=generation):
                completing[group] = generation
            case k.GroupState(group=group):
                completing.pop(group, None)
            case k.MemberReplaced(old_member_id=old, member_id=new, group=group):
                replaced_in = completing.get(group)
                for process, (member_id, sent_for) in unanswered.items():
                    if member_id == old and sent_for == replaced_in:
                        after[process] = old  # parked, or arriving after: FENCED_INSTANCE_ID
                        parked.add(process)
                for fenced, holding in holder.items():
                    if holding == old:
                        holder[fenced] = new
                holder[old] = new
                holder.pop(new, None)
            case k.MemberRemoved(member_id=gone):
                holder = {f: h for f, h in holder.items() if h != gone}
            case k.GroupLoaded(group=group):
                holder.clear()
                completing.pop(group, None)
                for process in parked:  # answered by another coordinator: not judged
                    after.pop(process, None)
                parked.clear()
            case k.SyncGroupRequest(member=member, member_id=member_id):
                sent.setdefault(member, {})[r.t_ms] = member_id
                unanswered.pop(member, None)
                parked.discard(member)
                if r.generation in completing.values():
                    unanswered[member] = (member_id, r.generation)
                if member_id in holder:
                    after[member] = member_id
                else:
                    after.pop(member, None)
            case k.LateRequest(member=member, request="sync_group"):
                late_id = sent.get(member, {}).pop(r.sent_ms, None)
                if late_id is not None and late_id in holder:
                    held.setdefault(member, set()).add(late_id)
                    if r.error not in _ALLOWED:
                        found.append(_unfenced(r, member, late_id, holder[late_id]))
            case k.SyncGroupResponse(member=member, member_id=member_id):
                unanswered.pop(member, None)
                if after.get(member) == member_id:
                    del after[member]
                    was_parked = member in parked
                    parked.discard(member)
                    if member_id in held.get(member, ()):
                        held[member].discard(member_id)
                        continue  # held by a fault: its late_request was judged
                    if r.error not in _ALLOWED:
                        now = holder.get(member_id)
                        found.append(_unfenced(r, member, member_id, now, parked=was_parked))
            case kv.WireRequest(api="SyncGroup", member=member, member_id=str() as member_id):
                if member_id in holder:
                    served[member] = member_id
                else:
                    served.pop(member, None)
            case kv.WireRequest(api="SyncGroup", member=member):  # no member id: not fenced
                served.pop(member, None)
            case kv.WireResponse(api="SyncGroup", member=member):
                member_id = served.pop(member, "")
                if member_id and r.error not in _ALLOWED:
                    found.append(_unfenced(r, member, member_id, holder.get(member_id)))
    return found


def _unfenced(
    r: k.LateRequest | k.SyncGroupResponse | kv.WireResponse,
    member: str,
    member_id: str,
    holding: str | None,
    *,
    parked: bool = False,
) -> Violation:
    answer = r.error
    why = (
        "ClassicGroup#replaceStaticMember fences the SyncGroup parked in CompletingRebalance"
        if parked
        else "ClassicGroup#validateMember fences it before any other check"
    )
    return violation_at(
        SYNC_NOT_FENCED,
        f"{member}: SyncGroup with member id {member_id}, whose group.instance.id "
        f"{holding or 'another member id'} holds now, answered "
        f"{'nothing yet (parked)' if answer is None else answer}, not FENCED_INSTANCE_ID "
        f"(KIP-345: {why})",
        r,
        member=member,
        member_id=member_id,
    )


FENCING_CONTRACT_CHECKERS = (check_sync_fenced,)
