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

from collections.abc import Iterable, Mapping
from typing import Any

from scenarios.check.consumer_liveness import consumer_end_state, consumer_liveness
from scenarios.check.metrics import step_record_end_ms
from scenarios.check.summary_types import ConsumerDetails, ConsumerSummary

__all__ = ["PartitionDowntime", "consumer_summary", "partition_downtime", "summarize_consumers"]

_GONE = ("member_stop", "member_crash", "member_fatal")


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

    def feed(self, r: Mapping[str, Any]) -> None:
        """Apply one record (in ``seq`` order)."""
        kind = r.get("kind")
        t = int(r.get("t_ms", self.end_ms))
        self.end_ms = t
        if self.start_ms is None:
            self.start_ms = t
        member = str(r.get("member"))
        if kind == "run_start":
            self.partitions = {
                str(topic): [f"{topic}-{p}" for p in range(int(n))]
                for topic, n in (r.get("topics") or {}).items()
            }
        elif kind == "partitions_added":
            topic = str(r["topic"])
            self.partitions[topic] = [f"{topic}-{p}" for p in range(int(r["partitions"]))]
        elif kind == "member_start":
            self._subscribe(member, frozenset(self.partitions), t)
        elif kind == "subscription_changed":
            self._subscribe(member, frozenset(r["topics"]), t)
        elif kind == "consumer_assignment":
            now = set(r["owned"])
            before = self.holding.get(member, set())
            self._release(member, before - now, t)
            for p in now - before:
                self._own(member, p, t)
        elif kind in ("partitions_revoked", "partitions_lost"):
            self._release(member, set(r["partitions"]), t)
        elif kind in _GONE:
            self._release(member, set(self.holding.get(member, ())), t)
            if kind != "member_crash":
                self.subscribed.pop(member, None)
                self._rewant(t)
        elif kind == "step" and r.get("action") != "phase":
            end = step_record_end_ms(r)
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


def partition_downtime(records: Iterable[Mapping[str, Any]]) -> PartitionDowntime:
    """Replay ``records`` (one consumer group's log) to their end (:class:`PartitionDowntime`,
    finished)."""
    replay = PartitionDowntime()
    for r in records:
        replay.feed(r)
    replay.finish()
    return replay


def summarize_consumers(records: list[dict[str, Any]]) -> ConsumerSummary:
    """:func:`consumer_summary` (the name the engine uses: a consumer group run's
    ``RunResult.summary``; ``summary.json`` holds its builtins,
    :func:`scenarios.check.summary_types.summary_dict`)."""
    return consumer_summary(records)


def consumer_summary(records: list[dict[str, Any]]) -> ConsumerSummary:
    """The run's outcome: the last generation's protocol, each live consumer's partitions,
    whether every partition is owned once at the end
    (:func:`scenarios.check.consumer_liveness.consumer_end_state`), the partition downtime and
    the time to converge (the module docstring); a violation's name is its ``known_issue``,
    else its ``invariant``."""
    protocol = rebalance = None
    generations: set[int] = set()
    violations = 0
    names: dict[str, int] = {}
    downtime = PartitionDowntime()
    for r in records:
        downtime.feed(r)
        kind = r.get("kind")
        if kind == "consumer_assignment":
            protocol, rebalance = r["protocol"], r["rebalance_protocol"]
            generations.add(int(r["generation"]))
        elif kind == "violation":
            violations += 1
            name = str(r.get("known_issue") or r.get("invariant"))
            names[name] = names.get(name, 0) + 1
    downtime.finish()
    state = consumer_end_state(records)
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
