"""A plain consumer group's run summary (``summary["consumer"]``; docs/consumer.md), with its
partition downtime and time to converge measured from the consumers' own records.

All times are virtual milliseconds. Definitions (record kinds from ``docs/event-log.md``,
"Consumer groups"):

- **owner** of a partition: a consumer that holds it, from the ``consumer_assignment`` whose
  ``owned`` lists it (``ConsumerCoordinator.onJoinComplete``) until a ``partitions_revoked``
  or ``partitions_lost`` of it (``onPartitionsRevoked`` / ``onPartitionsLost``), or the
  consumer's ``member_stop``, ``member_crash`` or ``member_fatal``. A consumer whose poll
  loop is stalled (``poll_stall``) still owns its partitions until one of those records.
- **wanted** partition: one of a topic (``run_start.topics``, grown by ``partitions_added``)
  that some consumer subscribes
  to: every topic from its ``member_start``, the topics of its last ``subscription_changed``,
  until its ``member_stop`` or ``member_fatal`` (a crashed consumer still wants its topics:
  it comes back, or the group reassigns its partitions).
- **partition downtime**: the time a wanted partition that has had an owner has none (from
  its revocation or loss until it is assigned again), per partition; the time before a
  partition's first owner is not counted (the group's first rebalance), nor the time a
  partition is not wanted.
- **time to converge**: from the end of the last non-phase ``step``
  (:func:`scenarios.check.metrics.step_end_ms`; else the run start) to the last change of
  any partition's owners, at least 0; ``None`` when the run did not converge (the end-state
  liveness rule, :func:`scenarios.check.consumer_liveness.consumer_liveness`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scenarios.check.consumer_liveness import (
    END_STATE_KINDS,
    consumer_end_state,
    consumer_liveness,
)
from scenarios.check.metrics import step_end_ms
from scenarios.check.summary_types import ConsumerDetails, ConsumerSummary
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog.records import RECORD_TYPES, LogRecord, decode_kinds

__all__ = [
    "DOWNTIME_KINDS",
    "PartitionDowntime",
    "consumer_summary",
    "partition_downtime",
    "summarize_consumers",
]

#: The record kinds :meth:`PartitionDowntime.feed` reads (every record's ``t_ms`` aside).
DOWNTIME_KINDS = frozenset(
    {
        "run_start",
        "partitions_added",
        "member_start",
        "subscription_changed",
        "consumer_assignment",
        "partitions_revoked",
        "partitions_lost",
        "member_stop",
        "member_crash",
        "member_fatal",
        "step",
    }
)
_DOWNTIME_TYPES = frozenset(RECORD_TYPES[kind] for kind in DOWNTIME_KINDS)
#: What :func:`consumer_summary` decodes: its own kinds and those of the end state.
_SUMMARY_KINDS = DOWNTIME_KINDS | END_STATE_KINDS | {"violation"}


class PartitionDowntime:
    """Partition ownership replayed record by record (see the module docstring).

    After :meth:`finish`: ``down_ms`` (partition → its downtime, for every partition that
    ever had an owner, in first-owned order), ``longest_gap_ms`` (the longest single stretch
    any partition spent without an owner: ``groupsim compat --kind consumer``'s figure),
    ``last_change_ms`` (the last change of any partition's owners, or ``None``) and
    ``last_step_end_ms`` (the latest end of a non-phase step, or ``None``).
    """

    def __init__(self) -> None:
        self.partitions: dict[str, list[str]] = {}  # topic -> its partition labels
        self.subscribed: dict[str, frozenset[str]] = {}  # member -> topics it wants
        self.wanted: frozenset[str] = frozenset()
        self.owners: dict[str, set[str]] = {}  # partition -> owning members
        self.holding: dict[str, set[str]] = {}  # member -> partitions it owns
        self.down_since: dict[str, int] = {}  # partition -> start of its current downtime
        self.down_ms: dict[str, int] = {}  # ever-owned partition -> downtime so far
        self.longest_gap_ms = 0
        self.last_change_ms: int | None = None
        self.last_step_end_ms: int | None = None
        self.start_ms: int | None = None
        self.end_ms = 0

    def feed(self, r: LogRecord) -> None:
        """Apply one typed record (:data:`scenarios.eventlog.records.LogRecord`, in ``seq``
        order); a record of a kind outside :data:`DOWNTIME_KINDS` only moves the time."""
        t = r.t_ms
        self.end_ms = t
        if self.start_ms is None:
            self.start_ms = t
        if type(r) not in _DOWNTIME_TYPES:
            return  # (most records: one set lookup instead of the cases below)
        match r:
            case k.RunStart(topics=dict() as topics):
                self.partitions = {
                    topic: [f"{topic}-{p}" for p in range(n)] for topic, n in topics.items()
                }
            case k.RunStart():
                self.partitions = {}
            case ku.PartitionsAdded(topic=topic, partitions=n):
                self.partitions[topic] = [f"{topic}-{p}" for p in range(n)]
            case k.MemberStart(member=member):
                self._subscribe(member, frozenset(self.partitions), t)
            case ku.SubscriptionChanged(member=member, topics=topics_wanted):
                self._subscribe(member, frozenset(topics_wanted), t)
            case ku.ConsumerAssignment(member=member, owned=owned):
                now = set(owned)
                before = self.holding.get(member, set())
                self._release(member, before - now, t)
                for p in now - before:
                    self._own(member, p, t)
            case (
                ku.PartitionsRevoked(member=member, partitions=parts)
                | ku.PartitionsLost(member=member, partitions=parts)
            ):
                self._release(member, set(parts), t)
            case k.MemberCrash(member=member):
                self._release(member, set(self.holding.get(member, ())), t)
            case k.MemberStop(member=member) | k.MemberFatal(member=member):
                self._release(member, set(self.holding.get(member, ())), t)
                self.subscribed.pop(member, None)
                self._rewant(t)
            case k.Step(action=action) if action != "phase":
                end = step_end_ms(r)
                self.last_step_end_ms = max(end, self.last_step_end_ms or end)

    def finish(self, end_ms: int | None = None) -> None:
        """Close every open downtime at ``end_ms`` (default: the last record's time)."""
        end = self.end_ms if end_ms is None else end_ms
        for p, since in self.down_since.items():
            self._count(p, max(0, end - since))
        self.down_since = {p: end for p in self.down_since}

    # ------------------------------------------------------------------ changes

    def _own(self, member: str, p: str, t: int) -> None:
        self.holding.setdefault(member, set()).add(p)
        self.owners.setdefault(p, set()).add(member)
        self.down_ms.setdefault(p, 0)
        self._settle(p, t)
        self.last_change_ms = t

    def _release(self, member: str, parts: Iterable[str], t: int) -> None:
        held = self.holding.get(member, set())
        for p in sorted(parts):
            if p not in held:
                continue
            held.discard(p)
            self.owners[p].discard(member)
            self._settle(p, t)
            self.last_change_ms = t

    def _subscribe(self, member: str, topics: frozenset[str], t: int) -> None:
        self.subscribed[member] = topics
        self._rewant(t)

    def _rewant(self, t: int) -> None:
        wanted = frozenset().union(*self.subscribed.values()) if self.subscribed else frozenset()
        changed = wanted ^ self.wanted
        self.wanted = wanted
        for topic in sorted(changed):
            for p in self.partitions.get(topic, ()):
                self._settle(p, t)

    def _settle(self, p: str, t: int) -> None:
        """Open or close ``p``'s downtime at ``t`` to match its owners and wantedness."""
        down = p in self.down_ms and not self.owners.get(p) and p.rpartition("-")[0] in self.wanted
        since = self.down_since.get(p)
        if down and since is None:
            self.down_since[p] = t
        elif not down and since is not None:
            self._count(p, t - since)
            del self.down_since[p]

    def _count(self, p: str, gap_ms: int) -> None:
        self.down_ms[p] += gap_ms
        self.longest_gap_ms = max(self.longest_gap_ms, gap_ms)


def partition_downtime(records: Sequence[Mapping[str, Any]]) -> PartitionDowntime:
    """Replay ``records`` (one consumer group's log, record dicts in ``seq`` order) to their
    end (:class:`PartitionDowntime`, finished): only the records of :data:`DOWNTIME_KINDS`
    are decoded (into their Structs), the first and last records give the times.

    Raises:
        msgspec.ValidationError: a record of those kinds does not match its Struct.
    """
    return _replayed(records, list(decode_kinds(records, DOWNTIME_KINDS)))


def _replayed(
    records: Sequence[Mapping[str, Any]], typed: Iterable[LogRecord]
) -> PartitionDowntime:
    """:class:`PartitionDowntime` fed ``typed`` (``records``' records of at least
    :data:`DOWNTIME_KINDS`, decoded) and finished at the last of ``records``."""
    replay = PartitionDowntime()
    if records:
        replay.start_ms = int(records[0]["t_ms"])
    for r in typed:
        replay.feed(r)
    if records:
        replay.end_ms = int(records[-1]["t_ms"])
    replay.finish()
    return replay


def summarize_consumers(
    records: Sequence[Mapping[str, Any]], typed: Sequence[LogRecord] | None = None
) -> ConsumerSummary:
    """:func:`consumer_summary` (the name the engine uses: a consumer group run's
    ``RunResult.summary``; ``summary.json`` holds its builtins,
    :func:`scenarios.check.summary_types.summary_dict`)."""
    return consumer_summary(records, typed)


def consumer_summary(
    records: Sequence[Mapping[str, Any]], typed: Sequence[LogRecord] | None = None
) -> ConsumerSummary:
    """The run's outcome from its log (record dicts in ``seq`` order): the last generation's
    protocol, each live consumer's partitions, whether every partition is owned once at the
    end (:func:`scenarios.check.consumer_liveness.consumer_end_state`), the partition
    downtime and the time to converge (the module docstring); a violation's name is its
    ``known_issue``, else its ``invariant``. ``typed``: ``records`` decoded
    (:func:`scenarios.eventlog.records.decode_log`), when the caller has them; else only the
    records of the kinds these read are decoded (into their Structs, once).

    Raises:
        msgspec.ValidationError: a record of those kinds does not match its Struct.
    """
    protocol = rebalance = None
    generations: set[int] = set()
    violations = 0
    names: dict[str, int] = {}
    if typed is None:
        typed = list(decode_kinds(records, _SUMMARY_KINDS))
    downtime = _replayed(records, typed)
    for r in typed:
        match r:
            case ku.ConsumerAssignment():
                protocol, rebalance = r.protocol, r.rebalance_protocol
                generations.add(r.generation)
            case k.Violation():
                violations += 1
                name = r.known_issue or r.invariant
                names[name] = names.get(name, 0) + 1
    end_ms = int(records[-1]["t_ms"]) if records else 0
    state = consumer_end_state(typed, end_ms)
    converged = not consumer_liveness(state)
    time_to_converge: int | None = None
    if converged:
        since = downtime.last_step_end_ms
        if since is None:
            since = downtime.start_ms or 0
        change = downtime.last_change_ms if downtime.last_change_ms is not None else since
        time_to_converge = max(0, change - since)
    down = downtime.down_ms.values()
    return ConsumerSummary(
        converged=converged,
        consumer=ConsumerDetails(
            generations=len(generations),
            final_protocol=protocol,
            final_rebalance_protocol=rebalance,
            owned=state.owned,
            fatal=state.fatal,
            violations=violations,
            violation_names=dict(sorted(names.items())),
            partition_downtime_ms_total=sum(down),
            partition_downtime_ms_max=max(down, default=0),
            time_to_converge_ms=time_to_converge,
        ),
    )
