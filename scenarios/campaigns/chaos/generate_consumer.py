"""The plain-consumer chaos generator (``groupsim chaos --kind consumer``): from ``(campaign
seed, run index)`` alone — one ``random.Random`` seeded with
``"groupsim-chaos-consumer/<seed>/<index>"``, the ``delay_request`` faults, static
membership, the zombie fault and the other additions each from a stream of their own — a
consumer group and a timeline of faults, as a :class:`ChaosSpec` whose ``consumer`` holds
the scenario file's body (docs/consumer.md, docs/chaos.md "Consumer campaigns").

Drawn per run:

- 1–3 topics of 1–12 partitions (every consumer subscribes to all);
- the group's ``partition.assignment.strategy``: one of :data:`STRATEGY_LISTS` (eager
  ``range``/``roundrobin``/``sticky``, KIP-429's ``cooperative-sticky``, and the lists of a
  KIP-429 upgrade: ``[range, cooperative-sticky]`` and ``[cooperative-sticky, range]``); a
  quarter of the consumers list another one that shares an assignor with it (an assignor mix:
  the vote picks the protocol, eager and cooperative members share a group);
- KIP-345 static members (``group.instance.id``, mostly with a longer
  ``session.timeout.ms``) in two runs of five, from their own stream
  (:func:`.timeline.draw_static_members`, as Streams campaigns do);
- consumers joining late (a quarter, never the first);
- KIP-881 racks in half the runs, from a stream of their own (:func:`_draw_racks`):
  ``client.rack`` for most consumers (some have none) and every partition's replica racks,
  among them a rack no consumer is on and brokers without ``broker.rack``;
- faults of the shared model (:class:`.timeline.MemberTimeline`): ``crash``, ``leave``,
  ``partition``, ``loss``, ``latency``, ``failover``, ``delay``, ``slow`` (the poll loop
  stalls; past ``max.poll.interval.ms`` the consumer leaves the group, KIP-62) and ``config``
  (a restart with another ``partition.assignment.strategy``: the next step of a KIP-429
  upgrade or downgrade, or a list that shares nothing with the group, which Kafka answers
  ``INCONSISTENT_GROUP_PROTOCOL``), and, from a stream of their own, subscription changes
  (``subscribe`` steps, also counted as ``config``), and with ``crash`` a whole-group outage
  in one run of six (:func:`_add_outage`: every consumer closes and restarts at once, after
  the other steps), and ``zombie`` (a static consumer cut off or stalled while a second
  process with its ``group.instance.id`` joins: :func:`.timeline.add_zombie`, the Streams
  campaigns' fault, from a stream of its own drawn after every other; in runs it gave no
  twin, the SyncGroup variants of :func:`.timeline.add_sync_zombie`, held then parked, each
  from a stream of its own).
"""

from __future__ import annotations

import random
from typing import Any

from scenarios.campaigns.chaos.coordinator_draw import draw_for_members
from scenarios.campaigns.chaos.generate import (
    ChaosConfig,
    ChaosSpec,
    _add_delays,
    _rng,
    draw_faults,
)
from scenarios.campaigns.chaos.render import step_end
from scenarios.campaigns.chaos.timeline import (
    MemberTimeline,
    add_sync_zombie,
    add_zombie,
    draw_static_members,
    timeline_spec,
)

__all__ = ["generate_consumer", "CONSUMER_MAX_POLL_MS", "STRATEGY_LISTS"]

#: ``max.poll.interval.ms`` of generated consumers (Kafka's default is 300000; a shorter one
#: lets a poll-loop stall outlast it within a short run).
CONSUMER_MAX_POLL_MS = 60_000

#: The ``partition.assignment.strategy`` lists a run draws from.
STRATEGY_LISTS: tuple[tuple[str, ...], ...] = (
    ("range",),
    ("roundrobin",),
    ("sticky",),
    ("cooperative-sticky",),
    ("range", "cooperative-sticky"),
    ("cooperative-sticky", "range"),
)

