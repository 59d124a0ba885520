"""Contract checkers added by the issue-23 audit: rules an outside planted bug broke without
any earlier checker noticing (docs/chaos.md "Contract rules" and "Planted bugs").

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``); each is one pass over the log, O(size of the record) per record.

``initial_delay_skipped`` — KIP-134, ``GroupMetadataManager#prepareRebalance`` /
    ``tryCompleteInitialRebalanceElseSchedule`` (``InitialDelayedJoin``): a join phase begun
    from Empty waits ``group.initial.rebalance.delay.ms`` before it can complete (then again
    while new members keep arriving, up to the rebalance timeout), so its ``generation``
    record (or its leaving PreparingRebalance) comes no sooner than the phase's start plus
    the ``initial_rebalance_delay_ms`` its ``group_state`` record logs. The one way Kafka
    completes such a phase earlier is a removal that leaves every remaining member joined
    (``removePendingMemberAndUpdateClassicGroup``, ``removeMemberAndUpdateClassicGroup``):
    a ``member_removed``/``member_pending_removed`` of the group at the same instant, right
    before. A phase that ends by going Dead (unload) or a reload is not judged. Served logs get
    :data:`~scenarios.check.coordinator_contracts.SERVE_TIMER_SLACK_MS` of slack.
``range_not_copartitioned`` — ``RangeAssignor`` (its class documentation: co-partitioned
    topics): with equal subscriptions every topic has the same consumers in the same order,
    so topics with the same partition count are split alike and partition ``p`` of each goes
    to the same consumer. Judged on the leader's ``consumer_assignor`` records under
    ``range`` while all subscriptions are equal (the same rule as
    :mod:`scenarios.check.consumer_contracts`), with or without ``client.rack``: KIP-881's
    rack matching keeps it (``assignWithRackMatching`` groups topics by members and partition
    count and gives partition ``p`` of a group's topics to one member; the range pass after it
    meets the same quotas and the same unassigned partitions in each of them).
``range_rack_unmatched`` — KIP-881, ``RangeAssignor#assignWithRackMatching``: when some topic
    needs rack-aware assignment (``AbstractPartitionAssignor.useRackAwareAssignment``: a
    member of it has a rack that holds a replica, and the partitions' rack sets differ), a
    first pass gives each topic's members in order (topics with the same members and partition
    count together, partition ``p`` of each to one member) only partitions on their rack — a
    member without a rack matches every partition — up to the member's range quota; the
    ordinary range pass places the rest. So a partition of topic ``T`` held by a member whose
    rack holds none of its replicas was left by that pass, which happens only when every member
    ``m`` that matches it (in every topic grouped with ``T``) had reached its quota: ``m`` holds
    at least ``floor(P / n)`` partitions of ``T`` it matches (``P`` partitions, ``n`` members
    of ``T``). Judged on every ``range`` ``consumer_assignor`` record from its ``inputs`` (each
    member's subscription and rack, decoded from its metadata; each partition's replica racks),
    so on any mix of subscriptions.
``warmup_on_caught_up_client`` — KIP-441, ``TaskMovement#assignActiveTaskMovements``: an
    active task moves (and its destination gets a warm-up) only when the destination is *not*
    caught up on it while some client is, so every entry of the record's ``kafka_warmups``
    (Kafka's warm-up map) names a client whose lag on that task (the record's ``lags``) is
    above ``acceptable.recovery.lag`` (neither −2, a running active, nor within the lag; an
    unbounded lag makes every client caught up and no warm-up exists). Version-probing
    rounds are not judged (as ``active_not_caught_up``).
``scheduled_rejoin_missed`` — KIP-415 (``WorkerCoordinator#onJoinComplete`` → the herder's
    ``scheduledRebalance``: every member of a round with a ``ScheduledDelay`` rejoins when it
    expires) and KIP-441 (``StreamsPartitionAssignor#onAssignment`` →
    ``nextScheduledRebalanceMs``: the client the leader scheduled a probing rebalance on
    rejoins then): a Connect ``assignment`` with ``delay_ms`` D > 0 at t makes its member log
    ``timer_fired`` ``scheduled-rebalance`` at t + D; a Streams ``assignment`` with
    ``next_rebalance_ms`` T > 0 makes it log ``timer_fired`` ``probing-rebalance`` at
    max(t, T) — unless before then the member logs another ``assignment`` (which re-arms or
    cancels the timer), stops, crashes, fails or starts again, or the log ends.
``leader_not_rejoined`` — ``GroupMetadataManager#completeClassicGroupJoin`` /
    ``maybeElectNewJoinedLeader``: the leader of a new generation is a member that rejoined
    in its join phase (a KIP-345 static leader the join completes without hands leadership
    to one that did; with none, the join is rescheduled): a ``generation`` whose
    ``leader_id`` is in its ``not_rejoined`` list.
``member_id_reused`` — ``ClassicGroup#generateMemberId`` (``<client or instance id>-<UUID>``):
    a member id the coordinator hands out is new — never a member id the group's log already
    showed (``member_pending``, ``member_added``, ``member_replaced``, a ``generation``'s or
    ``group_loaded``'s ``member_ids``). A ``member_added`` of a pending id (KIP-394's second
    JoinGroup) is that id's admission, not a new id.
``static_member_left`` — KIP-345 (``AbstractCoordinator#maybeLeaveGroup`` sends LeaveGroup
    only for a dynamic member: a static consumer that closes, or whose poll timer expires,
    stays in the group until its session times out, so a restart within it costs no
    rebalance): in a consumer log (``run_start`` ``app = "consumer"``), a ``leave_group`` of a
    member whose latest ``member_start`` config has ``group.instance.id``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from msgspec import UNSET

from members.assignors.streams.task_movement import is_caught_up
from scenarios.check.consumer_contracts import (
    EqualSubscriptions,
    RoundPartitions,
    consumer_topics,
    member_subscriptions,
    partition_owners,
)
from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS
from scenarios.check.join_phases import PHASE_KINDS, EmptyJoinPhases, group_of
from scenarios.check.log_rules import Violation, reads_all_typed, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog import kinds_streams as ks
from scenarios.eventlog.records import LogRecord

__all__ = [
    "KIP_CONTRACT_INVARIANTS",
    "KIP_CONTRACT_CHECKERS",
    "check_initial_delay",
    "check_range_copartitioned",
    "check_range_rack_matching",
    "check_warmups_not_caught_up",
    "check_scheduled_rejoin",
    "check_static_member_stays",
    "check_leader_rejoined",
    "check_member_ids_fresh",
]

INITIAL_DELAY_SKIPPED = "initial_delay_skipped"
RANGE_NOT_COPARTITIONED = "range_not_copartitioned"
RANGE_RACK_UNMATCHED = "range_rack_unmatched"
WARMUP_ON_CAUGHT_UP_CLIENT = "warmup_on_caught_up_client"
SCHEDULED_REJOIN_MISSED = "scheduled_rejoin_missed"
STATIC_MEMBER_LEFT = "static_member_left"
LEADER_NOT_REJOINED = "leader_not_rejoined"
MEMBER_ID_REUSED = "member_id_reused"

KIP_CONTRACT_INVARIANTS = (
    INITIAL_DELAY_SKIPPED,
    RANGE_NOT_COPARTITIONED,
    RANGE_RACK_UNMATCHED,
    WARMUP_ON_CAUGHT_UP_CLIENT,
    SCHEDULED_REJOIN_MISSED,
    STATIC_MEMBER_LEFT,
    LEADER_NOT_REJOINED,
    MEMBER_ID_REUSED,
)


@reads_typed(*PHASE_KINDS)
def check_initial_delay(records: Sequence[LogRecord]) -> list[Violation]:
    """``initial_delay_skipped``: a join phase begun from Empty ended before its initial
    delay (module docstring)."""
    found: list[Violation] = []
    phases = EmptyJoinPhases()
    for r in records:
        phase = phases.see(r)
        if phase is None:
            continue
        group = group_of(r)
        t = r.t_ms
        begun, delay = phase.begun_ms, phase.delay_ms
        slack = SERVE_TIMER_SLACK_MS if group is not None else 0
        if t + slack < begun + delay and not phases.removed_at(group, t):
            found.append(
                violation_at(
                    INITIAL_DELAY_SKIPPED,
                    f"the join phase begun from Empty at {begun} ms (generation "
                    f"{phase.start.generation}) completed at {t} ms, before "
                    f"group.initial.rebalance.delay.ms {delay} ms had passed, with no "
                    "removal completing it (KIP-134: the first members wait for others)",
                    r,
                    generation=getattr(r, "generation", None),
                    group=group,
                )
            )
    return found


@reads_typed(
    "run_start", "member_start", "subscription_changed", "partitions_added", "consumer_assignor"
)
def check_range_copartitioned(records: Sequence[LogRecord]) -> list[Violation]:
    """``range_not_copartitioned``: a range leader split two topics with the same partition
    count differently (module docstring)."""
    first_topics = consumer_topics(records)
    if not first_topics:
        return []
    equal = EqualSubscriptions(first_topics)
    partitions = RoundPartitions(first_topics)
    found: list[Violation] = []
    for r in records:
        equal.see_record(r)
        partitions.see_record(r)
        if isinstance(r, ku.ConsumerAssignor) and equal.judged() and r.assignor == "range":
            topics = partitions.of_round(r)
            by_count: dict[int, list[str]] = {}
            for topic, count in sorted(topics.items()):
                by_count.setdefault(int(count), []).append(topic)
            co = [names for names in by_count.values() if len(names) > 1]
            if not co:
                continue
            owner: dict[str, str] = {}
            for member_id, parts in r.assigned.items():
                for label in parts:
                    owner[label] = member_id
            what = _split_apart(co, topics, owner)
            if what:
                found.append(
                    violation_at(
                        RANGE_NOT_COPARTITIONED,
                        f"generation {r.generation} (range): {what} (RangeAssignor "
                        "gives the same partitions of co-partitioned topics to one consumer)",
                        r,
                        generation=r.generation,
                    )
                )
    return found


def _split_apart(
    co: Sequence[Sequence[str]], topics: Mapping[str, int], owner: Mapping[str, str]
) -> str:
    for names in co:
        first = names[0]
        for p in range(int(topics[first])):
            expected = owner.get(f"{first}-{p}")
            for other in names[1:]:
                got = owner.get(f"{other}-{p}")
                if expected is not None and got is not None and got != expected:
                    return f"partition {p} of {first} goes to {expected}, of {other} to {got}"
    return ""


class _RangeTopic:
    """One topic of a range round as ``RangeAssignor.TopicAssignmentState`` sees it: its
    members' racks and, when some member has a rack, each partition's replica racks."""

    def __init__(self, replicas: Sequence[Sequence[str | None]], racks: dict[str, str | None]):
        self.count = len(replicas)
        self.racks = racks  # member id -> rack (None: no client.rack)
        member_racks = {r for r in racks.values() if r is not None}
        self.partition_racks: list[frozenset[str]] = (
            [frozenset(x for x in rs if x is not None) for rs in replicas] if member_racks else []
        )
        union: set[str] = set().union(*self.partition_racks) if self.partition_racks else set()
        # AbstractPartitionAssignor.useRackAwareAssignment (written out, not imported from the
        # assignor under judgement): a member rack holds a replica, and the partitions' rack
        # sets are not all the same
        self.needs_rack_aware = not member_racks.isdisjoint(union) and any(
            r != union for r in self.partition_racks
        )
        self.quota = self.count // len(racks) if racks else 0

    def matches(self, member: str, p: int) -> bool:
        rack = self.racks.get(member)
        return rack is None or (p < len(self.partition_racks) and rack in self.partition_racks[p])


def _range_topics(inputs: ku.ConsumerAssignorInputs) -> dict[str, _RangeTopic] | None:
    """The round's topics (``None``: a member's metadata does not decode)."""
    subscribed = member_subscriptions(inputs)
    if subscribed is None:
        return None
    return {
        topic: _RangeTopic(
            replicas, {mid: rack for mid, (rack, ts) in subscribed.items() if topic in ts}
        )
        for topic, replicas in inputs.topics.items()
        if replicas
    }


@reads_typed("consumer_assignor")
def check_range_rack_matching(records: Sequence[LogRecord]) -> list[Violation]:
    """``range_rack_unmatched``: a range leader placed a partition off its replicas' racks
    while a member that could take it on its rack was below its quota (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, ku.ConsumerAssignor) or r.assignor != "range":
            continue
        inputs = r.inputs
        topics = _range_topics(inputs) if isinstance(inputs, ku.ConsumerAssignorInputs) else None
        if not topics or not any(t.needs_rack_aware for t in topics.values()):
            continue
        owner = partition_owners(r.assigned)
        # assignWithRackMatching's groups: the same members (with racks), the same count of
        # partitions with racks
        groups: dict[tuple[frozenset[tuple[str, str | None]], int], list[str]] = {}
        for name, t in topics.items():
            key = (frozenset(t.racks.items()), len(t.partition_racks))
            groups.setdefault(key, []).append(name)
        for names in groups.values():
            for name in names:
                t = topics[name]
                if len(names) == 1 and not t.needs_rack_aware:
                    continue
                what = _rack_unmatched(name, t, [topics[n] for n in names], owner)
                if what:
                    found.append(
                        violation_at(
                            RANGE_RACK_UNMATCHED,
                            f"generation {r.generation} (range, KIP-881): {what}",
                            r,
                            generation=r.generation,
                        )
                    )
    return found


