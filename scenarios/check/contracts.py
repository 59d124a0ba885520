"""Contract checkers: one published rule of a KIP or of Kafka's classic coordinator each.

Pure functions over one run's records (``violation`` records skipped, ``seq`` order), each
returning violations ``{"invariant", "detail", "cause_seq", ...}`` like
:mod:`scenarios.check.protocol_checkers`, which runs them (so do ``groupsim run``, ``chaos``
and ``check``, also on ``groupsim serve`` logs where the records they need exist). Each is
one pass over the log with O(1) work per record (O(size of the record) for the ``assignor``
and ``streams_assignment`` records). ``docs/chaos.md`` ("Contract rules") lists every rule of
the KIPs with its checker, or why the log cannot judge it. The rules of the coordinator's
answers, of KIP-814 and of the coordinator's timers (KIP-62's join phase, KIP-394's pending
members) are in :mod:`scenarios.check.coordinator_contracts`; KIP-415's config offset on the
worker side in :mod:`scenarios.check.config_contracts`; the rules on the
Streams leader's assignment itself (KIP-441 warm-up budget and standby count, KIP-708 tag
spread, KIP-925 ``min_traffic`` cost) in :mod:`scenarios.check.assignment_contracts`; the
KIP-415 bounds on the Connect leader's round in :mod:`scenarios.check.connect_contracts`; the
consumer assignors' balance and stickiness in :mod:`scenarios.check.consumer_contracts`; that
a parked SyncGroup is answered in :mod:`scenarios.check.parked_sync_contracts`; all are
registered here.

``revoked_and_reassigned`` — KIP-415, ``IncrementalCooperativeAssignor#performTaskAssignment``
    Under an incremental protocol (Connect ``compatible``/``sessioned``/``static``), work is
    revoked in one round and handed out only in a later one: a leader's ``assignor`` record
    never lists a connector or task as revoked from one member and assigned to another.
``scheduled_delay_not_shared`` — KIP-415, ``IncrementalCooperativeAssignor#performTaskAssignment``
    (``fillAssignments``): every member of an incremental round gets the leader's
    ``ScheduledDelay``: an ``assignment`` (error 0) carries the ``delay_ms`` of the leader's
    latest ``assignor`` record of its generation (the countdown after which every member, not
    only the leader, rejoins).
``probing_rebalance_missing`` — KIP-441, ``HighAvailabilityTaskAssignor#assign``,
    ``StreamsPartitionAssignor#assign``: a Streams leader decision that places warm-up
    replicas must say a probing rebalance is needed (``probing_rebalance_needed``), and — when
    no follow-up for revocation is due instead and it is not a version-probing round — the
    leader schedules it (``probing_rebalance_scheduled`` of that generation, at ``t +
    interval``) before it logs anything else.
``followup_rebalance_missing`` — KIP-429 with KIP-441, ``StreamsPartitionAssignor#assign``
    (cooperative): an active task whose partition another client still owns is withheld
    (``withheld`` in the leader's ``streams_assignment``) and the client it goes to is told to
    rejoin at once: that member's ``assignment`` of the generation has ``next_rebalance_ms``
    0 (``AssignmentInfo.nextRebalanceMs``), so the revocation round is followed by the move.
    A generation id reused after a coordinator failover is judged by its latest decision.
``generation_skipped`` — ``ClassicGroup#initNextGeneration``
    Each completed join phase adds exactly one to the generation: a ``generation`` record is
    the previous one plus one (or the generation a ``group_loaded`` reloaded, plus one).
``member_id_not_required`` — KIP-394, ``GroupMetadataManager#classicGroupJoinNewDynamicMember``
    A JoinGroup (v4+) with an empty member id and no ``group.instance.id`` is answered
    MEMBER_ID_REQUIRED (with the id to use), never admitted at once: the member's next
    JoinGroup answer is not ``NONE``. Simulated members send v9; in a served log the
    ``wire_request`` says the version and the instance id.
``static_rejoin_rebalanced`` (and ``static_rejoin_not_rebalanced``; both in
    :mod:`scenarios.check.coordinator_contracts`) — KIP-345,
    ``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``: a known static
    member rejoining under a new member id while the group is Stable triggers a rebalance only
    if the protocol the group would elect changes. Judged when the vote is known and has one
    winner, the protocol the group runs: then the ``member_replaced`` must not be followed, in
    the same coordinator step, by ``Stable -> PreparingRebalance``.
``fenced_member_accepted`` — KIP-345, ``ClassicGroup#validateMember``: once a static
    member's id was replaced (``member_replaced``), the old id is fenced: a JoinGroup,
    SyncGroup or Heartbeat sent with it afterwards is answered FENCED_INSTANCE_ID (or another
    error), never ``NONE``. A served log judges the coordinator's ``wire_response``; a
    simulated one a request logged after the replacement and the member's next answer of
    that kind.
``zombie_owns_work`` — KIP-345: a process whose static member id another process took over
    is fenced for good (:mod:`scenarios.check.zombie_contracts`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from msgspec import UNSET

from scenarios.check.answer_contracts import (
    ANSWER_CONTRACT_CHECKERS,
    ANSWER_CONTRACT_INVARIANTS,
)
from scenarios.check.assignment_contracts import ASSIGNMENT_CHECKERS, ASSIGNMENT_INVARIANTS
from scenarios.check.config_contracts import CONFIG_BEHIND_ASSIGNMENT, check_config_before_work
from scenarios.check.connect_contracts import (
    CONNECT_CONTRACT_CHECKERS,
    CONNECT_CONTRACT_INVARIANTS,
)
from scenarios.check.consumer_contracts import (
    CONSUMER_CONTRACT_CHECKERS,
    CONSUMER_CONTRACT_INVARIANTS,
)
from scenarios.check.coordinator_config_contracts import (
    COORDINATOR_CONFIG_CHECKERS,
    COORDINATOR_CONFIG_INVARIANTS,
)
from scenarios.check.coordinator_contracts import (
    ASSIGNMENT_RECOMPUTED,
    HEARTBEAT_COMPLETING_REFUSED,
    HEARTBEAT_NOT_REBALANCING,
    JOIN_ANSWER_OUTSIDE_GENERATION,
    JOIN_COMPLETED_EARLY,
    JOIN_PHASE_OVERRAN,
    PENDING_MEMBER_KEPT,
    PENDING_MEMBER_LISTED,
    PENDING_SYNC_EXPIRED_EARLY,
    PENDING_SYNC_KEPT,
    STATIC_REJOIN_NOT_REBALANCED,
    STATIC_REJOIN_REBALANCED,
    check_assignment_once,
    check_completing_heartbeat,
    check_join_answer_in_generation,
    check_join_phase_length,
    check_pending_members,
    check_pending_sync,
    check_rebalance_heartbeat,
    check_static_rejoin,
)
from scenarios.check.kip_contracts import KIP_CONTRACT_CHECKERS, KIP_CONTRACT_INVARIANTS
from scenarios.check.log_rules import (
    Violation,
    finds_only_with,
    reads_all_typed,
    reads_typed,
    violation_at,
)
from scenarios.check.parked_sync_contracts import PARKED_SYNC_CHECKERS, PARKED_SYNC_INVARIANTS
from scenarios.check.rejoin_contracts import REJOIN_CONTRACT_CHECKERS, REJOIN_CONTRACT_INVARIANTS
from scenarios.check.zombie_contracts import ZOMBIE_OWNS_WORK, check_zombie_instance
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_serve as kv
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.kinds import Work
from scenarios.eventlog.records import RECORD_TYPES, LogRecord

__all__ = [
    "CONTRACT_INVARIANTS",
    "CONTRACT_CHECKERS",
    "check_revoked_and_reassigned",
    "check_probing_after_warmups",
    "check_delay_shared",
    "check_followup_for_withheld",
    "check_generation_step",
    "check_member_id_required",
    "check_static_rejoin",
    "check_fenced_member",
    "check_zombie_instance",
]


REVOKED_AND_REASSIGNED = "revoked_and_reassigned"
PROBING_REBALANCE_MISSING = "probing_rebalance_missing"
SCHEDULED_DELAY_NOT_SHARED = "scheduled_delay_not_shared"
FOLLOWUP_REBALANCE_MISSING = "followup_rebalance_missing"
GENERATION_SKIPPED = "generation_skipped"
MEMBER_ID_NOT_REQUIRED = "member_id_not_required"
FENCED_MEMBER_ACCEPTED = "fenced_member_accepted"

CONTRACT_INVARIANTS = (
    REVOKED_AND_REASSIGNED,
    PROBING_REBALANCE_MISSING,
    SCHEDULED_DELAY_NOT_SHARED,
    FOLLOWUP_REBALANCE_MISSING,
    GENERATION_SKIPPED,
    MEMBER_ID_NOT_REQUIRED,
    STATIC_REJOIN_REBALANCED,
    STATIC_REJOIN_NOT_REBALANCED,
    FENCED_MEMBER_ACCEPTED,
    HEARTBEAT_NOT_REBALANCING,
    HEARTBEAT_COMPLETING_REFUSED,
    ASSIGNMENT_RECOMPUTED,
    ZOMBIE_OWNS_WORK,
    JOIN_PHASE_OVERRAN,  # KIP-62 / KIP-394 timers (coordinator_contracts.py)
    JOIN_COMPLETED_EARLY,
    PENDING_MEMBER_KEPT,
    PENDING_MEMBER_LISTED,
    JOIN_ANSWER_OUTSIDE_GENERATION,
    PENDING_SYNC_KEPT,
    PENDING_SYNC_EXPIRED_EARLY,
    CONFIG_BEHIND_ASSIGNMENT,  # KIP-415 worker side (config_contracts.py)
    *ASSIGNMENT_INVARIANTS,  # KIP-441/708/925 assignment rules (assignment_contracts.py)
    *CONNECT_CONTRACT_INVARIANTS,  # KIP-415 bounds on the leader's round (connect_contracts.py)
    *CONSUMER_CONTRACT_INVARIANTS,  # consumer assignors' bounds (consumer_contracts.py)
    *KIP_CONTRACT_INVARIANTS,  # the issue-23 audit's rules (kip_contracts.py)
    *ANSWER_CONTRACT_INVARIANTS,  # the round-28 audit's rules (answer_contracts.py)
    *REJOIN_CONTRACT_INVARIANTS,  # rejoin at once; a lost JoinGroup answer (rejoin_contracts.py)
    *COORDINATOR_CONFIG_INVARIANTS,  # group.max.size, session bounds (coordinator_config_...)
    *PARKED_SYNC_INVARIANTS,  # a parked SyncGroup is answered (parked_sync_contracts.py)
)

#: Connect protocols whose leader runs an incremental (KIP-415) assignor.
_INCREMENTAL = frozenset({"compatible", "sessioned", "static"})


def _work_items(work: Work) -> Iterator[tuple[str, str]]:
    """``("connectors", name)`` for each connector of ``work``, then ``("tasks", id)``."""
    for connector in work.connectors:
        yield "connectors", connector
    for task in work.tasks:
        yield "tasks", task


@reads_typed("assignor")
def check_revoked_and_reassigned(records: Sequence[LogRecord]) -> list[Violation]:
    """``revoked_and_reassigned``: an incremental round revokes before it reassigns."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, k.Assignor) or r.protocol not in _INCREMENTAL or not r.revoked:
            continue
        from_whom: dict[tuple[str, str], str] = {}
        for member_id, work in r.revoked.items():
            for pair in _work_items(work):
                from_whom[pair] = member_id
        for member_id, work in r.assigned.items():
            for key, item in _work_items(work):
                owner = from_whom.get((key, item))
                if owner is not None and owner != member_id:
                    found.append(
                        violation_at(
                            REVOKED_AND_REASSIGNED,
                            f"generation {r.generation}: {key[:-1]} {item} revoked "
                            f"from {owner} and assigned to {member_id} in the same round",
                            r,
                            generation=r.generation,
                            member=owner,
                        )
                    )
    return found