#: A ``config`` fault's next list: the KIP-429 upgrade path forwards and backwards.
_NEXT = {
    ("range",): (("range", "cooperative-sticky"),),
    ("roundrobin",): (("roundrobin", "cooperative-sticky"),),
    ("sticky",): (("sticky", "cooperative-sticky"),),
    ("cooperative-sticky",): (("range", "cooperative-sticky"), ("cooperative-sticky", "range")),
    ("range", "cooperative-sticky"): (("cooperative-sticky",), ("range",)),
    ("cooperative-sticky", "range"): (("cooperative-sticky",), ("range",)),
    ("roundrobin", "cooperative-sticky"): (("cooperative-sticky",), ("roundrobin",)),
    ("sticky", "cooperative-sticky"): (("cooperative-sticky",), ("sticky",)),
}


def _mix_for(base: tuple[str, ...], rng: random.Random) -> tuple[str, ...]:
    """Another list that shares an assignor with ``base`` (so the member may join)."""
    shared = [s for s in STRATEGY_LISTS if s != base and set(s) & set(base)]
    return rng.choice(shared) if shared else base


class _ConsumerTimeline(MemberTimeline):
    """The shared timeline with the consumer's ``config`` fault: a restart with the next
    ``partition.assignment.strategy`` of a KIP-429 upgrade or downgrade (one in ten: any list,
    which may share nothing with the group)."""

    def __init__(
        self, rng: random.Random, names: list[str], strategies: dict[str, tuple[str, ...]]
    ) -> None:
        super().__init__(rng, names, key="member", max_poll_ms=CONSUMER_MAX_POLL_MS)
        self.strategies = strategies

    def config_change(self, step: dict[str, Any], member: str) -> None:
        current = self.strategies[member]
        if self.rng.random() < 0.1:
            target = self.rng.choice(STRATEGY_LISTS)
        else:
            target = self.rng.choice(_NEXT[current])
        self.strategies[member] = target
        step["config"] = {"partition.assignment.strategy": list(target)}


#: A rolling change's target: the same assignor(s) in another order of preference, or one more
#: in front (so the vote changes once enough members rejoined, while they still list the
#: protocol the group runs: KIP-345's static rejoin must then rebalance).
_ROLL = {
    ("range",): ("cooperative-sticky", "range"),
    ("roundrobin",): ("cooperative-sticky", "roundrobin"),
    ("sticky",): ("cooperative-sticky", "sticky"),
    ("cooperative-sticky",): ("range", "cooperative-sticky"),
    ("range", "cooperative-sticky"): ("cooperative-sticky", "range"),
    ("cooperative-sticky", "range"): ("range", "cooperative-sticky"),
}


def _down(gen: MemberTimeline, member: str, at_ms: int, until_ms: int) -> bool:
    """Whether ``member`` is stopped (or gone) at some time in ``[at_ms, until_ms]`` by the
    steps drawn so far (a ``restart``'s ``down_ms``, a permanent ``leave``/``crash``, a late
    ``join``)."""
    for step in gen.steps:
        if step.get(gen.key) != member:
            continue
        start = int(step["at_ms"])
        action = step["action"]
        if action == "restart" and start <= until_ms and at_ms <= start + int(step["down_ms"]):
            return True
        if action in ("leave", "crash") and start <= until_ms:
            return True
        if action == "join" and start >= at_ms:
            return True
    return False


def _add_rolling_change(
    gen: MemberTimeline,
    consumers: list[dict[str, Any]],
    base: tuple[str, ...],
    config: ChaosConfig,
    rng: random.Random,
) -> None:
    """A rolling change of ``partition.assignment.strategy`` under static membership (the
    operator's rolling restart with a new list: Kubernetes restarts pod after pod), from its
    own generator (``.../<index>/consumer-roll``) so every other draw of a run is unchanged:
    in half the runs with a static member, from a random time every running consumer in file
    order restarts (down 0–10 s, within any session timeout, so a static one rejoins under its
    ``group.instance.id``) with :data:`_ROLL`'s list for the group's base list, 20–60 s apart.
    Counted as ``config`` faults. A consumer stopped around its turn is skipped."""
    if not any("group.instance.id" in c.get("config", {}) for c in consumers):
        return
    if rng.random() >= 0.5:
        return
    target = list(_ROLL[base])
    at_ms = rng.randrange(config.duration_ms)
    for entry in consumers:
        name = entry["name"]
        down = rng.choice((0, rng.randint(1, 10_000)))
        if at_ms < config.duration_ms and not _down(gen, name, at_ms - 1, at_ms + down):
            step = {**gen.step(at_ms, "restart", name), "down_ms": down, "clean": False}
            step["config"] = {"partition.assignment.strategy": target}
            gen.add("config", step)
        at_ms += rng.randint(20_000, 60_000)


