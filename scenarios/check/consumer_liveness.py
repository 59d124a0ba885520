"""Liveness of a plain consumer group, judged at the end of its log, and the bound a chaos run
waits for it (virtual ms).

* ``liveness`` — once the last fault is over (a chaos run's ``settle_ms`` is
  :func:`consumer_bound_for`), every partition of the subscribed topics is owned by exactly
  one running consumer, as ``ConsumerCoordinator`` guarantees after a completed rebalance —
  every partition of a topic some running consumer subscribes to (all topics, until a
  ``subscription_changed`` record says otherwise). When a running consumer's last JoinGroup
  was sent because it refused an assignment outside its subscription, the group is in the
  sticky assignors' livelock :data:`scenarios.check.consumer_known.STICKY_UNSUBSCRIBED_OWNER`:
  the violation is named after it.
  Consumers that stopped, crashed or died of a fatal error (``member_fatal``, e.g.
  ``INCONSISTENT_GROUP_PROTOCOL``) own nothing; when none is running, nothing is judged.
  When every partition owned by nobody is of a topic the leader's last assignment did not
  cover and that only consumers which took a static member's instance over since
  (``member_replaced``) subscribe to, the coordinator did not rebalance for their new
  subscription: the violation is named :data:`scenarios.check.consumer_known.KAFKA_12759`.
  When a running consumer runs the EAGER protocol in a ``cooperative-sticky`` group and each of
  the last :data:`LOOP_ROUNDS` leader rounds made a cooperative consumer revoke and rejoin,
  the group is in :data:`scenarios.check.consumer_known.EAGER_MEMBER_COOPERATIVE_LOOP`.

Input: log records decoded into their Structs (:mod:`scenarios.eventlog.records`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from msgspec import UNSET

from scenarios.check.bounds import liveness_bound_ms
from scenarios.check.consumer_known import (
    EAGER_MEMBER_COOPERATIVE_LOOP,
    KAFKA_12759,
    STICKY_UNSUBSCRIBED_OWNER,
)
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import RECORD_TYPES, LogRecord
from scenarios.input.consumer import LoadedConsumerScenario

#: The rejoin reason of a consumer that refused its assignment (``ConsumerCoordinator``).
_REFUSED = "received assignment does not match the current subscription"
#: The rejoin reason of a cooperative consumer that revoked partitions (KIP-429,
#: ``ConsumerCoordinator#onJoinComplete``).
_REVOKED = "need to revoke partitions and re-join"
#: How many leader rounds in a row, up to the end of the log, must each have made a
#: cooperative consumer revoke and rejoin for an eager member's group to count as looping.
LOOP_ROUNDS = 10

__all__ = [
    "END_STATE_KINDS",
    "ConsumerEndState",
    "consumer_end_state",
    "consumer_liveness",
    "consumer_bound_for",
]


class ConsumerEndState(NamedTuple):
    """Who owns what when the log ends.

    Attributes:
        owned: running consumer → its partitions (``"<topic>-<n>"``), in assignment order.
        running: the consumers started and not stopped, crashed or dead, sorted.
        fatal: consumers that died of a fatal error, in order of death (repeats kept).
        partitions: every partition of a topic a running consumer subscribes to (the run's
            topics from ``run_start``, grown by ``partitions_added``; a consumer's
            ``subscription_changed`` narrows its own).
        end_ms: the last record's time.
        refusing: running consumers whose last JoinGroup followed an assignment outside their
            subscription.
        unknown_to_leader: topics the leader's last assignment did not cover that only
            running consumers which took a static member's instance over since then
            subscribe to (KAFKA-12759), sorted.
        eager_in_cooperative: running consumers whose last assignment came on the EAGER
            protocol in a ``cooperative-sticky`` group, sorted.
        revoking_rounds: how many leader rounds in a row, up to the end, were each followed
            by a cooperative consumer's revoke-and-rejoin.
    """

    owned: dict[str, list[str]]
    running: list[str]
    fatal: list[str]
    partitions: list[str]
    end_ms: int
    refusing: list[str] = []
    unknown_to_leader: list[str] = []
    eager_in_cooperative: list[str] = []
    revoking_rounds: int = 0


#: The record kinds :func:`consumer_end_state` reads (every record's ``t_ms`` aside).
END_STATE_KINDS = frozenset(
    {
        "run_start",
        "partitions_added",
        "member_start",
        "join_group_request",
        "subscription_changed",
        "consumer_assignment",
        "member_stop",
        "member_crash",
        "member_fatal",
        "partitions_revoked",
        "partitions_lost",
        "consumer_assignor",
        "member_replaced",
    }
)

#: Their Structs.
_END_STATE_TYPES = frozenset(RECORD_TYPES[kind] for kind in END_STATE_KINDS)


def consumer_end_state(records: Iterable[LogRecord], end_ms: int | None = None) -> ConsumerEndState:
    """Replay the consumers' own records to the end of the log: ``records`` are typed
    (:data:`scenarios.eventlog.records.LogRecord`), the whole log or only its records of
    :data:`END_STATE_KINDS` (the others change nothing but the time); ``end_ms``: the log's
    last time (virtual ms), by default the last record's."""
    owned: dict[str, list[str]] = {}
    running: set[str] = set()
    fatal: list[str] = []
    topics: dict[str, int] = {}
    subscribed: dict[str, list[str]] = {}
    last_join: dict[str, str] = {}
    round_topics: set[str] | None = None  # the topics of the leader's last assignment
    replaced_since: set[str] = set()  # consumers that took an instance over since that round
    eager: set[str] = set()  # on EAGER in a cooperative-sticky group at their last assignment
    streak = 0  # leader rounds in a row each followed by a cooperative revoke-and-rejoin
    round_revoked = False  # the current round made a cooperative consumer revoke and rejoin
    last_ms = 0
    read = _END_STATE_TYPES
    for r in records:
        last_ms = r.t_ms
        if type(r) not in read:
            continue  # (most records: one set lookup instead of the cases below)
        match r:
            case k.RunStart(topics=dict() as run_topics):
                topics = dict(run_topics)
            case k.RunStart():
                topics = {}
            case ku.PartitionsAdded(topic=topic, partitions=count):
                topics[topic] = count
            case k.MemberStart(member=member):
                running.add(member)
                subscribed[member] = sorted(topics)
            case k.JoinGroupRequest(member=member, reason=reason):
                last_join[member] = reason
                if reason == _REVOKED and not round_revoked:
                    round_revoked = True
                    streak += 1
            case ku.SubscriptionChanged(member=member, topics=wanted):
                subscribed[member] = list(wanted)
            case ku.ConsumerAssignment(member=member, owned=now):
                owned[member] = list(now)
                if r.protocol == "cooperative-sticky" and r.rebalance_protocol == "EAGER":
                    eager.add(member)
                else:
                    eager.discard(member)
            case k.MemberStop(member=member) | k.MemberCrash(member=member):
                owned.pop(member, None)
                running.discard(member)
            case k.MemberFatal(member=member):
                owned.pop(member, None)
                running.discard(member)
                fatal.append(member)
            case (
                ku.PartitionsRevoked(member=member, partitions=parts)
                | ku.PartitionsLost(member=member, partitions=parts)
            ):
                gone = set(parts)
                owned[member] = [p for p in owned.get(member, []) if p not in gone]
            case ku.ConsumerAssignor():
                round_topics = _round_topics(r)
                replaced_since = set()
                if not round_revoked:
                    streak = 0
                round_revoked = False
            case k.MemberReplaced(member=member):
                replaced_since.add(member)
    wanted = sorted({t for m in running for t in subscribed.get(m, sorted(topics))})
    partitions = [f"{t}-{p}" for t in wanted for p in range(topics.get(t, 0))]
    refusing = sorted(m for m in running if last_join.get(m) == _REFUSED)
    unknown = []
    if round_topics is not None:
        for topic in wanted:
            wanting = [m for m in running if topic in subscribed.get(m, sorted(topics))]
            if topic not in round_topics and all(m in replaced_since for m in wanting):
                unknown.append(topic)
    return ConsumerEndState(
        dict(sorted(owned.items())),
        sorted(running),
        fatal,
        partitions,
        last_ms if end_ms is None else end_ms,
        refusing,
        unknown,
        sorted(eager & running),
        streak if round_revoked else 0,  # a last round that revoked nothing ends the loop
    )