@finds_only_with("streams_assignment")  # (the warm-ups are a Streams leader's)
@reads_all_typed
def check_probing_after_warmups(records: Sequence[LogRecord]) -> list[Violation]:
    """``probing_rebalance_missing``: warm-ups imply a scheduled probing rebalance. Reads
    every record: the schedule must be the leader's next record, whatever its kind."""
    found: list[Violation] = []
    awaiting: dict[str, ks.StreamsAssignment] = {}  # leader -> its decision awaiting the schedule
    for r in records:
        member = getattr(r, "member", None) if awaiting else None  # whose record it is, if any
        pending = awaiting.pop(member, None) if isinstance(member, str) else None
        if pending is not None:
            if (
                not isinstance(r, ks.ProbingRebalanceScheduled)
                or r.generation != pending.generation
            ):
                found.append(
                    violation_at(
                        PROBING_REBALANCE_MISSING,
                        f"generation {pending.generation}: the leader {member} placed "
                        "warm-ups but scheduled no probing rebalance",
                        pending,
                        generation=pending.generation,
                        member=member,
                    )
                )
            elif r.at_ms != pending.t_ms + r.interval_ms:
                found.append(
                    violation_at(
                        PROBING_REBALANCE_MISSING,
                        f"generation {pending.generation}: probing rebalance at "
                        f"{r.at_ms}, not {pending.t_ms} + probing.rebalance."
                        f"interval.ms {r.interval_ms}",
                        r,
                        generation=pending.generation,
                        member=member,
                    )
                )
        if type(r) is not ks.StreamsAssignment or r.version_probing:
            continue
        if not any(c.warmups for c in r.clients.values()):
            continue
        if not r.probing_rebalance_needed:
            found.append(
                violation_at(
                    PROBING_REBALANCE_MISSING,
                    f"generation {r.generation}: warm-ups placed but "
                    "probing_rebalance_needed is false",
                    r,
                    generation=r.generation,
                    member=r.member,
                )
            )
        elif not r.followup_for_revocation:
            awaiting[r.member] = r
    for member, pending in awaiting.items():
        found.append(
            violation_at(
                PROBING_REBALANCE_MISSING,
                f"generation {pending.generation}: the leader {member} placed warm-ups "
                "but scheduled no probing rebalance",
                pending,
                generation=pending.generation,
                member=member,
            )
        )
    return found