def _add_subscriptions(
    gen: MemberTimeline, topics: list[str], config: ChaosConfig, rng: random.Random
) -> None:
    """Subscription changes (``subscribe`` steps, counted as ``config`` faults), from their own
    generator (``.../<index>/subscribe``) so every other draw of a run is unchanged: in half
    the runs with two topics or more, 1–3 consumers running at a random time subscribe to a
    random non-empty subset of the topics (all of them again, one time in three)."""
    if len(topics) < 2 or rng.random() < 0.5:
        return
    for _ in range(rng.randint(1, 3)):
        at_ms = rng.randrange(config.duration_ms)
        running = gen.running(at_ms)
        if not running:
            continue
        if rng.random() < 1 / 3:
            chosen = list(topics)
        else:
            chosen = sorted(rng.sample(topics, rng.randint(1, len(topics) - 1)))
        step = {**gen.step(at_ms, "subscribe", rng.choice(running)), "topics": chosen}
        gen.add("config", step)


def _add_partitions(
    gen: MemberTimeline,
    consumers: list[dict[str, Any]],
    topics: dict[str, int],
    partition_racks: dict[str, list[list[str]]],
    config: ChaosConfig,
    rng: random.Random,
) -> None:
    """Topics growing during the run (``add_partitions`` steps, counted as ``config`` faults:
    an operator's ``kafka-topics --alter --partitions``), from their own generator
    (``.../<index>/consumer-partitions``) so every other draw of a run is unchanged: in a third
    of the runs without static members, 1–2 times a random topic grows by 1–4 partitions (each
    new one on the replica racks of one of the topic's partitions, when the run has racks).
    Every consumer's metadata sees it; the leader, whose assignment no longer matches the
    metadata, rejoins (``ConsumerCoordinator#rejoinNeededOrPending``). Not with static members:
    a static leader that restarts after partitions were added while it was down is told to
    skip the assignment (KIP-814) and takes the new metadata as its snapshot, so the new
    partitions stay unassigned until something else rebalances — Kafka's behaviour, which
    the end-of-run liveness rule would report (docs/chaos.md "Topic metadata")."""
    if any("group.instance.id" in c.get("config", {}) for c in consumers):
        return
    if rng.random() >= 1 / 3:
        return
    counts = dict(topics)
    for at_ms in sorted(rng.randrange(config.duration_ms) for _ in range(rng.randint(1, 2))):
        topic = rng.choice(sorted(counts))
        grown = rng.randint(1, 4)
        step: dict[str, Any] = {
            "at_ms": at_ms,
            "action": "add_partitions",
            "topic": topic,
            "count": counts[topic] + grown,
        }
        if partition_racks:
            step["racks"] = [list(rng.choice(partition_racks[topic])) for _ in range(grown)]
        counts[topic] += grown
        gen.add("config", step)


#: Racks consumers may sit on; replicas may also sit on :data:`_BROKER_ONLY_RACK`.
_CONSUMER_RACKS = ("ra", "rb", "rc")
#: A rack with brokers and no consumer (a partition whose replicas are all there has no
#: same-rack consumer).
_BROKER_ONLY_RACK = "rz"


