"""Protocol checkers: pure functions over a whole event log (docs/event-log.md).

Each checker takes the records of one run, in ``seq`` order (``violation`` records are
skipped), and returns :class:`scenarios.check.violation.Violation` s (the fields of a
``violation`` record: ``invariant``, ``detail``, ``cause_seq`` = the offending record's
``seq``, ...). A checker declared with :func:`scenarios.check.log_rules.reads_typed` (or
:func:`scenarios.check.log_rules.reads_all_typed`: the deadline rules, judged at any later
record) reads the records decoded into their Structs
(:data:`scenarios.eventlog.records.LogRecord`) and ``match``es on them (every checker
here does).
They complement :class:`scenarios.check.invariants.InvariantChecker` (ownership and state
table) with the group protocol's own rules; :func:`protocol_violations` runs them all, at the
end of every simulated run (``end_violations`` of both kinds) and in ``groupsim check``.

``generation_regressed``
    The group's ``generation`` records must strictly increase (Kafka's
    ``ClassicGroup#initNextGeneration`` only ever adds one). A coordinator failover reloads
    the stored record (``group_loaded``): the next generation must exceed the loaded one.
``member_generation_regressed``
    A member never applies (``assignment``) a generation older than one it already applied
    since its process started (``member_start``); a ``group_loaded`` of an older generation
    lowers what it may apply next to that generation (``AbstractCoordinator`` takes the
    generation from the SyncGroup it sent, which the coordinator accepted only if current).
``stale_generation_accepted``
    The coordinator answers SyncGroup and Heartbeat only for the current generation
    (``GroupMetadataManager#classicGroupSync`` / ``#classicGroupHeartbeat``: ILLEGAL_GENERATION
    otherwise). A ``sync_group_request`` or ``heartbeat_request`` whose ``generation`` was
    already older than the group's latest ``generation`` record when it was sent, answered
    with ``error: "NONE"``, is a violation (unless a ``group_loaded`` came in between: a
    failover may reload an older generation). A ``late_request`` (a SyncGroup or Heartbeat
    held by a ``delay_request`` fault) is judged when it arrives: if its ``generation`` is not
    the group's latest, any answer but an error (``NONE``, ``REBALANCE_IN_PROGRESS``, or
    parked: ``error: null``) is a violation.
``protocol_mismatch``
    Every member runs the elected protocol: an ``assignment`` of generation *g* must carry the
    ``protocol`` of the ``generation`` record of *g* (``JoinGroupResponse.protocolName``;
    Connect's ``WorkerCoordinator#onJoinComplete`` decodes with it).
``leader_changed``
    A dynamic leader that is a member of the next generation leads it too; every generation's
    leader is one of its members (:mod:`scenarios.check.leadership`).
``protocol_vote``
    The coordinator elects by vote (``ClassicGroup#selectProtocol``): the candidates are the
    protocols every member of the generation supports, each member votes for the first
    candidate in its own list, and the protocol with the most votes wins (any of them on a
    tie: Kafka breaks it by ``HashMap`` order, not part of the protocol). Each member's list is
    that of its member id's JoinGroup as the member logged it (``join_group_request`` with
    that id, or the request a ``join_group_response`` gave that id to); a generation with a
    member whose list the log does not show is not judged. In a Connect group this means the
    lowest protocol every worker speaks: one eager worker pins the group to ``default``.
``static_placement``
    KIP-987 (groupsim's reading, ``members/assignors/static.py``): in a ``static`` round (an
    ``assignor`` record with ``protocol: "static"``), a newly assigned connector or task that
    a member of that generation names (``static.connectors`` / ``static.tasks`` of its latest
    ``member_start``) goes only to a worker that names it, and a job nobody in the
    generation names never goes to a static worker (one that names any job).
``stale_active_task``
    Kafka Streams: a client runs as active only what its latest assignment gives it
    (``TaskManager#handleAssignment`` closes the rest). Checked at each later ``assignment``
    of the same client and at the end of the run, for clients still running.
``scheduled_delay``
    KIP-415's scheduled-rebalance delay on the leader's ``assignor`` records: never above
    ``scheduled.rebalance.max.delay.ms``, counts down while lost work waits, cleared once the
    delayed rebalance fired (:mod:`scenarios.check.scheduled_delay`).
``unexplained_removal``
    The coordinator evicts (session timeout, not rejoined, SyncGroup timeout) only a member
    that went silent: a running member's current id needs a fault on its link, or a failover,
    within the timeout before (:mod:`scenarios.check.removals`).
``quiet_period_balance``
    Connect: converged and balanced at the end of every quiet period longer than the
    liveness bound, not only at the end of the run (:mod:`scenarios.check.quiet_periods`).
``active_not_caught_up``
    Kafka Streams, KIP-441: after the Streams leader's assignor ran (a ``streams_assignment``
    record, not a version-probing one), every stateful active task sits on a client caught up
    on it (lag within ``acceptable.recovery.lag``, or −2: it ran the task as active) or on one
    of the clients with the smallest lag: ``TaskMovement#assignActiveTaskMovements`` moves
    every other one to a caught-up client, warming up the destination instead.
``active_and_standby`` (on the assignment)
    Kafka Streams: an ``assignment`` listing a task both as active and as standby.
Contract checkers (:mod:`scenarios.check.contracts`: one published KIP rule each)
    ``revoked_and_reassigned``, ``scheduled_delay_not_shared``, ``probing_rebalance_missing``,
    ``followup_rebalance_missing``, ``generation_skipped``,
    ``member_id_not_required``, ``static_rejoin_rebalanced``, ``fenced_member_accepted``,
    ``heartbeat_not_rebalancing``, ``assignment_recomputed``;
    on the Streams leader's assignment (:mod:`scenarios.check.assignment_contracts`)
    ``warmups_over_budget``, ``standby_replicas_missing``, ``standby_tags_not_spread``,
    ``rack_cost_raised``; on the Connect leader's incremental round
    (:mod:`scenarios.check.connect_contracts`) ``revoked_below_floor``,
    ``lost_work_not_returned``; on a consumer leader's round
    (:mod:`scenarios.check.consumer_contracts`) ``consumer_assignment_unbalanced``,
    ``sticky_partitions_moved``; the issue-23 audit's (:mod:`scenarios.check.kip_contracts`)
    ``initial_delay_skipped``, ``range_not_copartitioned``, ``range_rack_unmatched``,
    ``warmup_on_caught_up_client``,
    ``scheduled_rejoin_missed``, ``static_member_left``;
    KIP-345's fencing of a SyncGroup (:mod:`scenarios.check.fencing_contracts`)
    ``sync_not_fenced``; KIP-881's rack rule of the sticky assignors
    (:mod:`scenarios.check.rack_contracts`) ``sticky_rack_unmatched``; KIP-62's poll timer
    (:mod:`scenarios.check.poll_contracts`) ``poll_timer_off_deadline``,
    ``poll_timeout_not_left``.
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.assignment_contracts import check_streams_active_caught_up
from scenarios.check.contracts import CONTRACT_CHECKERS, CONTRACT_INVARIANTS
from scenarios.check.fencing_contracts import (
    FENCING_CONTRACT_CHECKERS,
    FENCING_CONTRACT_INVARIANTS,
)
from scenarios.check.leadership import LEADER_CHANGED, check_leader_continuity
from scenarios.check.log_rules import (
    KnownProtocols,
    Record,
    TypedChecker,
    Violation,
    finds_only_with,
    kinds_needed,
    kinds_read,
    protocol_vote,
    reads_all_typed,
    reads_typed,
    violation_at,
)
from scenarios.check.poll_contracts import POLL_CONTRACT_CHECKERS, POLL_CONTRACT_INVARIANTS
from scenarios.check.quiet_periods import QUIET_PERIOD_BALANCE, check_quiet_period_balance
from scenarios.check.rack_contracts import RACK_CONTRACT_CHECKERS, RACK_CONTRACT_INVARIANTS
from scenarios.check.removals import UNEXPLAINED_REMOVAL, check_unexplained_removal
from scenarios.check.scheduled_delay import SCHEDULED_DELAY, check_scheduled_delay
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.kinds import Violation as Violated
from scenarios.eventlog.records import RECORD_TYPES, LogRecord, decode_log

__all__ = [
    "PROTOCOL_INVARIANTS",
    "check_generation_increases",
    "check_member_generation",
    "check_stale_generation_accepted",
    "check_elected_protocol",
    "check_protocol_vote",
    "check_static_placement",
    "check_streams_active_follows_assignment",
    "check_streams_assignment_disjoint",
    "check_streams_active_caught_up",
    "protocol_violations",
]


PROTOCOL_INVARIANTS = (
    "generation_regressed",
    "member_generation_regressed",
    "stale_generation_accepted",
    "protocol_mismatch",
    "protocol_vote",
    LEADER_CHANGED,
    "active_not_caught_up",
    "static_placement",
    "stale_active_task",
    SCHEDULED_DELAY,
    UNEXPLAINED_REMOVAL,
    QUIET_PERIOD_BALANCE,
    *CONTRACT_INVARIANTS,
    *FENCING_CONTRACT_INVARIANTS,
    *RACK_CONTRACT_INVARIANTS,
    *POLL_CONTRACT_INVARIANTS,
)


@reads_typed("group_loaded", "generation")
def check_generation_increases(records: Sequence[LogRecord]) -> list[Violation]:
    """``generation_regressed``: each ``generation`` record exceeds the previous one (or the
    generation of the latest ``group_loaded``)."""
    found: list[Violation] = []
    last: int | None = None
    for r in records:
        match r:
            case k.GroupLoaded(generation=loaded):
                last = loaded
            case k.Generation(generation=gen):
                if last is not None and gen <= last:
                    found.append(
                        violation_at(
                            "generation_regressed",
                            f"generation {gen} follows generation {last}",
                            r,
                            generation=gen,
                        )
                    )
                last = gen
    return found


@reads_typed("member_start", "group_loaded", "assignment")
def check_member_generation(records: Sequence[LogRecord]) -> list[Violation]:
    """``member_generation_regressed``: per member process, applied generations never go
    back (lowered by a ``group_loaded`` of an older generation)."""
    found: list[Violation] = []
    applied: dict[str, int] = {}
    for r in records:
        match r:
            case k.MemberStart(member=member):
                applied.pop(member, None)
            case k.GroupLoaded(generation=loaded):
                for name, applied_gen in applied.items():
                    applied[name] = min(applied_gen, loaded)
            case k.Assignment(member=member, generation=gen):
                before = applied.get(member)
                if before is not None and gen < before:
                    found.append(
                        violation_at(
                            "member_generation_regressed",
                            f"{member} applied generation {gen} after generation {before}",
                            r,
                            member=member,
                            generation=gen,
                        )
                    )
                applied[member] = max(gen, before if before is not None else gen)
    return found


#: a SyncGroup or Heartbeat request/response, by the RPC its stale-generation rule names
_RPC = {
    k.SyncGroupRequest: "sync",
    k.HeartbeatRequest: "heartbeat",
    k.SyncGroupResponse: "sync",
    k.HeartbeatResponse: "heartbeat",
}


@reads_typed(
    "generation",
    "group_loaded",
    "member_start",
    "member_crash",
    "member_stop",
    "sync_group_request",
    "heartbeat_request",
    "late_request",
    "sync_group_response",
    "heartbeat_response",
)
def check_stale_generation_accepted(records: Sequence[LogRecord]) -> list[Violation]:
    """``stale_generation_accepted``: SyncGroup/Heartbeat answered NONE for a generation that
    was already stale when the request was sent (paired per member and kind, in order; a
    SyncGroup answer of a later request's generation supersedes the requests before it)."""
    found: list[Violation] = []
    group_gen: int | None = None
    loads = 0
    # (member, "sync"/"heartbeat") -> [(request generation, group generation, loads)]
    pending: dict[tuple[str, str], list[tuple[int, int | None, int]]] = {}
    for r in records:
        match r:
            case k.SyncGroupRequest(member=member) | k.HeartbeatRequest(member=member):
                key = (member, _RPC[type(r)])
                pending.setdefault(key, []).append((r.generation, group_gen, loads))
            case k.SyncGroupResponse(member=member) | k.HeartbeatResponse(member=member):
                rpc = _RPC[type(r)]
                queue = pending.get((member, rpc))
                if not queue:
                    continue
                # rejoined with a SyncGroup in flight: only the newest one's answer is logged
                while rpc == "sync" and len(queue) > 1 and queue[0][0] != r.generation:
                    queue.pop(0)
                sent_gen, current, loads_then = queue.pop(0)
                if (
                    r.error == "NONE"
                    and loads_then == loads
                    and isinstance(current, int)
                    and sent_gen < current
                ):
                    name = "SyncGroup" if rpc == "sync" else "Heartbeat"
                    found.append(
                        violation_at(
                            "stale_generation_accepted",
                            f"{name} of {member} for generation {sent_gen} answered NONE"
                            f" while the group was at generation {current}",
                            r,
                            member=member,
                            generation=sent_gen,
                        )
                    )
            case k.Generation(generation=group_gen):
                pass
            case k.GroupLoaded(generation=group_gen):
                loads += 1
            case (
                k.MemberStart(member=member)
                | k.MemberCrash(member=member)
                | k.MemberStop(member=member)
            ):
                pending.pop((member, "sync"), None)
                pending.pop((member, "heartbeat"), None)
            case k.LateRequest(request="sync_group" | "heartbeat"):
                late = _late_stale_accepted(r, group_gen)
                if late is not None:
                    found.append(late)
    return found


def _late_stale_accepted(r: k.LateRequest, group_gen: int | None) -> Violation | None:
    """A held SyncGroup/Heartbeat (``late_request``) of another generation than the group's
    when it arrived, not answered with an error: ``classicGroupSync``/``classicGroupHeartbeat``
    answer ILLEGAL_GENERATION once the member is known."""
    sent_gen = r.generation
    if not isinstance(sent_gen, int) or not isinstance(group_gen, int) or sent_gen == group_gen:
        return None
    answer = r.error
    if answer not in (None, "NONE", "REBALANCE_IN_PROGRESS"):
        return None
    name = "SyncGroup" if r.request == "sync_group" else "Heartbeat"
    return violation_at(
        "stale_generation_accepted",
        f"late {name} of {r.member} for generation {sent_gen} answered"
        f" {answer or 'later (parked)'} while the group was at generation {group_gen}",
        r,
        member=r.member,
        generation=sent_gen,
    )


@reads_typed("generation", "group_loaded", "assignment")
def check_elected_protocol(records: Sequence[LogRecord]) -> list[Violation]:
    """``protocol_mismatch``: an assignment's ``protocol`` is its generation's protocol."""
    found: list[Violation] = []
    elected: dict[int, str | None] = {}
    for r in records:
        match r:
            case (
                k.Generation(generation=gen, protocol=protocol)
                | k.GroupLoaded(generation=gen, protocol=protocol)
            ):
                elected[gen] = protocol
            case k.Assignment(error=0, generation=gen, protocol=protocol):
                want = elected.get(gen)
                if want is not None and protocol != want:
                    found.append(
                        violation_at(
                            "protocol_mismatch",
                            f"{r.member} applied generation {gen} as {protocol!r};"
                            f" the group elected {want!r}",
                            r,
                            member=r.member,
                            generation=gen,
                        )
                    )
    return found


@reads_typed(
    "member_start", "join_group_request", "join_group_response", "group_loaded", "generation"
)
def check_protocol_vote(records: Sequence[LogRecord]) -> list[Violation]:
    """``protocol_vote``: each ``generation`` record's ``protocol`` wins the vote of its
    members' protocol lists (see the module docstring)."""
    found: list[Violation] = []
    known = KnownProtocols()
    for r in records:
        known.see_record(r)
        if isinstance(r, k.Generation) and r.protocol is not None:
            lists = [known.of(mid) for mid in r.member_ids]
            if not lists or any(not p for p in lists):
                continue
            winners, candidates = protocol_vote([p for p in lists if p])
            elected = r.protocol
            if elected not in winners:
                found.append(
                    violation_at(
                        "protocol_vote",
                        f"generation {r.generation} elected {elected!r}; the vote of "
                        f"its members gives {' or '.join(map(repr, winners)) or 'no protocol'}"
                        f" (supported by all: {sorted(candidates)})",
                        r,
                        generation=r.generation,
                    )
                )
    return found


@reads_typed("member_start", "generation", "assignor")
def check_static_placement(records: Sequence[LogRecord]) -> list[Violation]:
    """``static_placement``: KIP-987 static jobs go only to workers that name them, wildcard
    jobs only to wildcard workers (judged on the leader's ``assignor`` records)."""
    found: list[Violation] = []
    names: dict[str, frozenset[str]] = {}  # member -> the jobs its static config names
    members_of: dict[int, dict[str, str]] = {}  # generation -> member id -> member
    for r in records:
        match r:
            case k.MemberStart(member=member, config=config):
                named = [*(config.static_connectors or ()), *(config.static_tasks or ())]
                names[member] = frozenset(named)
            case k.Generation(generation=generation, member_ids=ids, members=who):
                members_of[generation] = dict(zip(ids, who, strict=False))
            case k.Assignor(protocol="static", generation=generation):
                in_gen = members_of.get(generation, {})
                namers: dict[str, set[str]] = {}
                for member in in_gen.values():
                    for job in names.get(member, ()):
                        namers.setdefault(job, set()).add(member)
                for member_id, given in r.assigned.items():
                    member = in_gen.get(member_id, member_id)
                    for job in [*given.connectors, *given.tasks]:
                        want = namers.get(job)
                        if want and member not in want:
                            why = f"static job {job} given to {member}; named by {sorted(want)}"
                        elif not want and names.get(member):
                            why = f"wildcard job {job} given to static worker {member}"
                        else:
                            continue
                        found.append(
                            violation_at("static_placement", why, r, member=member, job=job)
                        )
    return found


#: the records that start or stop a client's active task, restart it, or assign it
_ACTIVE_TYPES = frozenset(
    {
        ks.ActiveTaskStart,
        ks.ActiveTaskStopped,
        k.MemberStart,
        k.MemberCrash,
        k.MemberStop,
        k.Assignment,
    }
)


@finds_only_with("active_task_start")  # (a client holds no active task before one starts)
@reads_all_typed
def check_streams_active_follows_assignment(records: Sequence[LogRecord]) -> list[Violation]:
    """``stale_active_task``: a Streams client holds as active only tasks of its latest
    assignment, by its next assignment and at the end of the run (judged at the log's last
    record, whatever its kind)."""
    found: list[Violation] = []
    held: dict[str, dict[str, None]] = {}
    latest: dict[str, set[str]] = {}
    last_record: LogRecord | None = None

    def stale(member: str, at: LogRecord) -> None:
        given = latest.get(member)
        if given is None:
            return
        for task in held.get(member, {}):
            if task not in given:
                found.append(
                    violation_at(
                        "stale_active_task",
                        f"{member} still runs active task {task} its latest assignment"
                        " does not give it",
                        at,
                        member=member,
                        task=task,
                    )
                )

    for r in records:
        last_record = r
        if type(r) not in _ACTIVE_TYPES:
            continue
        match r:
            case ks.ActiveTaskStart(member=member, task=task):
                held.setdefault(member, {})[task] = None
            case ks.ActiveTaskStopped(member=member, task=task):
                held.get(member, {}).pop(task, None)
            case (
                k.MemberStart(member=member)
                | k.MemberCrash(member=member)
                | k.MemberStop(member=member)
            ):
                held.pop(member, None)
                latest.pop(member, None)
            case k.Assignment(member=member, active=list() as active):
                stale(member, r)
                latest[member] = set(active)
    if last_record is not None:
        for member in list(held):
            stale(member, last_record)
    return found


@reads_typed("assignment")
def check_streams_assignment_disjoint(records: Sequence[LogRecord]) -> list[Violation]:
    """``active_and_standby`` on the assignment itself: a Streams ``assignment`` that lists a
    task both as active and as standby (Kafka's ``ClientState#assignStandby`` refuses it; the
    client would hide it by not creating the standby)."""
    found: list[Violation] = []
    for r in records:
        match r:
            case k.Assignment(active=list() as active, standby=list() as standby):
                both = sorted(set(active) & set(standby))
                if both:
                    found.append(
                        violation_at(
                            "active_and_standby",
                            f"{r.member} is assigned {both[0]} both as active and standby",
                            r,
                            member=r.member,
                            task=both[0],
                        )
                    )
    return found


_CHECKERS: tuple[TypedChecker, ...] = (
    check_generation_increases,
    check_member_generation,
    check_stale_generation_accepted,
    check_elected_protocol,
    check_protocol_vote,
    check_leader_continuity,
    check_static_placement,
    check_streams_active_follows_assignment,
    check_streams_assignment_disjoint,
    check_streams_active_caught_up,
    check_scheduled_delay,
    check_unexplained_removal,
    check_quiet_period_balance,
    *CONTRACT_CHECKERS,
    *FENCING_CONTRACT_CHECKERS,
    *RACK_CONTRACT_CHECKERS,
    *POLL_CONTRACT_CHECKERS,
)


def protocol_violations(
    records: Sequence[Record], typed: Sequence[LogRecord] | None = None
) -> list[Violation]:
    """Every protocol checker over ``records`` (``violation`` records ignored), in checker
    order, over the log decoded once (``typed``, when given: ``records`` decoded by
    ``decode_log``). One declared ``log_rules.reads_typed(kinds)`` gets only those Structs,
    in log order, from one index of the log by kind (the same verdict, without a scan of the
    whole log each); one declared ``reads_all_typed`` the whole log; one declared
    ``finds_only_with`` is not called on a log without those kinds.

    Raises:
        KeyError: a record of an unknown ``kind``.
        msgspec.ValidationError: a record does not match its kind's Struct.
    """
    live: list[LogRecord] = []
    by_type: dict[type, list[int]] = {}
    for r in decode_log(records) if typed is None else typed:
        cls = type(r)
        if cls is Violated:
            continue
        by_type.setdefault(cls, []).append(len(live))
        live.append(r)
    picks: dict[frozenset[str], list[int]] = {}  # kinds -> their live indices, in log order
    found: list[Violation] = []
    for checker in _CHECKERS:
        needed = kinds_needed(checker)
        if needed is not None and not any(RECORD_TYPES[n] in by_type for n in needed):
            continue  # nothing it judges is in this log: its verdict is [] (finds_only_with)
        kinds = kinds_read(checker)
        if kinds is None:
            found.extend(checker(live))
            continue
        picked = picks.get(kinds)
        if picked is None:
            picked = picks[kinds] = sorted(
                i for kind in kinds for i in by_type.get(RECORD_TYPES[kind], ())
            )
        found.extend(checker([live[i] for i in picked]))
    return found