def _rack_unmatched(
    name: str, t: _RangeTopic, group: Sequence[_RangeTopic], owner: Mapping[tuple[str, int], str]
) -> str:
    """The first partition of ``name`` placed off its racks while a member matching it in
    every topic of its group holds fewer than its quota of partitions it matches (or "")."""
    for p in range(t.count):
        holder = owner.get((name, p))
        if holder is None or t.matches(holder, p) or holder not in t.racks:
            continue
        for m in t.racks:
            if not all(s.matches(m, p) for s in group):
                continue
            on_rack = sum(
                1
                for q in range(t.count)
                if owner.get((name, q)) == m and all(s.matches(m, q) for s in group)
            )
            if on_rack < t.quota:
                return (
                    f"{name}-{p} (replicas on {sorted(t.partition_racks[p]) or 'no rack'}) went "
                    f"to {holder} on rack {t.racks[holder]}, while {m} (rack "
                    f"{t.racks[m]}) held {on_rack} matching partitions of {name}, below its "
                    f"quota {t.quota}: the rack-matching pass would have given it {name}-{p}"
                )
    return ""


@reads_typed("streams_assignment")
def check_warmups_not_caught_up(records: Sequence[LogRecord]) -> list[Violation]:
    """``warmup_on_caught_up_client``: a Kafka warm-up on a client already caught up on the
    task (module docstring)."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, ks.StreamsAssignment) or r.version_probing:
            continue
        warmups = {} if r.kafka_warmups is UNSET else r.kafka_warmups
        acceptable = r.acceptable_recovery_lag
        if not warmups or not isinstance(acceptable, int):
            continue
        for client, tasks in sorted(warmups.items()):
            for task in tasks:
                lag = r.lags.get(client, {}).get(task)
                if lag is not None and is_caught_up(lag, acceptable):
                    found.append(
                        violation_at(
                            WARMUP_ON_CAUGHT_UP_CLIENT,
                            f"generation {r.generation} warms {task} up on {client} "
                            f"(lag {lag}, acceptable.recovery.lag {acceptable}): a client "
                            "already caught up takes the active, not a warm-up (KIP-441)",
                            r,
                            task=task,
                            generation=r.generation,
                        )
                    )
    return found


#: records after which a member's scheduled rejoin no longer stands
_SUPERSEDING = (k.Assignment, k.MemberStop, k.MemberCrash, k.MemberFatal, k.MemberStart)
#: the records the rule reads besides their times
_SCHEDULE_TYPES = frozenset({k.TimerFired, *_SUPERSEDING})


def _scheduled(r: k.Assignment) -> tuple[str, int] | None:
    """(timer key, due time) an ``assignment`` arms, or ``None``."""
    t = r.t_ms
    delay = r.delay_ms
    if isinstance(delay, int) and delay > 0:
        return "scheduled-rebalance", t + delay
    at = r.next_rebalance_ms
    if isinstance(at, int) and at > 0 and delay is UNSET:  # a Streams assignment
        return "probing-rebalance", max(t, at)
    return None


@reads_all_typed
def check_scheduled_rejoin(records: Sequence[LogRecord]) -> list[Violation]:
    """``scheduled_rejoin_missed``: a member told to rejoin at a time (KIP-415's delay, KIP-441's
    probing rebalance) did not fire that timer then (module docstring). Reads every record:
    any record logged after the due time shows the timer did not fire then."""
    found: list[Violation] = []
    # member -> (timer key, due ms, the assignment record); a heap of (due, seq, member)
    # finds the overdue ones in log order
    pending: dict[str, tuple[str, int, k.Assignment]] = {}
    due: list[tuple[int, int, str]] = []
    for r in records:
        t = r.t_ms
        while due and due[0][0] < t:
            at, seq, overdue = heapq.heappop(due)
            entry = pending.get(overdue)
            if entry is not None and entry[1] == at and entry[2].seq == seq:
                del pending[overdue]
                key, _, told = entry
                found.append(
                    violation_at(
                        SCHEDULED_REJOIN_MISSED,
                        f"{overdue} was told in generation {told.generation} (at "
                        f"{told.t_ms} ms) to rejoin at {at} ms ({key}), and its timer "
                        f"had not fired by {t} ms",
                        told,
                        member=overdue,
                        generation=told.generation,
                    )
                )
        if type(r) not in _SCHEDULE_TYPES:
            continue  # neither fires a timer nor re-arms or cancels one
        member: str = r.member  # type: ignore[union-attr,assignment]  # each of them has one
        if isinstance(r, k.TimerFired):
            entry = pending.get(member)
            if entry is not None and r.key == entry[0] and t == entry[1]:
                del pending[member]
        else:
            pending.pop(member, None)
            if isinstance(r, k.Assignment):
                armed = _scheduled(r)
                if armed is not None:
                    pending[member] = (armed[0], armed[1], r)
                    heapq.heappush(due, (armed[1], r.seq, member))
    return found


@reads_typed("run_start", "member_start", "leave_group")
def check_static_member_stays(records: Sequence[LogRecord]) -> list[Violation]:
    """``static_member_left``: a static consumer sent LeaveGroup (module docstring)."""
    if consumer_topics(records) is None:
        return []
    static: set[str] = set()
    found: list[Violation] = []
    for r in records:
        match r:
            case k.MemberStart(member=member, config=config):
                if config.group_instance_id is not UNSET:
                    static.add(member)
                else:
                    static.discard(member)
            case k.LeaveGroup(member=member) if member in static:
                found.append(
                    violation_at(
                        STATIC_MEMBER_LEFT,
                        f"{member} (group.instance.id set) sent LeaveGroup ({r.reason}): "
                        "a static member leaves by session timeout only (KIP-345)",
                        r,
                        member=member,
                    )
                )
    return found


@reads_typed("generation")
def check_leader_rejoined(records: Sequence[LogRecord]) -> list[Violation]:
    """``leader_not_rejoined``: a generation led by a member the join completed without."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, k.Generation):
            continue
        leader = r.leader_id
        if leader is not None and r.not_rejoined is not UNSET and leader in r.not_rejoined:
            found.append(
                violation_at(
                    LEADER_NOT_REJOINED,
                    f"generation {r.generation} is led by {leader} ({r.leader}), "
                    "which did not rejoin in its join phase: it gets no JoinGroup answer and "
                    "the members wait for an assignment it never computes "
                    "(maybeElectNewJoinedLeader picks a member that rejoined)",
                    r,
                    generation=r.generation,
                    group=group_of(r),
                )
            )
    return found