def _draw_racks(
    rng: random.Random, consumers: list[dict[str, Any]], topics: dict[str, int]
) -> dict[str, list[list[str]]]:
    """KIP-881 racks, from a stream of their own (``.../<index>/consumer-racks``) so every
    other draw of a run is unchanged: in half the runs, each consumer sets ``client.rack`` (one
    of 2–3 racks) with probability 3/4, and every partition gets 1–3 replicas (the run's
    replication factor) on distinct racks among those and one no consumer is on, or — one
    partition in ten — replicas on brokers without ``broker.rack``. Returns the scenario's
    ``[partition_racks]`` (empty: no racks this run)."""
    if rng.random() >= 0.5:
        return {}
    racks = list(_CONSUMER_RACKS[: rng.randint(2, 3)])
    for entry in consumers:
        if rng.random() < 0.75:
            entry.setdefault("config", {})["client.rack"] = rng.choice(racks)
    pool = [*racks, _BROKER_ONLY_RACK]
    replication = rng.randint(1, 3)
    return {
        topic: [
            [] if rng.random() < 0.1 else sorted(rng.sample(pool, replication))
            for _ in range(count)
        ]
        for topic, count in topics.items()
    }


def _add_outage(gen: _ConsumerTimeline, config: ChaosConfig, rng: random.Random) -> None:
    """A whole-group outage (a deployment that stops every consumer before starting the new
    ones), drawn from its own generator (``.../<index>/consumer-outage``, so the other draws
    stay as they were): in one run of six, after every other step has ended, each running
    consumer restarts cleanly (closes, then starts again) at the same moment, down 5-30 s.
    Dynamic members leave the group as they close, so it empties and the coordinator ends
    its join phase with no members (``completeClassicGroupJoin`` → Empty, with a generation
    of its own) — a path no other fault reaches; static members stay until their sessions
    end."""
    if rng.random() >= 1 / 6:
        return
    after = max((step_end(s) for s in gen.steps), default=0) + rng.randint(1_000, 10_000)
    down = rng.randint(5_000, 30_000)
    if after + down >= config.duration_ms:
        return
    for member in gen.running(after):
        gen.up_at[member] = after + down
        gen.add("crash", {**gen.step(after, "restart", member), "down_ms": down, "clean": True})


#: The share of runs with ``slow`` faults that draw a long-poll straggler (:func:`_add_straggler`).
STRAGGLER_SHARE = 0.25


def _add_straggler(
    gen: MemberTimeline,
    consumers: list[dict[str, Any]],
    config: ChaosConfig,
    rng: random.Random,
) -> None:
    """A long-poll straggler (a consumer whose records take long to process, given a longer
    ``max.poll.interval.ms`` than the group's, busy when another member's change starts a
    rebalance), from its own generator (``.../<index>/consumer-straggler``) so every other draw
    of a run is unchanged: in :data:`STRAGGLER_SHARE` of the runs one consumer gets a
    ``max.poll.interval.ms`` of 120–240 s (its rebalance timeout; the others keep
    :data:`CONSUMER_MAX_POLL_MS`), and at a random time its poll loop stalls (a ``slow`` step)
    for longer than the others' rebalance timeout and shorter than its own, and 1–10 s later
    another running consumer restarts cleanly (a ``crash`` fault: it leaves, the group
    rebalances). The coordinator's join phase then waits for the straggler, whose JoinGroup
    leaves when its poll loop runs again: ``ClassicGroup#rebalanceTimeoutMs`` is the members'
    largest (KIP-62), which a group whose members all have one timeout cannot tell from any
    other. Skipped when the straggler or the other consumer is stopped around that time."""
    if rng.random() >= STRAGGLER_SHARE or len(consumers) < 2:
        return
    straggler = rng.choice(consumers)
    name = straggler["name"]
    max_poll = rng.randint(120_000, 240_000)
    straggler.setdefault("config", {})["max.poll.interval.ms"] = max_poll
    stall = rng.randint(CONSUMER_MAX_POLL_MS + 10_000, max_poll - 10_000)
    at_ms = rng.randrange(config.duration_ms)
    trigger_ms = at_ms + rng.randint(1_000, 10_000)
    down = rng.randint(0, 5_000)
    others = [m for m in gen.running(at_ms) if m != name]
    if not others or trigger_ms + max_poll >= config.duration_ms:
        return
    other = rng.choice(others)
    if _down(gen, name, at_ms - 1, at_ms + stall) or _down(
        gen, other, trigger_ms - 1, trigger_ms + down
    ):
        return
    gen.add("slow", {**gen.step(at_ms, "slow", name), "stall_ms": stall})
    step = {**gen.step(trigger_ms, "restart", other), "down_ms": down, "clean": True}
    gen.add("crash", step)