def _round_topics(assignor: ku.ConsumerAssignor) -> set[str]:
    """The topics a ``consumer_assignor`` record's round covered: its ``inputs``' topics (the
    group's subscription as the leader read it), else those of the partitions it assigned."""
    if assignor.inputs is not UNSET:
        return set(assignor.inputs.topics)
    return {p.rsplit("-", 1)[0] for parts in assignor.assigned.values() for p in parts}


def consumer_liveness(state: ConsumerEndState) -> list[Violation]:
    """The ``liveness`` violation payload of ``state`` (``[]`` when it holds or no consumer
    runs)."""
    if not state.running:
        return []
    holders: dict[str, list[str]] = {}
    for member, parts in state.owned.items():
        if member in state.running:
            for p in parts:
                holders.setdefault(p, []).append(member)
    missing = [p for p in state.partitions if p not in holders]
    twice = [f"{p} ({', '.join(m)})" for p, m in holders.items() if len(m) > 1]
    problems = []
    if missing:
        problems.append(f"partitions owned by no running consumer: {', '.join(missing[:8])}")
    if twice:
        problems.append(f"partitions owned twice: {', '.join(twice[:8])}")
    if not problems:
        return []
    found = Violation(invariant="liveness", detail=f"at {state.end_ms} ms: " + "; ".join(problems))
    unknown = set(state.unknown_to_leader)
    if missing and not twice and all(p.rsplit("-", 1)[0] in unknown for p in missing):
        found = found.replace(
            detail=found.detail
            + f" (topics {', '.join(sorted(unknown))}: subscribed only by a takeover of a static"
            " member, which rebalanced nothing)",
            known_issue=KAFKA_12759,
        )
    if (
        missing
        and not twice
        and state.eager_in_cooperative
        and state.revoking_rounds >= LOOP_ROUNDS
    ):
        found = found.replace(
            detail=found.detail
            + f" ({', '.join(state.eager_in_cooperative)} on EAGER in a cooperative-sticky group;"
            f" the last {state.revoking_rounds} rounds each made a member revoke and rejoin)",
            members=state.eager_in_cooperative,
            known_issue=EAGER_MEMBER_COOPERATIVE_LOOP,
        )
    if state.refusing:
        found = found.replace(
            detail=found.detail + f" ({', '.join(state.refusing)} refusing assignments)",
            members=state.refusing,
            known_issue=STICKY_UNSUBSCRIBED_OWNER,
        )
    return [found]


def consumer_bound_for(loaded: LoadedConsumerScenario) -> int:
    """How long after its last fault ends a consumer group must own every partition once
    (virtual ms): Connect's formula (:func:`scenarios.check.bounds.liveness_bound_ms`) without
    the scheduled delay or herder work, with the largest ``session.timeout.ms``,
    ``heartbeat.interval.ms`` and ``max.poll.interval.ms`` (the consumer's rebalance timeout)
    of every config the scenario uses."""
    configs = [c.config for c in loaded.consumers]
    configs += [s.config for s in loaded.steps if s.config is not None]
    network = loaded.scenario.network
    return liveness_bound_ms(
        max_delay_ms=0,
        session_timeout_ms=max(c.session_timeout_ms for c in configs),
        rebalance_timeout_ms=max(c.max_poll_interval_ms for c in configs),
        heartbeat_interval_ms=max(c.heartbeat_interval_ms for c in configs),
        initial_rebalance_delay_ms=loaded.coordinator_config.initial_rebalance_delay_ms,
        network_ms=network.latency_ms + network.jitter_ms,
    )