@reads_typed("assignor", "assignment")
def check_delay_shared(records: Sequence[LogRecord]) -> list[Violation]:
    """``scheduled_delay_not_shared``: a member's delay is its round's leader's delay."""
    found: list[Violation] = []
    delay_of: dict[int, int] = {}  # generation -> delay_ms of its latest assignor record
    for r in records:
        if isinstance(r, k.Assignor) and r.protocol in _INCREMENTAL and r.error == 0:
            delay_of[r.generation] = r.delay_ms
        elif (
            isinstance(r, k.Assignment)
            and r.protocol in _INCREMENTAL
            and r.error == 0
            and r.delay_ms is not UNSET
        ):
            leader = delay_of.get(r.generation)
            if leader is not None and r.delay_ms != leader:
                found.append(
                    violation_at(
                        SCHEDULED_DELAY_NOT_SHARED,
                        f"{r.member} got delay {r.delay_ms} ms in generation "
                        f"{r.generation}; its leader computed {leader} ms",
                        r,
                        member=r.member,
                        generation=r.generation,
                        delay_ms=r.delay_ms,
                    )
                )
    return found


@reads_typed("streams_assignment", "assignment")
def check_followup_for_withheld(records: Sequence[LogRecord]) -> list[Violation]:
    """``followup_rebalance_missing``: a client given a withheld active rejoins at once."""
    found: list[Violation] = []
    expected: set[tuple[int, str]] = set()  # (generation, member id) given withheld actives
    for r in records:
        if isinstance(r, ks.StreamsAssignment):
            # A coordinator failover in CompletingRebalance reloads the previous generation
            # (GroupMetadataManager writes the group record at the leader's SyncGroup, not at
            # completeClassicGroupJoin), so the next round reuses the id: its leader decision
            # replaces the lost one, whose SyncGroups were answered NOT_COORDINATOR.
            expected = {key for key in expected if key[0] != r.generation}
            for decision in r.clients.values():
                if decision.withheld:
                    expected.add((r.generation, decision.member_id))
        elif isinstance(r, k.Assignment) and r.error == 0 and r.next_rebalance_ms is not UNSET:
            key = (r.generation, r.member_id)
            if key in expected:
                expected.discard(key)
                if r.next_rebalance_ms != 0:
                    found.append(
                        violation_at(
                            FOLLOWUP_REBALANCE_MISSING,
                            f"{r.member} was given withheld actives in generation "
                            f"{r.generation} but next_rebalance_ms is "
                            f"{r.next_rebalance_ms}, not 0 (rejoin at once)",
                            r,
                            member=r.member,
                            generation=r.generation,
                        )
                    )
    return found