def generate_consumer(config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
    """The consumer chaos scenario of run ``index`` of campaign ``campaign_seed``
    (deterministic: the same arguments give the same spec)."""
    rng = random.Random(f"groupsim-chaos-consumer/{campaign_seed}/{index}")
    n = rng.randint(*config.members)
    names = [f"c{i}" for i in range(1, n + 1)]
    topics = {f"t{i}": rng.randint(1, 12) for i in range(1, rng.randint(1, 3) + 1)}
    base = rng.choice(STRATEGY_LISTS)
    group_config: dict[str, Any] = {
        "partition.assignment.strategy": list(base),
        "max.poll.interval.ms": CONSUMER_MAX_POLL_MS,
    }
    consumers: list[dict[str, Any]] = []
    strategies: dict[str, tuple[str, ...]] = {}
    late: list[str] = []
    for i, name in enumerate(names):
        entry: dict[str, Any] = {"name": name}
        own = base
        if rng.random() < 0.25:
            own = _mix_for(base, rng)
            entry["config"] = {"partition.assignment.strategy": list(own)}
        strategies[name] = own
        if i > 0 and rng.random() < 0.25:
            entry["autostart"] = False
            late.append(name)
        consumers.append(entry)

    draw_static_members(_rng(campaign_seed, index, "consumer-static"), consumers)
    partition_racks = _draw_racks(_rng(campaign_seed, index, "consumer-racks"), consumers, topics)

    gen = _ConsumerTimeline(rng, names, strategies)
    for name in late:
        gen.join(name, rng.randrange(config.duration_ms))
    times = draw_faults(gen, config, rng)
    if "config" in config.faults:
        _add_subscriptions(gen, sorted(topics), config, _rng(campaign_seed, index, "subscribe"))
        _add_partitions(
            gen,
            consumers,
            topics,
            partition_racks,
            config,
            _rng(campaign_seed, index, "consumer-partitions"),
        )
        _add_rolling_change(
            gen, consumers, base, config, _rng(campaign_seed, index, "consumer-roll")
        )
    if "delay" in config.faults:
        _add_delays(gen, config, _rng(campaign_seed, index, "consumer-delay"), times)
    if "slow" in config.faults and "crash" in config.faults:
        _add_straggler(gen, consumers, config, _rng(campaign_seed, index, "consumer-straggler"))
    if "crash" in config.faults:
        _add_outage(gen, config, _rng(campaign_seed, index, "consumer-outage"))
    if "zombie" in config.faults:  # last: every draw above is the one of a run without it
        add_zombie(gen, consumers, config, _rng(campaign_seed, index, "consumer-zombie"))
        if len(consumers) == n:  # no twin: perhaps the SyncGroup variant (its own stream)
            sync_rng = _rng(campaign_seed, index, "consumer-zombie-sync")
            add_sync_zombie(gen, consumers, sorted(topics), config, sync_rng)
        if len(consumers) == n:  # still none: perhaps the parked one (its own stream too)
            parked_rng = _rng(campaign_seed, index, "consumer-zombie-parked")
            add_sync_zombie(gen, consumers, sorted(topics), config, parked_rng, parked=True)
    coordinator = draw_for_members(
        _rng(campaign_seed, index, "consumer-coordinator"), consumers, gen.gone, 45_000
    )
    drawn = f"{n} consumers ({'+'.join(base)}), {sum(topics.values())} partitions"
    body: dict[str, Any] = {"topics": topics, "config": group_config, "consumers": consumers}
    if partition_racks:
        body["partition_racks"] = partition_racks
        drawn += ", racks"
    return timeline_spec(
        gen,
        config,
        campaign_seed,
        index,
        "consumer",
        "+".join(base),
        n,
        drawn,
        consumer=body,
        coordinator=coordinator,
    )