#: the records that hand out a member id (record -> its kind)
_HANDED_OUT = {
    kg.MemberPending: "member_pending",
    k.MemberAdded: "member_added",
    k.MemberReplaced: "member_replaced",
}


@reads_typed("generation", "group_loaded", "member_replaced", "member_pending", "member_added")
def check_member_ids_fresh(records: Sequence[LogRecord]) -> list[Violation]:
    """``member_id_reused``: the coordinator handed out a member id the group had seen."""
    found: list[Violation] = []
    seen: set[tuple[str | None, str]] = set()  # (group, member id)
    pending: set[tuple[str | None, str]] = set()
    for r in records:
        group = group_of(r)
        if isinstance(r, k.Generation | k.GroupLoaded):
            seen.update((group, m) for m in r.member_ids)
            continue
        if not isinstance(r, kg.MemberPending | k.MemberAdded | k.MemberReplaced):
            continue
        if isinstance(r, k.MemberReplaced):
            seen.add((group, r.old_member_id))
        kind = _HANDED_OUT[type(r)]
        key = (group, r.member_id)
        if isinstance(r, k.MemberAdded) and key in pending:
            pending.discard(key)
        elif key in seen:
            found.append(
                violation_at(
                    MEMBER_ID_REUSED,
                    f"{r.member} was given member id {key[1]} ({kind}), which the group "
                    "had already used (generateMemberId: a fresh UUID per id)",
                    r,
                    member=r.member,
                    member_id=key[1],
                    group=group,
                )
            )
        elif isinstance(r, kg.MemberPending):
            pending.add(key)
        seen.add(key)
    return found


KIP_CONTRACT_CHECKERS = (
    check_initial_delay,
    check_range_copartitioned,
    check_range_rack_matching,
    check_warmups_not_caught_up,
    check_scheduled_rejoin,
    check_static_member_stays,
    check_leader_rejoined,
    check_member_ids_fresh,
)