@reads_typed("group_loaded", "generation")
def check_generation_step(records: Sequence[LogRecord]) -> list[Violation]:
    """``generation_skipped``: every ``generation`` record is the previous one plus one."""
    found: list[Violation] = []
    last: int | None = None
    for r in records:
        if isinstance(r, k.GroupLoaded):
            last = r.generation
        elif isinstance(r, k.Generation):
            gen = r.generation
            if last is not None and gen > last + 1:
                found.append(
                    violation_at(
                        GENERATION_SKIPPED,
                        f"generation {gen} follows generation {last} (one join phase adds one)",
                        r,
                        generation=gen,
                    )
                )
            last = gen
    return found


_JOIN_TRACE = ("join_group_request", "join_group_response", "wire_request", "wire_response")


@reads_typed("member_start", "member_crash", "member_stop", "connection_error", *_JOIN_TRACE)
def check_member_id_required(records: Sequence[LogRecord]) -> list[Violation]:
    """``member_id_not_required``: a new dynamic member first hears MEMBER_ID_REQUIRED."""
    found: list[Violation] = []
    static: dict[str, bool] = {}  # simulated member -> it has a group.instance.id
    waiting: set[str] = set()  # members whose JoinGroup without a member id awaits its answer
    for r in records:
        match r:
            case k.MemberStart(member=member, config=config):
                static[member] = bool(config.group_instance_id)
                waiting.discard(member)
            case k.MemberCrash(member=member) | k.MemberStop(member=member):
                waiting.discard(member)
            case kv.ConnectionErrorRecord(member=member):
                waiting.discard(member)
            case k.JoinGroupRequest(member=member, member_id=member_id):
                if member_id == "" and not static.get(member, False):
                    waiting.add(member)
                else:
                    waiting.discard(member)
            case kv.WireRequest(api="JoinGroup", member=member):
                if r.member_id == "" and not r.group_instance_id and r.version >= 4:
                    waiting.add(member)
                else:
                    waiting.discard(member)
            case (
                k.JoinGroupResponse(member=member, member_id=member_id)
                | kv.WireResponse(api="JoinGroup", member=member, member_id=member_id)
            ) if member in waiting:
                waiting.discard(member)
                if r.error == "NONE":
                    found.append(
                        violation_at(
                            MEMBER_ID_NOT_REQUIRED,
                            f"{member} joined without a member id and was admitted as "
                            f"{None if member_id is UNSET else member_id} without "
                            "MEMBER_ID_REQUIRED first",
                            r,
                            member=member,
                        )
                    )
    return found


_REQUEST_KINDS = {
    "join_group_request": "join_group_response",
    "sync_group_request": "sync_group_response",
    "heartbeat_request": "heartbeat_response",
}
#: a request's class -> the kind of its answer; an answer's class -> its kind
_ANSWER_OF = {RECORD_TYPES[q]: a for q, a in _REQUEST_KINDS.items()}
_ANSWER_KIND = {RECORD_TYPES[a]: a for a in _REQUEST_KINDS.values()}
_FENCEABLE_APIS = frozenset({"JoinGroup", "SyncGroup", "Heartbeat"})


@reads_typed("member_replaced", "wire_response", *_REQUEST_KINDS, *_REQUEST_KINDS.values())
def check_fenced_member(records: Sequence[LogRecord]) -> list[Violation]:
    """``fenced_member_accepted``: a replaced static member id is never answered ``NONE``."""
    found: list[Violation] = []
    fenced: set[str] = set()
    sent: dict[tuple[str, str], str] = {}  # (member, answer kind) -> the fenced id it sent
    for r in records:
        match r:
            case k.MemberReplaced(old_member_id=old, member_id=new):
                fenced.add(old)
                fenced.discard(new)
            case k.JoinGroupRequest() | k.SyncGroupRequest() | k.HeartbeatRequest():
                key = (r.member, _ANSWER_OF[type(r)])
                if r.member_id in fenced:
                    sent[key] = r.member_id
                else:
                    sent.pop(key, None)
            case k.JoinGroupResponse() | k.SyncGroupResponse() | k.HeartbeatResponse():
                kind = _ANSWER_KIND[type(r)]
                request_id = sent.pop((r.member, kind), None)
                if request_id is not None and r.error == "NONE":
                    found.append(_fenced(r, request_id, kind))
            case kv.WireResponse(member_id=str() as member_id, error="NONE") if (
                r.api in _FENCEABLE_APIS and member_id in fenced
            ):
                found.append(_fenced(r, member_id, r.api))
    return found


def _fenced(
    r: k.JoinGroupResponse | k.SyncGroupResponse | k.HeartbeatResponse | kv.WireResponse,
    member_id: str,
    what: str,
) -> Violation:
    return violation_at(
        FENCED_MEMBER_ACCEPTED,
        f"{r.member}: {what} for the replaced static member id {member_id} answered "
        "NONE (KIP-345 fences it: FENCED_INSTANCE_ID)",
        r,
        member=r.member,
        member_id=member_id,
    )


CONTRACT_CHECKERS = (
    check_revoked_and_reassigned,
    check_probing_after_warmups,
    check_delay_shared,
    check_followup_for_withheld,
    check_generation_step,
    check_member_id_required,
    check_static_rejoin,
    check_fenced_member,
    check_rebalance_heartbeat,
    check_completing_heartbeat,
    check_assignment_once,
    check_zombie_instance,
    check_join_phase_length,
    check_pending_members,
    check_join_answer_in_generation,
    check_pending_sync,
    check_config_before_work,
    *ASSIGNMENT_CHECKERS,
    *CONNECT_CONTRACT_CHECKERS,
    *CONSUMER_CONTRACT_CHECKERS,
    *KIP_CONTRACT_CHECKERS,
    *ANSWER_CONTRACT_CHECKERS,
    *REJOIN_CONTRACT_CHECKERS,
    *COORDINATOR_CONFIG_CHECKERS,
    *PARKED_SYNC_CHECKERS,
)
